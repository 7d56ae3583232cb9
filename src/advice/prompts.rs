//! Prompt templates (`prompts/*.md`) and answer schemas (`prompts/schemas/*.json`), embedded at build time.
//!
//! Rendering is one pass over the template: each `{{name}}` is replaced by its value and the value is never
//! scanned again, so placeholders inside the user's code (e.g. `{{snippet}}` in a Jinja template) stay literal.

use std::sync::LazyLock;

use serde_json::Value;

use crate::llm::OutputSchema;

macro_rules! tasks {
    ($($task:ident => $template:literal, answer: $schema:literal, strict: $strict:literal,
        tokens: $budget:expr;)+) => {
        /// One LLM task: its template and the schema of its answer.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Task {
            $($task),+
        }

        impl Task {
            /// Every task, in registry order.
            pub const ALL: &[Task] = &[$(Task::$task),+];

            /// What the answer can need, in output tokens (see [`AnswerBudget`]).
            pub fn budget(self) -> AnswerBudget {
                match self {
                    $(Task::$task => $budget,)+
                }
            }

            pub fn template(self) -> &'static str {
                match self {
                    $(Task::$task => include_str!(concat!(
                        env!("CARGO_MANIFEST_DIR"),
                        "/prompts/",
                        $template,
                        ".md"
                    )),)+
                }
            }

            /// The answer schema, sent to the provider and used to validate the answer.
            pub fn schema(self) -> &'static OutputSchema {
                match self {
                    $(Task::$task => {
                        static SCHEMA: LazyLock<OutputSchema> = LazyLock::new(|| {
                            schema(
                                $schema,
                                include_str!(concat!(
                                    env!("CARGO_MANIFEST_DIR"),
                                    "/prompts/schemas/",
                                    $schema,
                                    ".json"
                                )),
                                $strict,
                            )
                        });
                        &SCHEMA
                    })+
                }
            }
        }
    };
}

// The registry: one line per task, naming its template (`prompts/<template>.md`), the schema of its answer
// (`prompts/schemas/<schema>.json`, whose name is also the one the provider is given) and the output tokens
// the answer can need. Adding a prompt = its two files and one line here.
tasks! {
    // A score and its explanation (at most 2,000 characters, ~500 tokens).
    ScorePerformance => "score_performance", answer: "score", strict: true, tokens: Fixed(600);
    ScoreReliability => "score_reliability", answer: "score", strict: true, tokens: Fixed(600);
    // The function rewritten, and an explanation of at most 2,000 characters.
    SuggestPerformance => "suggest_performance", answer: "suggestion", strict: true,
        tokens: Rewriting { base: 800, code: "snippet" };
    SuggestReliability => "suggest_reliability", answer: "suggestion", strict: true,
        tokens: Rewriting { base: 800, code: "snippet" };
    // One to three SLOs of ~400 tokens each (title, one sentence, PromQL, a Cloud Run object). Not strict:
    // the `gcp/cloudrun` object is open-ended.
    Slo => "slo", answer: "slos", strict: false, tokens: Fixed(2_000);
    // The whole file rewritten, an explanation of at most 3,000 characters and a list of packages.
    FileChanges => "file_changes", answer: "file_changes", strict: true,
        tokens: Rewriting { base: 1_200, code: "file" };
    // Per concern asked for: a summary and a handful of findings (title, detail, recommendation).
    DeepAnalysis => "deep_analysis", answer: "deep_analysis", strict: true,
        tokens: PerItem { base: 300, each: 1_500, list: "concerns" };
}

use AnswerBudget::{Fixed, PerItem, Rewriting};

/// The output tokens an answer can need, from its schema's fields and the size of what it is about. A model
/// is asked for no more (`max_completion_tokens`, `num_predict`), so one that rambles is stopped there and
/// refused clearly, not waited on for minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerBudget {
    /// An answer of bounded fields.
    Fixed(u32),
    /// `base`, plus the code the answer rewrites (the template value `code`): one token per two bytes,
    /// i.e. 1.5 times the ~3 bytes per token of source, as a rewrite may grow.
    Rewriting { base: u32, code: &'static str },
    /// `base`, plus `each` per item of the comma-separated template value `list`.
    PerItem {
        base: u32,
        each: u32,
        list: &'static str,
    },
}

impl AnswerBudget {
    /// The budget for a prompt rendered from `values`.
    pub fn tokens(self, values: &[(&str, &str)]) -> u32 {
        let value = |name: &str| {
            values
                .iter()
                .find(|(key, _)| *key == name)
                .map_or("", |(_, value)| *value)
        };
        match self {
            Fixed(tokens) => tokens,
            Rewriting { base, code } => {
                let code_tokens = u32::try_from(value(code).len().div_ceil(2)).unwrap_or(u32::MAX);
                base.saturating_add(code_tokens)
            }
            PerItem { base, each, list } => {
                let items = value(list)
                    .split(',')
                    .filter(|item| !item.trim().is_empty());
                let count = u32::try_from(items.count()).unwrap_or(u32::MAX);
                base.saturating_add(each.saturating_mul(count.max(1)))
            }
        }
    }

    /// The template value the budget grows with, if any.
    #[cfg(test)]
    fn value_name(self) -> Option<&'static str> {
        match self {
            Fixed(_) => None,
            Rewriting { code, .. } => Some(code),
            PerItem { list, .. } => Some(list),
        }
    }
}

/// The embedded schemas are checked by a unit test; a broken one degrades to "anything goes" rather than
/// panicking, and validation then reports nothing more than the tools' own checks.
fn schema(name: &str, text: &str, strict: bool) -> OutputSchema {
    let schema = serde_json::from_str(text).unwrap_or_else(|e| {
        tracing::error!(name, %e, "embedded answer schema is not JSON");
        Value::Object(Default::default())
    });
    OutputSchema {
        name: name.to_owned(),
        schema,
        strict,
    }
}

/// A placeholder with no value, or a value never used: a programming error caught by tests.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("prompt template has no value for {{{{{0}}}}}")]
pub struct MissingValue(pub String);

/// Renders `template` in one pass: `{{name}}` becomes the value of `name` in `values`. Text produced by a
/// value is never scanned again. `{{` not followed by a known `name}}` is an error.
pub fn render(template: &str, values: &[(&str, &str)]) -> Result<String, MissingValue> {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| MissingValue(after.chars().take(20).collect()))?;
        let name = after[..close].trim();
        let value = values
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
            .ok_or_else(|| MissingValue(name.to_owned()))?;
        out.push_str(value);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_never_substituted_again() {
        let rendered = render(
            "A {{snippet}} B {{lang}}",
            &[
                ("snippet", "x = '{{lang}} {{snippet}}'"),
                ("lang", "python"),
            ],
        )
        .unwrap();
        assert_eq!(rendered, "A x = '{{lang}} {{snippet}}' B python");
    }

    #[test]
    fn unknown_placeholder_is_an_error() {
        assert_eq!(
            render("{{nope}}", &[]),
            Err(MissingValue("nope".to_owned()))
        );
    }

    #[test]
    fn a_budget_grows_with_the_value_its_template_has() {
        for task in Task::ALL {
            if let Some(name) = task.budget().value_name() {
                let placeholder = format!("{{{{{name}}}}}");
                assert!(
                    task.template().contains(&placeholder),
                    "{task:?}: {placeholder}"
                );
            }
        }
        let snippet = "x".repeat(3_000);
        assert_eq!(
            Task::ScorePerformance
                .budget()
                .tokens(&[("snippet", &snippet)]),
            600
        );
        assert_eq!(
            Task::SuggestReliability
                .budget()
                .tokens(&[("snippet", &snippet)]),
            800 + 1_500
        );
        assert_eq!(
            Task::DeepAnalysis
                .budget()
                .tokens(&[("concerns", "performance, reliability")]),
            300 + 2 * 1_500
        );
    }

    #[test]
    fn every_schema_compiles_and_every_template_renders() {
        let names = [
            "lang",
            "snippet",
            "score",
            "target_score",
            "context",
            "file_name",
            "file",
            "function",
            "concerns",
        ];
        let values: Vec<(&str, &str)> = names.iter().map(|n| (*n, "v")).collect();
        for task in Task::ALL {
            render(task.template(), &values).unwrap();
            let schema = &task.schema().schema;
            assert!(schema.get("type").is_some(), "{task:?}");
            jsonschema::validator_for(schema).unwrap();
        }
    }
}
