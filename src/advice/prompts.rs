//! Prompt templates (`prompts/*.md`) and answer schemas (`prompts/schemas/*.json`), embedded at build time.
//!
//! Rendering is one pass over the template: each `{{name}}` is replaced by its value and the value is never
//! scanned again, so placeholders inside the user's code (e.g. `{{snippet}}` in a Jinja template) stay literal.

use std::sync::LazyLock;

use serde_json::Value;

use crate::llm::OutputSchema;

macro_rules! tasks {
    ($($task:ident => $template:literal, answer: $schema:literal, strict: $strict:literal;)+) => {
        /// One LLM task: its template and the schema of its answer.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Task {
            $($task),+
        }

        impl Task {
            /// Every task, in registry order.
            pub const ALL: &[Task] = &[$(Task::$task),+];

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

// The registry: one line per task, naming its template (`prompts/<template>.md`) and the schema of its answer
// (`prompts/schemas/<schema>.json`, whose name is also the one the provider is given). Adding a prompt = its
// two files and one line here.
tasks! {
    ScorePerformance => "score_performance", answer: "score", strict: true;
    ScoreReliability => "score_reliability", answer: "score", strict: true;
    SuggestPerformance => "suggest_performance", answer: "suggestion", strict: true;
    SuggestReliability => "suggest_reliability", answer: "suggestion", strict: true;
    // Not strict: the `gcp/cloudrun` object is open-ended.
    Slo => "slo", answer: "slos", strict: false;
    FileChanges => "file_changes", answer: "file_changes", strict: true;
    DeepAnalysis => "deep_analysis", answer: "deep_analysis", strict: true;
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
