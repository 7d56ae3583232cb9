//! The language registry: one line per language, naming its query files in `grammars/<name>/` (embedded at
//! build time so the binary is self-contained) and its tree-sitter grammar for each file extension (TypeScript
//! has two: `.ts` and `.tsx`, read with the same queries). Queries are compiled on first use, so starting the
//! server costs nothing here.

use std::{fmt, path::Path, str::FromStr, sync::OnceLock};

use tree_sitter::{Query, QueryError};

use super::kinds::WalkKinds;

/// How one language is recognised and parsed. Everything language-specific lives here or in the query files.
pub(crate) struct LanguageSpec {
    /// Canonical name, as reported to users.
    pub(crate) name: &'static str,
    /// The name as written in prose (`JavaScript`), for tool descriptions.
    pub(crate) title: &'static str,
    /// Other names accepted by [`Language::from_name`] (extensions are accepted too).
    pub(crate) aliases: &'static [&'static str],
    /// The grammars, each with the file extensions it reads; the first is the language's default.
    pub(crate) grammars: &'static [Grammar],
    /// Captures: `@name`, `@definition` (the whole definition), optional `@body` or `@function` (a function
    /// value whose `body` field is the body: the query need not name it, and compiles much faster without
    /// that child step in each of its many alternatives), optional `@qualifier` (an explicit owner such as a
    /// Go receiver type or the object of `Foo.prototype.bar = function`).
    /// Patterns of their own capture `@attached`: nodes that belong to the definition they precede as siblings
    /// (Rust attributes and doc comments, Go doc comments, TypeScript decorators); `#set! attached.adjacent`
    /// (no blank line between) and `#set! attached.own_line` (not a comment ending a line of code) narrow them.
    /// A pattern capturing `@terminated` and `@terminator` says that a token right after a definition node ends
    /// it (the `;` after a TypeScript class member). When every definition pattern names a word its text always
    /// holds (`#set! definition.contains "fn"`), the search skips nodes without one of those words.
    pub(crate) functions_query: &'static str,
    /// Captures `@scope` (a class-like container: class, impl, trait, named object literal) and
    /// `@scope.name`. Functions are scopes too, without being listed here.
    pub(crate) scopes_query: &'static str,
    /// Separator between the parts of a qualified name (`Class.method`, `Type::method`).
    pub(crate) separator: &'static str,
}

/// One tree-sitter grammar of a language and the file extensions it reads.
pub(crate) struct Grammar {
    /// File extensions, without the dot, lowercase.
    pub(crate) extensions: &'static [&'static str],
    pub(crate) load: fn() -> tree_sitter::Language,
    /// The grammar's `node-types.json` (what each node kind may contain), for [`WalkKinds`].
    node_types: &'static str,
    compiled: &'static OnceLock<Result<CompiledQueries, String>>,
}

/// The functions and scopes queries compiled as one, so that one pass over a tree runs both.
pub(crate) struct CompiledQueries {
    pub(crate) query: Query,
    /// Patterns from this index on come from `scopes.scm`.
    pub(crate) first_scope_pattern: usize,
    /// The grammar's `body` field, where a `@function` capture's body is.
    pub(crate) body_field: Option<std::num::NonZeroU16>,
    /// Where the query can start and where a definition can be, so that a search skips the rest of a tree.
    pub(crate) walk_kinds: WalkKinds,
}

macro_rules! language {
    ($name:literal, title: $title:literal, aliases: $aliases:expr, separator: $sep:literal,
     grammars: [$($exts:expr => $grammar:expr, $node_types:expr),+ $(,)?]) => {
        LanguageSpec {
            name: $name,
            title: $title,
            aliases: $aliases,
            grammars: &[$(Grammar {
                extensions: $exts,
                load: || $grammar.into(),
                node_types: $node_types,
                compiled: {
                    static COMPILED: OnceLock<Result<CompiledQueries, String>> = OnceLock::new();
                    &COMPILED
                },
            }),+],
            functions_query: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/grammars/",
                $name,
                "/functions.scm"
            )),
            scopes_query: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/grammars/",
                $name,
                "/scopes.scm"
            )),
            separator: $sep,
        }
    };
}

/// The registry. Adding a language = a grammar crate, `grammars/<name>/{functions,scopes}.scm`, one line here
/// (each grammar with its extensions and its `node-types.json`). The tool descriptions list the languages and
/// extensions from here.
static REGISTRY: &[LanguageSpec] = &[
    language!("python", title: "Python", aliases: &["python3"], separator: ".", grammars: [&["py", "pyi"] => tree_sitter_python::LANGUAGE, tree_sitter_python::NODE_TYPES]),
    language!("go", title: "Go", aliases: &["golang"], separator: ".", grammars: [&["go"] => tree_sitter_go::LANGUAGE, tree_sitter_go::NODE_TYPES]),
    language!("rust", title: "Rust", aliases: &[], separator: "::", grammars: [&["rs"] => tree_sitter_rust::LANGUAGE, tree_sitter_rust::NODE_TYPES]),
    language!("javascript", title: "JavaScript", aliases: &["node", "nodejs"], separator: ".", grammars: [&["js", "mjs", "cjs", "jsx"] => tree_sitter_javascript::LANGUAGE, tree_sitter_javascript::NODE_TYPES]),
    language!("typescript", title: "TypeScript", aliases: &[], separator: ".", grammars: [&["ts", "mts", "cts"] => tree_sitter_typescript::LANGUAGE_TYPESCRIPT, tree_sitter_typescript::TYPESCRIPT_NODE_TYPES, &["tsx"] => tree_sitter_typescript::LANGUAGE_TSX, tree_sitter_typescript::TSX_NODE_TYPES]),
];

/// A supported source language, with the grammar it is read with.
#[derive(Clone, Copy)]
pub struct Language {
    spec: &'static LanguageSpec,
    grammar: &'static Grammar,
}

impl Language {
    /// Every supported language (with its default grammar), in registry order.
    pub fn all() -> impl Iterator<Item = Language> {
        REGISTRY.iter().map(|spec| Language {
            spec,
            grammar: &spec.grammars[0],
        })
    }

    /// Every language with each of its grammars.
    pub(crate) fn all_grammars() -> impl Iterator<Item = Language> {
        REGISTRY.iter().flat_map(|spec| {
            spec.grammars
                .iter()
                .map(move |grammar| Language { spec, grammar })
        })
    }

    /// The language of a file, from its extension (case-insensitive).
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Self::from_extension(&ext)
    }

    fn from_extension(ext: &str) -> Option<Language> {
        Self::all_grammars().find(|lang| lang.grammar.extensions.contains(&ext))
    }

    /// A language from its name, an alias or one of its extensions (`python|py`, `go|golang`, `rust|rs`,
    /// `javascript|js|node`, `typescript|ts|tsx`), case-insensitive. An extension picks the grammar that reads it.
    pub fn from_name(name: &str) -> Option<Language> {
        let name = name.trim().to_ascii_lowercase();
        Self::all()
            .find(|lang| lang.spec.name == name || lang.spec.aliases.contains(&name.as_str()))
            .or_else(|| Self::from_extension(&name))
    }

    /// The canonical name: `python`, `go`, `rust`, `javascript`, ...
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// The name as written in prose: `Python`, `JavaScript`, ...
    pub fn title(&self) -> &'static str {
        self.spec.title
    }

    /// File extensions read with this language's grammar, without the dot.
    pub fn extensions(&self) -> &'static [&'static str] {
        self.grammar.extensions
    }

    /// File extensions of every grammar of the language, without the dot.
    fn all_extensions(&self) -> impl Iterator<Item = &'static str> + use<> {
        self.spec
            .grammars
            .iter()
            .flat_map(|grammar| grammar.extensions.iter().copied())
    }

    /// Every supported extension with its dot, for messages: `.py, .pyi, .go, ...`.
    pub fn supported_extensions() -> String {
        Self::all()
            .flat_map(|lang| lang.all_extensions().map(|ext| format!(".{ext}")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every canonical name, for descriptions: `python, go, rust, ...`.
    pub fn canonical_names() -> String {
        Self::all()
            .map(|lang| lang.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every language as written in prose, for descriptions: `Python, Go, Rust, ...`.
    pub fn titles() -> String {
        Self::all()
            .map(|lang| lang.title())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every supported extension with its dot, grouped by language, for descriptions: `.py/.pyi, .go, ...`.
    pub fn extensions_by_language() -> String {
        Self::all()
            .map(|lang| {
                lang.all_extensions()
                    .map(|ext| format!(".{ext}"))
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every accepted language name, for messages.
    pub fn supported_names() -> String {
        Self::all()
            .map(|lang| {
                std::iter::once(lang.name())
                    .chain(lang.spec.aliases.iter().copied())
                    .chain(lang.all_extensions())
                    .filter({
                        let mut seen = std::collections::HashSet::new();
                        move |name| seen.insert(*name)
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Separator of qualified names in this language (`.` or `::`).
    pub fn separator(&self) -> &'static str {
        self.spec.separator
    }

    /// The tree-sitter grammar this language is read with.
    pub(crate) fn grammar(&self) -> tree_sitter::Language {
        (self.grammar.load)()
    }

    /// Whether the queries are compiled already (a first use compiles them).
    pub(crate) fn queries_compiled(&self) -> bool {
        self.grammar.compiled.get().is_some()
    }

    /// The compiled queries, built on first use.
    pub(crate) fn queries(&self) -> Result<&'static CompiledQueries, String> {
        self.grammar
            .compiled
            .get_or_init(|| self.compile_queries())
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The functions and scopes queries compiled as one: compiling takes about as long as parsing a large file
    /// (TypeScript's), so it is done once.
    fn compile_queries(&self) -> Result<CompiledQueries, String> {
        let spec = self.spec;
        let grammar = self.grammar();
        let compile = |file: &str, text: &str| {
            Query::new(&grammar, text)
                .map_err(|e: QueryError| format!("grammars/{}/{file}: {e}", spec.name))
        };
        let combined = format!("{}\n{}", spec.functions_query, spec.scopes_query);
        let query = compile("functions.scm + scopes.scm", &combined).map_err(|error| {
            // Each file alone, so that the error names the file and its own offsets.
            compile("functions.scm", spec.functions_query)
                .and_then(|_| compile("scopes.scm", spec.scopes_query))
                .err()
                .unwrap_or(error)
        })?;
        let first_scope_pattern = (0..query.pattern_count())
            .take_while(|&pattern| {
                query.start_byte_for_pattern(pattern) < spec.functions_query.len()
            })
            .count();
        let walk_kinds = WalkKinds::new(&grammar, &query, &combined, self.grammar.node_types)?;
        Ok(CompiledQueries {
            query,
            first_scope_pattern,
            body_field: grammar.field_id_for_name("body"),
            walk_kinds,
        })
    }
}

impl PartialEq for Language {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.grammar, other.grammar)
    }
}

impl Eq for Language {}

impl std::hash::Hash for Language {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.grammar, state);
    }
}

impl fmt::Debug for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec.name)
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec.name)
    }
}

/// The error of parsing a language name.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown language '{0}'; expected one of {names}", names = Language::supported_names())]
pub struct UnknownLanguage(pub String);

impl FromStr for Language {
    type Err = UnknownLanguage;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Language::from_name(s).ok_or_else(|| UnknownLanguage(s.to_owned()))
    }
}

impl serde::Serialize for Language {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Language {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::code::parse_errors;

    /// CPU time this thread has run (Linux; zero elsewhere, where the comparison below then holds trivially).
    fn thread_cpu() -> std::time::Duration {
        let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let nanos = stat.split_whitespace().next().and_then(|n| n.parse().ok());
        std::time::Duration::from_nanos(nanos.unwrap_or(0))
    }

    /// The first listing of a file pays for its grammar's queries: compiling them costs about one parse of a
    /// large file (a 14,000-line TSX class, as excalidraw's `App.tsx`), not several as it did (each query file
    /// compiled alone, then together; and a child step in every alternative of a function value).
    #[test]
    fn compiling_the_queries_costs_about_one_parse_of_a_large_file() {
        let mut class = String::from("export class App extends Base {\n");
        for i in 0..1000 {
            class.push_str(&format!(
                "  handler{i} = (event: Event) => {{\n    const next = {{ ...this.state, at: {i} }};\n    \
                 this.setState(next);\n  }};\n\n  render{i}() {{\n    return <div onClick={{this.handler{i}}}>\
                 {{this.props.items.map((item) => <Item key={{item.id}} {{...item}} />)}}</div>;\n  }}\n\n"
            ));
        }
        class.push_str("}\n");
        let tsx = Language::from_name("tsx").unwrap();
        let start = thread_cpu();
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&tsx.grammar()).unwrap();
        drop(parser.parse(&class, None).unwrap());
        let parse = thread_cpu() - start;
        let start = thread_cpu();
        tsx.compile_queries().unwrap();
        let compile = thread_cpu() - start;
        assert!(
            compile <= parse * 2,
            "compiling took {compile:?}, parsing {} lines {parse:?}",
            class.lines().count()
        );
    }

    /// The query is compiled once, as one: its first patterns are the functions', the rest the scopes'.
    #[test]
    fn the_scope_patterns_follow_the_function_patterns() {
        for language in Language::all_grammars() {
            let queries = language.queries().unwrap();
            let functions = Query::new(&language.grammar(), language.spec.functions_query).unwrap();
            assert_eq!(
                queries.first_scope_pattern,
                functions.pattern_count(),
                "{language}"
            );
        }
    }

    #[test]
    fn language_names_and_extensions() {
        for (name, canonical) in [
            ("python", "python"),
            ("py", "python"),
            ("go", "go"),
            ("golang", "go"),
            ("Rust", "rust"),
            ("rs", "rust"),
            ("javascript", "javascript"),
            ("js", "javascript"),
            ("node", "javascript"),
            ("typescript", "typescript"),
            ("ts", "typescript"),
            ("tsx", "typescript"),
        ] {
            assert_eq!(Language::from_name(name).unwrap().name(), canonical);
        }
        assert!(Language::from_name("cobol").is_none());
        for (file, canonical) in [
            ("/a/b.py", "python"),
            ("/a/b.pyi", "python"),
            ("/a/b.go", "go"),
            ("/a/b.rs", "rust"),
            ("/a/b.js", "javascript"),
            ("/a/b.MJS", "javascript"),
            ("/a/b.cjs", "javascript"),
            ("/a/b.jsx", "javascript"),
            ("/a/b.ts", "typescript"),
            ("/a/b.mts", "typescript"),
            ("/a/b.cts", "typescript"),
            ("/a/b.tsx", "typescript"),
        ] {
            assert_eq!(
                Language::from_path(Path::new(file)).unwrap().name(),
                canonical
            );
        }
        assert!(Language::from_path(Path::new("/a/b.cob")).is_none());
        let tsx = Language::from_path(Path::new("/a/b.tsx")).unwrap();
        assert_eq!(tsx.extensions(), ["tsx"], "TSX has a grammar of its own");
        assert_eq!(Language::from_name("tsx"), Some(tsx));
        assert!(parse_errors(tsx, "const a = <p>{1}</p>;\n").is_empty());
        let names: std::collections::HashSet<&str> = Language::all().map(|l| l.name()).collect();
        assert_eq!(
            names.len(),
            Language::all().count(),
            "one entry per language"
        );
    }

    #[test]
    fn every_query_compiles() {
        for language in Language::all_grammars() {
            language.queries().unwrap();
        }
    }
}
