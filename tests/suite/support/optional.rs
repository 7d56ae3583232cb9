//! Optional components some tests need (Go, Node, a Python with FastMCP, the local model stack, a Qdrant
//! server). Without one, a test is skipped out loud: the notice goes straight to the terminal, past the
//! harness's output capture, so `cargo test` shows it beside an "ok". With `FAULT_REQUIRE_ALL=1` (set by
//! `.ci/run`) a skip fails the test instead, naming what was missing.

use std::io::Write;

/// Whether every optional component must be present (`FAULT_REQUIRE_ALL=1`).
#[allow(dead_code)] // for tests that pick a stricter path themselves
pub fn require_all() -> bool {
    std::env::var("FAULT_REQUIRE_ALL").is_ok_and(|v| v.trim() == "1")
}

/// How to get the local LLM stack's `FAULT_TEST_*` variables.
pub const LOCAL_LLM: &str = "`bash ../shared/llm/local-llm.sh start`";
/// Held by the tests that ask the local chat model for answers. Its two slots serve one test's calls in seconds,
/// but behind another test's long answers a short call waits minutes, and a test that bounds its time would fail
/// for a reason that is not its own.
pub static LOCAL_CHAT_MODEL: super::locks::TestLock =
    super::locks::TestLock::new("local_chat_model");
/// How to get a Qdrant's `FAULT_TEST_QDRANT_*` variables.
pub const QDRANT: &str = "`bash ../shared/qdrant/qdrant.sh start`";

/// The values of the variables `names` when every one is set (and not blank); otherwise `test` is skipped
/// (see [`skip`]), naming them and `from`, the commands that print them.
pub fn env_vars<const N: usize>(
    test: &str,
    names: [&str; N],
    from: &[&str],
) -> Option<[String; N]> {
    let values = names.map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
    if values.iter().any(Option::is_none) {
        skip(
            test,
            &format!(
                "{} not set (run {} and export what it prints)",
                names.join(", "),
                from.join(" and ")
            ),
        );
        return None;
    }
    Some(values.map(Option::unwrap_or_default))
}

/// Skips `test` because `why` (what is missing and how to get it); fails it under `FAULT_REQUIRE_ALL=1`.
pub fn skip(test: &str, why: &str) {
    if require_all() {
        panic!("{test}: FAULT_REQUIRE_ALL=1 but a required component is missing: {why}");
    }
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {test}: {why} (FAULT_REQUIRE_ALL=1 turns this into a failure)"
    );
}
