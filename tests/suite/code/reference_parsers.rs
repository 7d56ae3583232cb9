//! Function listing and extraction compared with each language's own parser on real code.
//!
//! - Python: `ast` (tests/parsers/python_functions.py) on standard-library modules of the installed python3.
//! - Go: `go/ast` (tests/parsers/go_functions) on Go's standard library (`go env GOROOT`).
//! - Rust: `syn` on crate sources copied into tests/fixtures/code/reference/rust.
//! - JavaScript: acorn (tests/parsers/js_functions.cjs) on npm packages installed into the target directory.
//! - TypeScript: the TypeScript compiler API (tests/parsers/ts_functions.cjs) on the TypeScript sources that
//!   npm packages ship, installed into the target directory.
//!
//! Listing: every function the reference finds, keyed by name (qualified where the reference qualifies), kind
//! and lines, must be listed, and nothing else. Extraction: the `full` text of each one must span exactly the
//! bytes the reference gives it: Python from the first decorator's `@`, Go from its doc comment (`Doc`), Rust
//! from its first outer attribute or doc comment, JavaScript and TypeScript the declaration (with `export`,
//! modifiers and decorators). Recall, precision and full-text exactness must each reach [`REQUIRED`].
//!
//! A language whose reference tool is missing is skipped with a message. Run with `--nocapture` to see
//! the figures.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use fault::code::{self, FunctionKind, Language};
use serde_json::Value;
use syn::{spanned::Spanned, visit::Visit};

/// The lowest recall, precision and full-text exactness accepted, per language.
const REQUIRED: f64 = 0.99;

type Key = Vec<String>;
/// One definition: its listing key and the byte range of its full text.
type Definition = (Key, (usize, usize));
type Multiset<T> = BTreeMap<T, usize>;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn kind_label(kind: FunctionKind) -> String {
    match kind {
        FunctionKind::Function => "function",
        FunctionKind::Method => "method",
        FunctionKind::Signature => "signature",
    }
    .to_owned()
}

/// Our definitions of one file, keyed as the reference keys them.
fn ours(path: &Path, key: impl Fn(&code::FunctionInfo) -> Key) -> Vec<Definition> {
    let source = std::fs::read_to_string(path).unwrap();
    let language = Language::from_path(path).unwrap();
    code::functions_in_source(language, &source)
        .into_iter()
        .map(|block| (key(&block.info), (block.full.start, block.full.end)))
        .collect()
}

fn full_key(info: &code::FunctionInfo) -> Key {
    vec![
        info.qualified_name.clone(),
        kind_label(info.kind),
        info.start_line.to_string(),
        info.end_line.to_string(),
    ]
}

/// Matches of two multisets: (in both, only in the reference, only in ours).
fn compare<T: Ord + Clone>(reference: &[T], ours: &[T]) -> (usize, Vec<T>, Vec<T>) {
    let count = |items: &[T]| {
        let mut set = Multiset::<T>::new();
        for item in items {
            *set.entry(item.clone()).or_default() += 1;
        }
        set
    };
    let (reference, ours) = (count(reference), count(ours));
    let mut both = 0;
    let mut missed = Vec::new();
    let mut extra = Vec::new();
    for (item, &expected) in &reference {
        let found = ours.get(item).copied().unwrap_or(0);
        both += expected.min(found);
        missed.extend(std::iter::repeat_n(
            item.clone(),
            expected.saturating_sub(found),
        ));
    }
    for (item, &found) in &ours {
        let expected = reference.get(item).copied().unwrap_or(0);
        extra.extend(std::iter::repeat_n(
            item.clone(),
            found.saturating_sub(expected),
        ));
    }
    (both, missed, extra)
}

/// Totals over the files of one language.
#[derive(Default)]
struct Score {
    files: usize,
    lines: usize,
    reference: usize,
    ours: usize,
    /// Listed by both (same key).
    listed_by_both: usize,
    /// Listed by both with the same full text (same key and byte range).
    exact_by_both: usize,
    differences: Vec<String>,
}

impl Score {
    fn add(&mut self, path: &Path, reference: &[Definition], ours: &[Definition]) {
        let source = std::fs::read_to_string(path).unwrap();
        self.files += 1;
        self.lines += source.lines().count();
        self.reference += reference.len();
        self.ours += ours.len();
        let keys = |definitions: &[Definition]| -> Vec<Key> {
            definitions.iter().map(|(key, _)| key.clone()).collect()
        };
        let (listed, missed, extra) = compare(&keys(reference), &keys(ours));
        self.listed_by_both += listed;
        for key in missed {
            self.differences
                .push(format!("missed {key:?} in {}", path.display()));
        }
        for key in extra {
            self.differences
                .push(format!("extra {key:?} in {}", path.display()));
        }
        let (exact, inexact, _) = compare(reference, ours);
        self.exact_by_both += exact;
        for (key, (start, end)) in inexact {
            let Some((_, (our_start, our_end))) = ours.iter().find(|(k, _)| *k == key) else {
                continue;
            };
            let excerpt = |from: usize, to: usize| -> String {
                let text = source.get(from.min(to)..to.max(from)).unwrap_or("?");
                text.chars().take(60).collect::<String>().replace('\n', "⏎")
            };
            self.differences.push(format!(
                "full text of {key:?} in {}: reference {start}..{end} «{}», ours {our_start}..{our_end} «{}»",
                path.display(),
                excerpt(start, end),
                excerpt(*our_start, *our_end),
            ));
        }
    }

    fn report_and_check(&self, language: &str, reference: &str) {
        let ratio = |part: usize, whole: usize| part as f64 / whole.max(1) as f64;
        let recall = ratio(self.listed_by_both, self.reference);
        let precision = ratio(self.listed_by_both, self.ours);
        let exactness = ratio(self.exact_by_both, self.listed_by_both);
        println!(
            "{language} vs {reference}: {} files, {} lines, {} functions in the reference, {} listed, \
             recall {recall:.4}, precision {precision:.4}, full-text exactness {exactness:.4} \
             ({} of {} exact)",
            self.files,
            self.lines,
            self.reference,
            self.ours,
            self.exact_by_both,
            self.listed_by_both
        );
        for difference in self.differences.iter().take(30) {
            println!("  {difference}");
        }
        assert!(self.files > 0, "{language}: no file compared");
        assert!(
            self.reference > 0,
            "{language}: the reference found no function"
        );
        assert!(recall >= REQUIRED, "{language}: recall {recall}");
        assert!(precision >= REQUIRED, "{language}: precision {precision}");
        assert!(
            exactness >= REQUIRED,
            "{language}: full-text exactness {exactness}"
        );
    }
}

/// Runs a reference script that prints `{file: [[..., start_byte, end_byte], ...]}`; `key` keys an entry
/// from its fields before the two byte offsets.
fn reference_listing(
    mut command: Command,
    key: impl Fn(&[Value]) -> Key,
) -> BTreeMap<PathBuf, Vec<Definition>> {
    let output = command.output().expect("run the reference parser");
    assert!(
        output.status.success(),
        "reference parser failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let parsed: BTreeMap<String, Vec<Vec<Value>>> = serde_json::from_slice(&output.stdout).unwrap();
    parsed
        .into_iter()
        .map(|(path, entries)| {
            let definitions = entries
                .into_iter()
                .map(|entry| {
                    let (fields, range) = entry.split_at(entry.len() - 2);
                    let offset = |v: &Value| v.as_u64().unwrap() as usize;
                    (key(fields), (offset(&range[0]), offset(&range[1])))
                })
                .collect();
            (PathBuf::from(path), definitions)
        })
        .collect()
}

fn strings(values: &[Value]) -> Key {
    values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn tool_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn skip(language: &str, why: &str) {
    crate::support::optional::skip(&format!("{language} reference comparison"), why);
}

#[test]
fn python_listing_and_extraction_match_ast_on_the_standard_library() {
    let Some(stdlib) = tool_output(
        "python3",
        &[
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ],
    ) else {
        return skip("Python", "python3 not found (install python3)");
    };
    let modules = [
        "argparse.py",
        "ast.py",
        "asyncio/base_events.py",
        "asyncio/tasks.py",
        "collections/__init__.py",
        "concurrent/futures/_base.py",
        "contextlib.py",
        "dataclasses.py",
        "email/message.py",
        "enum.py",
        "functools.py",
        "http/client.py",
        "inspect.py",
        "json/decoder.py",
        "logging/__init__.py",
        "pathlib.py",
        "statistics.py",
        "tarfile.py",
        "typing.py",
        "unittest/mock.py",
    ];
    let files: Vec<PathBuf> = modules
        .iter()
        .map(|m| Path::new(&stdlib).join(m))
        .filter(|p| p.is_file())
        .collect();
    let mut command = Command::new("python3");
    command
        .arg(manifest_dir().join("tests/parsers/python_functions.py"))
        .args(&files);
    let reference = reference_listing(command, strings);
    let mut score = Score::default();
    for (path, expected) in &reference {
        score.add(path, expected, &ours(path, full_key));
    }
    score.report_and_check("Python", &format!("ast (python {})", stdlib));
}

#[test]
fn go_listing_and_extraction_match_go_ast_on_the_standard_library() {
    let Some(goroot) = tool_output("go", &["env", "GOROOT"]) else {
        return skip("Go", "go not found (apt-get install -y golang-go)");
    };
    let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go_functions");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(manifest_dir().join("tests/parsers/go_functions"))
        .status()
        .expect("run go build");
    assert!(built.success(), "go build of the reference parser failed");

    let packages = [
        "bufio",
        "bytes",
        "context",
        "encoding/json",
        "go/ast",
        "math/bits",
        "net/http",
        "sort",
        "strings",
        "sync",
        "runtime",
    ];
    let mut files = Vec::new();
    for package in packages {
        let Ok(entries) = std::fs::read_dir(Path::new(&goroot).join("src").join(package)) else {
            continue;
        };
        let mut in_package: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.ends_with(".go") && !name.ends_with("_test.go")
            })
            .collect();
        in_package.sort();
        // The runtime is large: its first 40 files cover assembly stubs and generic code.
        in_package.truncate(40);
        files.extend(in_package);
    }
    let mut command = Command::new(&binary);
    command.args(&files);
    let reference = reference_listing(command, strings);
    let mut score = Score::default();
    for (path, expected) in &reference {
        score.add(path, expected, &ours(path, full_key));
    }
    let version = tool_output("go", &["version"]).unwrap_or_default();
    score.report_and_check("Go", &format!("go/ast ({version})"));
}

#[test]
fn javascript_listing_and_extraction_match_acorn_on_npm_packages() {
    if tool_output("node", &["--version"]).is_none() {
        return skip("JavaScript", "node not found (install nodejs and npm)");
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("reference-js");
    let modules = dir.join("node_modules");
    if !modules.join("acorn-walk").is_dir() || !modules.join("express").is_dir() {
        std::fs::create_dir_all(&dir).unwrap();
        let installed = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(&dir)
            .args([
                "acorn@8.15.0",
                "acorn-walk@8.3.4",
                "lodash@4.17.21",
                "express@5.1.0",
            ])
            .status();
        if !matches!(installed, Ok(status) if status.success()) {
            return skip(
                "JavaScript",
                "npm install of acorn, acorn-walk, lodash, express failed",
            );
        }
    }
    let mut files = vec![
        modules.join("acorn/dist/acorn.js"),
        modules.join("acorn-walk/dist/walk.js"),
        modules.join("lodash/lodash.js"),
        modules.join("router/index.js"),
        modules.join("send/index.js"),
    ];
    for package_dir in [
        "express/lib",
        "router/lib",
        "body-parser/lib",
        "body-parser/lib/types",
        "qs/lib",
    ] {
        if let Ok(entries) = std::fs::read_dir(modules.join(package_dir)) {
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "js"))
                .collect();
            found.sort();
            files.extend(found);
        }
    }
    files.retain(|p| p.is_file());
    let mut command = Command::new("node");
    command
        .env("NODE_PATH", &modules)
        .arg(manifest_dir().join("tests/parsers/js_functions.cjs"))
        .args(&files);
    let reference = reference_listing(command, strings);
    let mut score = Score::default();
    for (path, expected) in &reference {
        let listed = ours(path, |info| {
            vec![
                info.name.clone(),
                info.start_line.to_string(),
                info.end_line.to_string(),
            ]
        });
        score.add(path, expected, &listed);
    }
    score.report_and_check("JavaScript", "acorn");
}

/// npm packages that ship their TypeScript sources, and the files compared (`.ts`, `.tsx`, `.d.ts`).
const TYPESCRIPT_PACKAGES: [&str; 6] = [
    "typescript@5.9.3",
    "rxjs@7.8.2",
    "immer@10.1.1",
    "@tanstack/query-core@5.90.2",
    "@tanstack/react-query@5.90.2",
    "zod@3.25.76",
];
const TYPESCRIPT_FILES: [&str; 30] = [
    "rxjs/src/internal/Observable.ts",
    "rxjs/src/internal/Subject.ts",
    "rxjs/src/internal/Subscriber.ts",
    "rxjs/src/internal/Subscription.ts",
    "rxjs/src/internal/ajax/ajax.ts",
    "rxjs/src/internal/observable/combineLatest.ts",
    "rxjs/src/internal/operators/mergeInternals.ts",
    "rxjs/src/internal/scheduler/AsyncAction.ts",
    "rxjs/src/internal/testing/TestScheduler.ts",
    "rxjs/src/internal/util/pipe.ts",
    "immer/src/core/immerClass.ts",
    "immer/src/core/proxy.ts",
    "immer/src/core/finalize.ts",
    "immer/src/plugins/mapset.ts",
    "immer/src/utils/common.ts",
    "@tanstack/query-core/src/queryClient.ts",
    "@tanstack/query-core/src/query.ts",
    "@tanstack/query-core/src/queryObserver.ts",
    "@tanstack/query-core/src/utils.ts",
    "@tanstack/query-core/src/retryer.ts",
    "@tanstack/react-query/src/HydrationBoundary.tsx",
    "@tanstack/react-query/src/QueryClientProvider.tsx",
    "@tanstack/react-query/src/QueryErrorResetBoundary.tsx",
    "@tanstack/react-query/src/usePrefetchQuery.tsx",
    "@tanstack/react-query/src/useBaseQuery.ts",
    "zod/src/v3/types.ts",
    "zod/src/v4/core/schemas.ts",
    "zod/src/v4/core/util.ts",
    "zod/src/v4/classic/schemas.ts",
    "typescript/lib/lib.es5.d.ts",
];

#[test]
fn typescript_listing_and_extraction_match_the_typescript_compiler_on_npm_packages() {
    if tool_output("node", &["--version"]).is_none() {
        return skip("TypeScript", "node not found (install nodejs and npm)");
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("reference-ts");
    let modules = dir.join("node_modules");
    if !TYPESCRIPT_FILES.iter().all(|f| modules.join(f).is_file()) {
        std::fs::create_dir_all(&dir).unwrap();
        let installed = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(&dir)
            .args(TYPESCRIPT_PACKAGES)
            .status();
        if !matches!(installed, Ok(status) if status.success()) {
            return skip(
                "TypeScript",
                &format!("npm install of {} failed", TYPESCRIPT_PACKAGES.join(", ")),
            );
        }
    }
    let files: Vec<PathBuf> = TYPESCRIPT_FILES.iter().map(|f| modules.join(f)).collect();
    let mut command = Command::new("node");
    command
        .env("NODE_PATH", &modules)
        .arg(manifest_dir().join("tests/parsers/ts_functions.cjs"))
        .args(&files);
    let reference = reference_listing(command, strings);
    let mut score = Score::default();
    for (path, expected) in &reference {
        let listed = ours(path, |info| {
            vec![
                info.name.clone(),
                if info.kind == FunctionKind::Signature {
                    "signature"
                } else {
                    "body"
                }
                .to_owned(),
                info.start_line.to_string(),
                info.end_line.to_string(),
            ]
        });
        score.add(path, expected, &listed);
    }
    let version = std::fs::read_to_string(modules.join("typescript/package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|package| package["version"].as_str().map(str::to_owned))
        .unwrap_or_default();
    score.report_and_check("TypeScript", &format!("typescript {version}"));
}

/// `syn`'s view: every fn item, impl method, trait method and foreign fn, qualified like ours, spanning its
/// outer attributes (doc comments included) and the item.
struct SynFunctions<'s> {
    source: &'s str,
    line_starts: Vec<usize>,
    scope: Vec<String>,
    found: Vec<Definition>,
}

impl<'s> SynFunctions<'s> {
    fn new(source: &'s str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self {
            source,
            line_starts,
            scope: Vec::new(),
            found: Vec::new(),
        }
    }

    /// Byte offset of a span position (1-based line, column in characters).
    fn offset(&self, position: proc_macro2::LineColumn) -> usize {
        let line_start = self.line_starts[position.line - 1];
        let line = &self.source[line_start..];
        line_start
            + line
                .char_indices()
                .nth(position.column)
                .map_or(line.len(), |(i, _)| i)
    }

    /// `item` spans its outer attributes and itself; inner attributes (`#![...]` in the body) are inside it.
    fn record(
        &mut self,
        name: &syn::Ident,
        kind: &str,
        item: &impl Spanned,
        attrs: &[syn::Attribute],
    ) {
        let qualified = self
            .scope
            .iter()
            .cloned()
            .chain(std::iter::once(name.to_string()))
            .collect::<Vec<_>>()
            .join("::");
        let span = item.span();
        let outer_start = attrs
            .iter()
            .filter(|a| matches!(a.style, syn::AttrStyle::Outer))
            .map(|a| self.offset(a.span().start()))
            .min();
        let start = self.offset(span.start());
        let start = outer_start.map_or(start, |outer| outer.min(start));
        let end = self.offset(span.end());
        self.found
            .push((vec![qualified, kind.to_owned()], (start, end)));
    }
}

/// The base name of an impl's self type (`&'a mut fmt::Point<T>` → `Point`), as ours names it.
fn base_type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) => path
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        syn::Type::Reference(reference) => base_type_name(&reference.elem),
        syn::Type::Ptr(pointer) => base_type_name(&pointer.elem),
        syn::Type::Paren(inner) => base_type_name(&inner.elem),
        syn::Type::Group(inner) => base_type_name(&inner.elem),
        syn::Type::TraitObject(object) => object
            .bounds
            .iter()
            .find_map(|bound| match bound {
                syn::TypeParamBound::Trait(t) => {
                    t.path.segments.last().map(|s| s.ident.to_string())
                }
                _ => None,
            })
            .unwrap_or_default(),
        other => quote_free_tokens(other),
    }
}

fn quote_free_tokens(ty: &syn::Type) -> String {
    use syn::__private::ToTokens;
    ty.to_token_stream().to_string().replace(' ', "")
}

impl<'ast> Visit<'ast> for SynFunctions<'_> {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.record(&item.sig.ident, "function", item, &item.attrs);
        self.scope.push(item.sig.ident.to_string());
        syn::visit::visit_item_fn(self, item);
        self.scope.pop();
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.record(&item.sig.ident, "method", item, &item.attrs);
        self.scope.push(item.sig.ident.to_string());
        syn::visit::visit_impl_item_fn(self, item);
        self.scope.pop();
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        let kind = if item.default.is_some() {
            "method"
        } else {
            "signature"
        };
        self.record(&item.sig.ident, kind, item, &item.attrs);
        self.scope.push(item.sig.ident.to_string());
        syn::visit::visit_trait_item_fn(self, item);
        self.scope.pop();
    }

    fn visit_foreign_item_fn(&mut self, item: &'ast syn::ForeignItemFn) {
        self.record(&item.sig.ident, "signature", item, &item.attrs);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        self.scope.push(base_type_name(&item.self_ty));
        syn::visit::visit_item_impl(self, item);
        self.scope.pop();
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        self.scope.push(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.scope.pop();
    }
}

#[test]
fn rust_listing_and_extraction_match_syn_on_crate_sources() {
    let dir = manifest_dir().join("tests/fixtures/code/reference/rust");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    let mut score = Score::default();
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let file = syn::parse_file(&source)
            .unwrap_or_else(|e| panic!("syn cannot parse {}: {e}", path.display()));
        let mut reference = SynFunctions::new(&source);
        reference.visit_file(&file);
        let listed = ours(path, |info| {
            vec![info.qualified_name.replace(' ', ""), kind_label(info.kind)]
        });
        score.add(path, &reference.found, &listed);
    }
    score.report_and_check("Rust", "syn 2");
}
