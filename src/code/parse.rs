//! Parsing a source with tree-sitter: whole, or a large one as two halves on two threads when a cut at a
//! top-level line changes nothing (see "How a first call goes" in docs/src/benchmarks.md).

use tree_sitter::{Parser, Tree};

use super::{CodeError, Language, kinds::WalkKinds, lines::LineIndex};

/// Parses `source`; an error only when the grammar cannot be loaded (a build problem).
pub(crate) fn parse(language: Language, source: &str) -> Result<Tree, CodeError> {
    #[cfg(test)]
    PARSES.with(|parses| parses.set(parses.get() + 1));
    parse_part(language, source, None)
}

/// Parses `source`, or only the `included` range of it (node positions are the source's own).
pub(super) fn parse_part(
    language: Language,
    source: &str,
    included: Option<tree_sitter::Range>,
) -> Result<Tree, CodeError> {
    let internal = |message: String| CodeError::Internal {
        language: language.name().to_owned(),
        message,
    };
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|e| internal(e.to_string()))?;
    if let Some(range) = included {
        parser.set_included_ranges(&[range]).map_err(|_| {
            internal(format!(
                "bytes {}..{} cannot be parsed on their own",
                range.start_byte, range.end_byte
            ))
        })?;
    }
    parser
        .parse(source, None)
        .ok_or_else(|| internal("the parser returned no tree".to_owned()))
}

#[cfg(test)]
thread_local! {
    /// Parses made by this thread, for tests of the parse cache.
    pub(crate) static PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// From this size on, a source is parsed on two threads when it can be cut, and its trees are freed off the
/// caller's path: below it, a thread costs about what it would save.
pub(crate) const LARGE_SOURCE: usize = 64 * 1024;

/// Runs `first` on this thread and `second` on a new one, moved off this thread's CPU first (two halves of a
/// parse, or two shares of a search); `None` when no second thread could be had or it failed.
pub(super) fn on_two_threads<A, B: Send>(
    first: impl FnOnce() -> A,
    second: impl FnOnce() -> B + Send,
) -> Option<(A, B)> {
    std::thread::scope(|scope| {
        let own_cpu = current_cpu();
        let second = std::thread::Builder::new()
            .name("second-half".to_owned())
            .spawn_scoped(scope, move || {
                leave_cpu(own_cpu);
                second()
            })
            .ok()?;
        // The new thread may be queued on this CPU, behind this one: let it run first, to move off.
        std::thread::yield_now();
        let first = first();
        let second = second.join().ok()?;
        Some((first, second))
    })
}

/// The CPU this thread runs on (`None` where that cannot be known).
fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    return Some(rustix::thread::sched_getcpu());
    #[cfg(not(target_os = "linux"))]
    return None;
}

/// Moves this thread off `taken`, the CPU of the thread that made it. A new thread is often queued on its
/// maker's CPU until the scheduler next balances the load a tick later (4 ms here, most of a half's parse):
/// the two halves then ran one after the other in about a third of the first calls. The mask is widened again
/// at once; the move stands, as threads are not moved back without cause.
fn leave_cpu(taken: Option<usize>) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity};
        if taken != Some(sched_getcpu()) {
            return;
        }
        let (Some(taken), Ok(allowed)) = (taken, sched_getaffinity(None)) else {
            return;
        };
        let mut others = allowed;
        others.unset(taken);
        if others.count() > 0 && sched_setaffinity(None, &others).is_ok() {
            // Failing to widen leaves the thread on the other CPUs, which is no harm for one parse.
            let _ = sched_setaffinity(None, &allowed);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = taken;
}

/// Where a large source may be cut in two to be parsed on two threads: the start of a line past the middle
/// that begins with a letter, after one or more blank lines, below a line that is not a comment, attribute or
/// decorator (its first character is a letter, a digit, `_` or a closing bracket). Such a line almost always
/// starts a top-level item; [`cut_changes_nothing`] checks that it did.
pub(super) fn cut_line(source: &str, lines: &LineIndex) -> Option<usize> {
    if source.len() < LARGE_SOURCE {
        return None;
    }
    let bytes = source.as_bytes();
    let text_of = |line: usize| {
        let start = lines.starts[line];
        let end = lines.starts.get(line + 1).map_or(bytes.len(), |&next| next);
        &bytes[start..end]
    };
    let first_visible = |line: usize| text_of(line).iter().find(|b| !b.is_ascii_whitespace());
    // 0-based lines, from the middle of the source to three quarters of it.
    let first = lines.line_of(source.len() / 2);
    let last = lines.line_of(source.len() * 3 / 4);
    (first.max(2)..last).find_map(|line| {
        let starts_with_letter = text_of(line).first().is_some_and(u8::is_ascii_alphabetic);
        if !starts_with_letter || first_visible(line - 1).is_some() {
            return None;
        }
        let above = (0..line - 1).rev().find_map(first_visible)?;
        let code_above =
            above.is_ascii_alphanumeric() || matches!(above, b'_' | b'}' | b')' | b']');
        code_above.then(|| lines.starts[line])
    })
}

/// Whether two halves parsed apart are what the whole source parses to: neither has a syntax error (a cut
/// inside a string, a comment or brackets leaves one), their root is no pattern's start, and the first does not
/// end with something the second's first definition could take as attached (a doc comment, an attribute).
pub(super) fn cut_changes_nothing(first: &Tree, second: &Tree, kinds: &WalkKinds) -> bool {
    let (first, second) = (first.root_node(), second.root_node());
    let ends_with_attachable = {
        let mut cursor = first.walk();
        first
            .named_children(&mut cursor)
            .last()
            .is_some_and(|last| last.is_extra() || kinds.may_be_attached(last.kind_id()))
    };
    !first.has_error()
        && !second.has_error()
        && !kinds.starts_a_pattern(first.kind_id())
        && !ends_with_attachable
}

#[cfg(test)]
pub(crate) mod tests {
    use std::{collections::BTreeMap, path::PathBuf, process::Command};

    use super::{LARGE_SOURCE, cut_line};
    use crate::code::{
        Language,
        functions::{find_functions, find_functions_cut_at},
        lines::LineIndex,
    };

    /// Directories of real code on this machine: Python's standard library, Go's (when Go is installed) and
    /// the crate sources Cargo downloaded to build this one.
    pub(crate) fn real_code_roots() -> Vec<PathBuf> {
        let output = |program: &str, args: &[&str]| {
            Command::new(program)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        };
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
        [
            output(
                "python3",
                &[
                    "-c",
                    "import sysconfig; print(sysconfig.get_path('stdlib'))",
                ],
            ),
            output("go", &["env", "GOROOT"]).map(|root| root.join("src")),
            cargo_home.map(|home| home.join("registry").join("src")),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Every large real source found, cut where the search would cut it, lists exactly what it lists parsed
    /// whole (names, kinds, lines, full and body ranges); and the cut stands in most of them.
    #[test]
    fn a_large_source_cut_in_two_lists_what_it_lists_whole() {
        const PER_LANGUAGE: usize = 25;
        // language → (files compared, cuts that stood)
        let mut seen: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for root in real_code_roots() {
            for entry in ignore::WalkBuilder::new(root)
                .standard_filters(false)
                .build()
            {
                let Ok(entry) = entry else { continue };
                let path = entry.path();
                let Some(language) = Language::from_path(path) else {
                    continue;
                };
                let count = seen.entry(language.name()).or_default();
                if count.0 >= PER_LANGUAGE {
                    continue;
                }
                let Ok(source) = std::fs::read_to_string(path) else {
                    continue;
                };
                if source.len() < LARGE_SOURCE {
                    continue;
                }
                let lines = LineIndex::new(&source);
                if cut_line(&source, &lines).is_none() {
                    continue;
                }
                let (cut, trees) = find_functions(language, &source).unwrap();
                let (whole, _) = find_functions_cut_at(language, &source, &lines, None).unwrap();
                assert!(
                    cut == whole,
                    "{}: the cut changed the listing",
                    path.display()
                );
                count.0 += 1;
                count.1 += usize::from(trees.len() == 2);
            }
        }
        eprintln!("large sources compared (files, cuts that stood): {seen:?}");
        for language in ["python", "rust"] {
            let (files, stood) = seen.get(language).copied().unwrap_or_default();
            assert_eq!(
                files, PER_LANGUAGE,
                "{language}: too few large sources found"
            );
            assert!(
                stood * 2 > files,
                "{language}: the cut stood in {stood} of {files}"
            );
        }
    }
}
