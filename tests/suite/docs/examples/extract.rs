//! The examples of a docs page: its fenced code blocks, each with what it is. A block's language says what
//! it is by default (`sh` and `console` are commands to run, `python` a client to compile, `text`, `markdown`
//! and the rest are shown); an `<!-- example: … -->` comment right before a block says the rest, in clauses
//! separated by `;`. The clauses are the book's to list, for the people who write examples: "The examples of
//! this book are tests" in docs/src/testing.md. A `json` or `yaml` block must say what it is, and an unknown
//! clause is refused, so that no example is passed over silently.

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// One fenced block of a page.
#[derive(Debug, Clone)]
pub struct Example {
    /// Line of the opening fence, from 1.
    pub line: usize,
    pub lang: String,
    pub text: String,
    pub what: What,
    pub file: Option<String>,
    pub given: Vec<(String, String)>,
    pub needs: Option<(String, String)>,
    pub status: i32,
    /// Its commands serve on this port of 127.0.0.1 (a service other than `fault` the page uses).
    pub serves: Option<u16>,
    /// Its call's answer is a measurement (a rate, a capacity): made while no CPU-heavy test runs.
    pub measures: bool,
}

/// What a block is.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    Shell(Vec<Command>),
    Call {
        tool: String,
        error: bool,
    },
    Answer {
        part: Part,
        exact: bool,
    },
    Config,
    Plan,
    Data,
    Python {
        run: bool,
    },
    /// Output or code shown to the reader, not an example to run.
    Shown,
    Skipped(String),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Part {
    Text,
    Structured,
}

/// One command of a shell block: its text (continuation lines joined), the output the page shows for it
/// (a `console` block's lines without `$ `), and the JSON-RPC lines of a transcript (`→` sent, `←`
/// answered, `(stderr)` logged).
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub line: usize,
    pub text: String,
    pub output: Vec<String>,
    pub transcript: Vec<Turn>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    Send(String),
    Expect(String),
    Stderr(String),
}

/// The languages whose blocks are examples; any other block is shown text.
const SHELL: &[&str] = &["sh", "bash", "shell", "console"];

/// The examples of `text`, or what is wrong with its markup (`page:line: …`).
pub fn examples(page: &str, text: &str) -> Result<Vec<Example>, Vec<String>> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    // The last `<!-- example: … -->` comment, with its line, and the block being read.
    let mut directive: Option<(String, usize)> = None;
    let mut open: Option<Open> = None;
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => {
                let html = html.trim();
                if let Some(rest) = html.strip_prefix("<!-- example:") {
                    let body = rest.trim_end_matches("-->").trim().to_owned();
                    directive = Some((body, line_of(range.start)));
                }
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let lang = info.split([',', ' ']).next().unwrap_or_default().to_owned();
                open = Some(Open {
                    line: line_of(range.start),
                    lang,
                    text: String::new(),
                    directive: directive.take().map(|(body, _)| body),
                });
            }
            Event::Text(chunk) => {
                if let Some(open) = open.as_mut() {
                    open.text.push_str(&chunk);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(block) = open.take() {
                    let line = block.line;
                    match example(block) {
                        Ok(example) => found.push(example),
                        Err(why) => errors.push(format!("{page}:{line}: {why}")),
                    }
                }
            }
            Event::Start(Tag::Paragraph | Tag::Heading { .. } | Tag::Table(_) | Tag::List(_)) => {
                // A comment speaks of the block right after it, not of one further down.
                if let Some((_, at)) = directive.take() {
                    errors.push(format!(
                        "{page}:{at}: an `<!-- example: … -->` comment must come right before a fenced block"
                    ));
                }
            }
            _ => {}
        }
    }
    if let Some((_, at)) = directive {
        errors.push(format!(
            "{page}:{at}: an `<!-- example: … -->` comment with no block after it"
        ));
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// A fenced block as read, before it is told what it is.
struct Open {
    line: usize,
    lang: String,
    text: String,
    directive: Option<String>,
}

fn example(block: Open) -> Result<Example, String> {
    let Open {
        line,
        lang,
        text,
        directive,
    } = block;
    let mut example = Example {
        line,
        lang: lang.clone(),
        text,
        what: What::Shown,
        file: None,
        given: Vec::new(),
        needs: None,
        status: 0,
        serves: None,
        measures: false,
    };
    let mut what = None;
    for clause in clauses(directive.as_deref().unwrap_or_default()) {
        let (word, rest) = clause.split_once([' ', ':']).unwrap_or((clause, ""));
        let rest = rest.trim_start_matches(':').trim();
        let words: Vec<&str> = rest.split_whitespace().collect();
        match word {
            "skip" if !rest.is_empty() => what = Some(What::Skipped(rest.to_owned())),
            "call" => match words[..] {
                [tool] => {
                    what = Some(What::Call {
                        tool: tool.to_owned(),
                        error: false,
                    })
                }
                [tool, "error"] => {
                    what = Some(What::Call {
                        tool: tool.to_owned(),
                        error: true,
                    })
                }
                _ => {
                    return Err(format!(
                        "`{clause}`: write `call TOOL` or `call TOOL error`"
                    ));
                }
            },
            "answer" => {
                let part = match words.first() {
                    Some(&"text") => Part::Text,
                    Some(&"structured") => Part::Structured,
                    _ => {
                        return Err(format!(
                            "`{clause}`: write `answer text` or `answer structured`"
                        ));
                    }
                };
                let exact = match words.get(1..) {
                    Some([]) | None => false,
                    Some(["exact"]) => true,
                    _ => return Err(format!("`{clause}`: only `exact` may follow")),
                };
                what = Some(What::Answer { part, exact });
            }
            "config" if rest.is_empty() => what = Some(What::Config),
            "plan" if rest.is_empty() => what = Some(What::Plan),
            "data" if rest.is_empty() => what = Some(What::Data),
            "run" if rest.is_empty() => what = Some(What::Python { run: true }),
            "measures" if rest.is_empty() => example.measures = true,
            "file" if words.len() == 1 => example.file = Some(rest.to_owned()),
            "given" => match words[..] {
                [path, "from", repo_path] => {
                    example.given.push((path.to_owned(), repo_path.to_owned()))
                }
                _ => return Err(format!("`{clause}`: write `given PATH from REPO_PATH`")),
            },
            "serves" => {
                example.serves = Some(
                    rest.parse()
                        .map_err(|_| format!("`{clause}`: write `serves PORT`"))?,
                )
            }
            "status" => {
                example.status = rest
                    .parse()
                    .map_err(|_| format!("`{clause}`: a status is a number"))?
            }
            "needs" => match clause["needs".len()..].split_once(':') {
                Some((program, why)) if !program.trim().is_empty() && !why.trim().is_empty() => {
                    example.needs = Some((program.trim().to_owned(), why.trim().to_owned()))
                }
                _ => return Err(format!("`{clause}`: write `needs PROGRAM: why`")),
            },
            _ => {
                return Err(format!(
                    "`{clause}` is not an example clause (call, answer, config, plan, data, run, file, given, \
                     status, serves, measures, needs, skip)"
                ));
            }
        }
    }
    example.what = match (what, lang.as_str()) {
        (Some(what), _) => what,
        (None, lang) if SHELL.contains(&lang) => What::Shell(commands(lang, &example.text)?),
        (None, "python") => What::Python { run: false },
        (None, "json" | "yaml") => {
            return Err(format!(
                "a `{lang}` block must say what it is: `<!-- example: call TOOL -->`, `answer text`, \
                 `answer structured`, `config`, `plan`, `data` or `skip: why`"
            ));
        }
        (None, _) => What::Shown,
    };
    let writable = matches!(
        example.what,
        What::Plan | What::Data | What::Python { .. } | What::Shown
    );
    if example.file.is_some() && !writable {
        return Err("`file` goes with a plan, data, a Python script or a shown file".to_owned());
    }
    if example.measures && !matches!(example.what, What::Call { .. }) {
        return Err("`measures` goes with a `call`".to_owned());
    }
    Ok(example)
}

/// The clauses of a comment, split at `;`; a `skip` or `needs` clause's reason runs to the end, `;` and all.
fn clauses(body: &str) -> Vec<&str> {
    let mut clauses = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let to_end = rest.starts_with("skip") || rest.starts_with("needs");
        let (clause, after) = match rest.split_once(';') {
            Some((clause, after)) if !to_end => (clause, after),
            _ => (rest, ""),
        };
        clauses.push(clause.trim());
        rest = after.trim();
    }
    clauses
}

/// The commands of a shell block. In a `console` block a command starts with `$ `, and the lines after it
/// are what it prints (or, starting with `→`, `←` or `(stderr)`, a JSON-RPC transcript with it); in an `sh`
/// block every line is a command, comments and blank lines aside. A line ending in `\` goes on on the next.
pub fn commands(lang: &str, text: &str) -> Result<Vec<Command>, String> {
    let console = lang == "console";
    let mut commands: Vec<Command> = Vec::new();
    let mut continuing = false;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if continuing {
            let current = commands.last_mut().expect("a command goes on");
            current.text.push('\n');
            current.text.push_str(raw);
            continuing = raw.trim_end().ends_with('\\');
            continue;
        }
        let trimmed = raw.trim();
        let command = if console {
            raw.strip_prefix("$ ")
        } else if trimmed.is_empty() || trimmed.starts_with('#') {
            None
        } else {
            Some(raw)
        };
        if let Some(command) = command {
            commands.push(Command {
                line,
                text: command.to_owned(),
                output: Vec::new(),
                transcript: Vec::new(),
            });
            continuing = command.trim_end().ends_with('\\');
            continue;
        }
        if !console || trimmed.is_empty() {
            continue;
        }
        let Some(current) = commands.last_mut() else {
            return Err(format!(
                "a `console` block starts with a `$ ` command (line {line} of the block is `{raw}`)"
            ));
        };
        if let Some(sent) = trimmed.strip_prefix("→ ") {
            current.transcript.push(Turn::Send(sent.to_owned()));
        } else if let Some(answer) = trimmed.strip_prefix("← ") {
            current.transcript.push(Turn::Expect(answer.to_owned()));
        } else if let Some(logged) = trimmed.strip_prefix("(stderr) ") {
            current.transcript.push(Turn::Stderr(logged.to_owned()));
        } else {
            current.output.push(raw.to_owned());
        }
    }
    Ok(commands)
}
