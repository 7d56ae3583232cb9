//! The shape of `src/`, read with `syn` from the files themselves: no file over 600 lines of code, no `mod.rs`
//! over 150 (a folder's `mod.rs` is its table of contents), and no import circle between the rooms of a folder.
//!
//! A room is a file or a folder (taken whole) beside others in the same folder. An import from one room into
//! another is an arrow; a child reading its parent, or a parent its child, is inside one room and not an arrow.
//! Paths are followed through re-exports (`pub use`), so a `mod.rs` that re-exports a child's item does not stand
//! between the room that uses it and the room that defines it. Test code (`#[cfg(test)]`) is left out of both.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use syn::visit::Visit;

/// Lines of code a file may hold, and a `mod.rs`.
const MAX_FILE_LINES: usize = 600;
const MAX_MOD_RS_LINES: usize = 150;

type ModPath = Vec<String>;

/// One file of `src/`, read.
struct Module {
    file: PathBuf,
    /// Lines that are code: not blank, not a comment, not inside a `#[cfg(test)]` item.
    code_lines: usize,
    /// Names of the items the file defines (functions, types, constants, modules, macros).
    defined: BTreeSet<String>,
    /// Names the file re-exports (`pub use a::b::C` gives C → [a, b, C]; a glob gives `*`).
    reexports: Vec<(String, Vec<String>)>,
    /// Every path the file's code names that starts at `crate`, `super`, `self` or a child module.
    paths: Vec<Vec<String>>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Flattens a `use` tree into its paths (`a::{b, c::*}` → `a::b`, `a::c::*`), each with the name it binds.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_paths(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let ident = name.ident.to_string();
            if ident == "self" {
                out.push((prefix.last().cloned().unwrap_or_default(), prefix.clone()));
            } else {
                let mut path = prefix.clone();
                path.push(ident.clone());
                out.push((ident, path));
            }
        }
        syn::UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            path.push(rename.ident.to_string());
            out.push((rename.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => {
            let mut path = prefix.clone();
            path.push("*".into());
            out.push(("*".into(), path));
        }
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

/// Collects what a file defines, re-exports and names, skipping test code.
#[derive(Default)]
struct Reader {
    defined: BTreeSet<String>,
    reexports: Vec<(String, Vec<String>)>,
    paths: Vec<Vec<String>>,
    /// Line ranges of test code, left out of the count.
    test_lines: Vec<(usize, usize)>,
}

impl<'ast> Visit<'ast> for Reader {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_cfg_test(item_attrs(item)) {
            let span = syn::spanned::Spanned::span(item);
            self.test_lines.push((span.start().line, span.end().line));
            return;
        }
        let name = match item {
            syn::Item::Const(i) => Some(&i.ident),
            syn::Item::Enum(i) => Some(&i.ident),
            syn::Item::Fn(i) => Some(&i.sig.ident),
            syn::Item::Mod(i) => Some(&i.ident),
            syn::Item::Static(i) => Some(&i.ident),
            syn::Item::Struct(i) => Some(&i.ident),
            syn::Item::Trait(i) => Some(&i.ident),
            syn::Item::Type(i) => Some(&i.ident),
            syn::Item::Union(i) => Some(&i.ident),
            syn::Item::Macro(i) => i.ident.as_ref(),
            _ => None,
        };
        if let Some(name) = name {
            self.defined.insert(name.to_string());
        }
        if let syn::Item::Use(item_use) = item {
            let mut found = Vec::new();
            use_paths(&item_use.tree, &mut Vec::new(), &mut found);
            let public = !matches!(item_use.vis, syn::Visibility::Inherited);
            for (bound, path) in found {
                if public {
                    self.reexports.push((bound, path.clone()));
                }
                self.paths.push(path);
            }
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.paths
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

fn module_path(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).expect("a file under src");
    let mut parts: ModPath = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    if parts == ["main"] || parts == ["lib"] {
        parts.clear();
    }
    parts
}

fn read_modules(src: &Path) -> BTreeMap<ModPath, Module> {
    let mut modules = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a readable file");
            let syntax = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            let mut reader = Reader::default();
            reader.visit_file(&syntax);
            let in_tests = |line: usize| {
                reader
                    .test_lines
                    .iter()
                    .any(|&(start, end)| (start..=end).contains(&line))
            };
            let code_lines = text
                .lines()
                .enumerate()
                .filter(|(i, line)| {
                    let line = line.trim();
                    !line.is_empty() && !line.starts_with("//") && !in_tests(i + 1)
                })
                .count();
            modules.insert(
                module_path(src, &path),
                Module {
                    file: path,
                    code_lines,
                    defined: reader.defined,
                    reexports: reader.reexports,
                    paths: reader.paths,
                },
            );
        }
    }
    modules
}

/// The absolute module path a path written in `here` starts from, or None when it names no module of ours
/// (a crate, a local name, a type).
fn absolute(
    path: &[String],
    here: &ModPath,
    modules: &BTreeMap<ModPath, Module>,
) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" => here.clone(),
        "super" => {
            let mut base = here.clone();
            base.pop();
            let mut rest = rest;
            while let Some(("super", deeper)) = rest.split_first().map(|(s, r)| (s.as_str(), r)) {
                base.pop();
                rest = deeper;
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        // A child module of `here`, named without `self::`.
        child => {
            let mut base = here.clone();
            base.push(child.to_owned());
            if !modules.contains_key(&base) {
                return None;
            }
            base
        }
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module that defines what an absolute path names, through re-exports.
fn resolve(path: &[String], modules: &BTreeMap<ModPath, Module>, depth: usize) -> ModPath {
    let mut module: ModPath = Vec::new();
    for segment in path {
        let mut deeper = module.clone();
        deeper.push(segment.clone());
        if !modules.contains_key(&deeper) {
            break;
        }
        module = deeper;
    }
    let Some(name) = path.get(module.len()) else {
        return module;
    };
    let Some(found) = modules.get(&module) else {
        return module;
    };
    if depth > 8 || found.defined.contains(name) {
        return module;
    }
    for (bound, target) in &found.reexports {
        let through = if bound == name {
            Some(target.clone())
        } else if bound == "*" {
            let mut target = target.clone();
            target.pop();
            target.push(name.clone());
            Some(target)
        } else {
            None
        };
        let Some(target) = through.and_then(|t| absolute(&t, &module, modules)) else {
            continue;
        };
        let resolved = resolve(&target, modules, depth + 1);
        if resolved != module && (bound == name || modules[&resolved].defined.contains(name)) {
            return resolved;
        }
    }
    module
}

/// Strongly connected sets of more than one room, by Tarjan's algorithm.
fn circles(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        arrows: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, room: &'a str) {
            let n = self.index.len();
            self.index.insert(room, n);
            self.low.insert(room, n);
            self.stack.push(room);
            for next in self.arrows.get(room).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[room].min(self.low[next.as_str()]);
                    self.low.insert(room, low);
                } else if self.stack.contains(&next.as_str()) {
                    let low = self.low[room].min(self.index[next.as_str()]);
                    self.low.insert(room, low);
                }
            }
            if self.low[room] == self.index[room] {
                let mut set = Vec::new();
                while let Some(top) = self.stack.pop() {
                    set.push(top.to_owned());
                    if top == room {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        arrows,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for room in arrows.keys() {
        if !walk.index.contains_key(room.as_str()) {
            walk.visit(room);
        }
    }
    walk.found
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_file_is_over_its_lines_of_code() {
    let modules = read_modules(&src());
    assert!(modules.len() > 100, "{} files read", modules.len());
    let over: Vec<String> = modules
        .values()
        .filter_map(|module| {
            let limit = if module.file.ends_with("mod.rs") {
                MAX_MOD_RS_LINES
            } else {
                MAX_FILE_LINES
            };
            (module.code_lines > limit).then(|| {
                format!(
                    "{}: {} lines of code (at most {limit})",
                    module.file.display(),
                    module.code_lines
                )
            })
        })
        .collect();
    assert!(over.is_empty(), "{}", over.join("\n"));
}

#[test]
fn no_folder_has_an_import_circle_between_its_rooms() {
    let modules = read_modules(&src());
    // Arrows between rooms, kept per folder: (folder, from room) → to rooms.
    let mut by_folder: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut arrows_seen = 0;
    for (here, module) in &modules {
        for path in &module.paths {
            let Some(target) = absolute(path, here, &modules) else {
                continue;
            };
            let there = resolve(&target, &modules, 0);
            let shared = here.iter().zip(&there).take_while(|(a, b)| a == b).count();
            // A parent and its child are one room.
            if shared == here.len() || shared == there.len() {
                continue;
            }
            arrows_seen += 1;
            by_folder
                .entry(here[..shared].to_vec())
                .or_default()
                .entry(here[shared].clone())
                .or_default()
                .insert(there[shared].clone());
        }
    }
    assert!(arrows_seen > 100, "only {arrows_seen} arrows were read");
    let found: Vec<String> = by_folder
        .iter()
        .flat_map(|(folder, arrows)| {
            circles(arrows).into_iter().map(move |set| {
                let folder = if folder.is_empty() {
                    "src".to_owned()
                } else {
                    format!("src/{}", folder.join("/"))
                };
                format!("{folder}: {}", set.join(" ↔ "))
            })
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// The reader itself: a circle planted in a scratch tree is found, and a re-export does not make one.
#[test]
fn the_circle_reader_finds_a_planted_circle_and_sees_through_a_reexport() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        std::fs::write(path, text).expect("a file");
    };
    write("main.rs", "mod a;\nmod b;\nmod c;\nfn main() {}\n");
    write("a/mod.rs", "mod inner;\npub use inner::Thing;\n");
    write(
        "a/inner.rs",
        "pub struct Thing;\npub fn f() { crate::b::g(); }\n",
    );
    write(
        "b.rs",
        "pub fn g() {}\npub fn h() -> crate::a::Thing { crate::a::Thing }\n",
    );
    write("c.rs", "use crate::b::g;\npub fn k() { g() }\n");
    let modules = read_modules(dir.path());
    let here: ModPath = vec!["b".into()];
    let target = absolute(
        &["crate".into(), "a".into(), "Thing".into()],
        &here,
        &modules,
    )
    .expect("a path of ours");
    assert_eq!(resolve(&target, &modules, 0), vec!["a", "inner"]);
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (here, module) in &modules {
        for path in &module.paths {
            if let Some(target) = absolute(path, here, &modules) {
                let there = resolve(&target, &modules, 0);
                if let (Some(from), Some(to)) = (here.first(), there.first())
                    && from != to
                {
                    arrows.entry(from.clone()).or_default().insert(to.clone());
                }
            }
        }
    }
    assert_eq!(circles(&arrows), vec![vec!["a".to_owned(), "b".to_owned()]]);
}
