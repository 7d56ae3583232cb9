//! Every example of README.md and the book (docs/src/**/*.md) is run: shell commands with the built `fault`
//! first on PATH in a temporary HOME (exit status, and the output's shape where the page shows it), servers
//! started, checked to serve and stopped, tool-call JSON sent to `fault agent tool` and its answer's shape
//! checked, client configurations started, plans loaded, Python snippets compiled and whole scripts run.
//! What a block is comes from its language and an `<!-- example: … -->` comment before it
//! ([`extract`] lists the clauses). What cannot run here is marked so in the page, with the reason, and
//! printed by the test; a missing optional component (a Python with FastMCP) is a skip, out loud.

mod extract;
mod run;
mod served;
mod shape;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::support::optional;

/// README.md and every page of the book.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for path in std::fs::read_dir(&dir)
            .expect("docs/src is readable")
            .map(|entry| entry.expect("a docs entry").path())
        {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

fn relative(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_example_of_the_readme_and_the_book_runs() {
    let test = "docs::examples::every_example_of_the_readme_and_the_book_runs";
    // FAULT_TEST_DOCS_PAGE=team runs the pages whose path holds "team" (the whole run takes a minute).
    let only = std::env::var("FAULT_TEST_DOCS_PAGE").unwrap_or_default();
    let pages: Vec<PathBuf> = pages()
        .into_iter()
        .filter(|page| relative(page).contains(&only))
        .collect();
    // Pages run side by side, a few at a time (each may start servers and a scenario's load).
    let mut outcomes = Vec::new();
    for batch in pages.chunks(4) {
        let runs = batch.iter().map(|path| async move {
            let text = std::fs::read_to_string(path).expect("a docs page");
            run::run_page(&relative(path), &text).await
        });
        outcomes.extend(futures::future::join_all(runs).await);
    }
    let mut failures = Vec::new();
    let mut not_run = Vec::new();
    let mut missing = Vec::new();
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for outcome in outcomes {
        failures.extend(outcome.failures);
        not_run.extend(outcome.not_run);
        missing.extend(outcome.missing);
        for (kind, n) in outcome.counts {
            *counts.entry(kind).or_default() += n;
        }
    }
    // Said out loud, past the harness's capture: what ran, and what did not and why.
    let ran: Vec<String> = counts
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    let mut report = format!(
        "docs examples of {} pages: {}\nnot run here ({}):\n",
        pages.len(),
        ran.join(", "),
        not_run.len()
    );
    for line in &not_run {
        report += &format!("  {line}\n");
    }
    let _ = std::io::stderr().lock().write_all(report.as_bytes());
    assert!(
        failures.is_empty(),
        "{} docs examples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if !missing.is_empty() {
        optional::skip(test, &missing.join("; "));
    }
}

/// A renamed flag in an example fails it, naming the page's line and what `fault` said.
#[tokio::test]
async fn an_example_with_a_renamed_flag_fails() {
    let page = "Try it:\n\n```console\n$ fault run --proxy 34000=127.0.0.1:18080 --with-latency \\\n    \
                --latency-meen 300 --duration 1s\nfault: proxying 127.0.0.1:34000 -> 127.0.0.1:18080\n```\n";
    let outcome = run::run_page("broken.md", page).await;
    assert_eq!(outcome.failures.len(), 1, "{:?}", outcome.failures);
    let failure = &outcome.failures[0];
    assert!(
        failure.starts_with("broken.md:4: `fault run --proxy"),
        "{failure}"
    );
    assert!(failure.contains("exited with status 2"), "{failure}");
    assert!(
        failure.contains("unexpected argument '--latency-meen' found"),
        "{failure}"
    );
}

/// A served command with a renamed flag fails too, and so do a tool call with a misspelled field and an
/// answer of another shape.
#[tokio::test]
async fn a_broken_server_command_call_or_answer_fails() {
    let page = "```sh\nfault agent tool --transprt http\n```\n\n\
                <!-- example: call fault_list_function_names -->\n```json\n{\"fiel\": \"/tmp/x.py\"}\n```\n\n\
                <!-- example: file /tmp/x.py -->\n```python\ndef index():\n    return 1\n```\n\n\
                <!-- example: call fault_list_function_names -->\n```json\n{\"file\": \"/tmp/x.py\"}\n```\n\n\
                <!-- example: answer structured -->\n```json\n{\"functions\": [{\"name\": 1}]}\n```\n";
    let outcome = run::run_page("broken.md", page).await;
    let failures = outcome.failures.join("\n");
    assert_eq!(outcome.failures.len(), 3, "{failures}");
    assert!(
        outcome.failures[0]
            .starts_with("broken.md:2: `fault agent tool --transprt http` did not serve")
            && outcome.failures[0].contains("unexpected argument '--transprt' found"),
        "{failures}"
    );
    assert!(
        outcome.failures[1].starts_with("broken.md:6: fault_list_function_names answered")
            && outcome.failures[1].contains("fiel"),
        "{failures}"
    );
    assert!(
        outcome.failures[2].contains(".functions[0].name is a string, the page shows a number"),
        "{failures}"
    );
}

/// A `json` block that does not say what it is, a misspelled clause, a comment before no block and `measures`
/// without a call are refused; `measures` with a call is read.
#[test]
fn blocks_say_what_they_are() {
    for (page, refusal) in [
        (
            "```json\n{}\n```\n",
            "p.md:1: a `json` block must say what it is",
        ),
        (
            "<!-- example: cal fault_x -->\n```json\n{}\n```\n",
            "`cal fault_x` is not an example clause",
        ),
        (
            "<!-- example: skip: why -->\n\ntext\n",
            "must come right before a fenced block",
        ),
        (
            "<!-- example: data; measures -->\n```json\n{}\n```\n",
            "`measures` goes with a `call`",
        ),
    ] {
        let errors = extract::examples("p.md", page).unwrap_err();
        assert!(errors[0].contains(refusal), "{page}: {errors:?}");
    }
    let examples = extract::examples(
        "p.md",
        "<!-- example: call fault_x; measures -->\n```json\n{}\n```\n",
    )
    .unwrap();
    assert!(examples[0].measures);
}

#[test]
fn console_blocks_split_into_commands_output_and_transcripts() {
    let commands = extract::commands(
        "console",
        "$ fault run --proxy 1=2 \\\n    --duration 2s\nfault: proxying\n$ fault mcp-test-server\n\
         → {\"id\":1}\n← {\"id\":1}\n  (stderr) INFO slow\n",
    )
    .unwrap();
    assert_eq!(commands.len(), 2);
    assert_eq!(
        commands[0].text,
        "fault run --proxy 1=2 \\\n    --duration 2s"
    );
    assert_eq!(commands[0].output, ["fault: proxying"]);
    assert_eq!(
        commands[1].transcript,
        [
            extract::Turn::Send("{\"id\":1}".into()),
            extract::Turn::Expect("{\"id\":1}".into()),
            extract::Turn::Stderr("INFO slow".into())
        ]
    );
    let sh = extract::commands(
        "sh",
        "# a comment\nexport A=1\n\nfault agent tool  # serves\n",
    )
    .unwrap();
    let texts: Vec<&str> = sh.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["export A=1", "fault agent tool  # serves"]);
}
