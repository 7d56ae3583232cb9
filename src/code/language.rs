//! The language registry: one line per language, naming its tree-sitter grammar and its query files in
//! `grammars/<name>/` (embedded at build time so the binary is self-contained). Queries are compiled on
//! first use, so starting the server costs nothing here.

use std::{fmt, path::Path, str::FromStr, sync::OnceLock};

use tree_sitter::{Query, QueryError};

/// How one language is recognised and parsed. Everything language-specific lives here or in the query files.
pub(crate) struct LanguageSpec {
    /// Canonical name, as reported to users.
    pub(crate) name: &'static str,
    /// Other names accepted by [`Language::from_name`].
    pub(crate) aliases: &'static [&'static str],
    /// File extensions, without the dot, lowercase.
    pub(crate) extensions: &'static [&'static str],
    pub(crate) grammar: fn() -> tree_sitter::Language,
    /// Captures: `@name`, `@definition` (the whole definition), optional `@body`, optional `@attribute`
    /// (leading siblings such as Rust `#[...]` that belong to the definition), optional `@qualifier`
    /// (an explicit owner such as a Go receiver type or the object of `Foo.prototype.bar = function`).
    pub(crate) functions_query: &'static str,
    /// Captures `@scope` (a class-like container: class, impl, trait, named object literal) and
    /// `@scope.name`. Functions are scopes too, without being listed here.
    pub(crate) scopes_query: &'static str,
    /// Separator between the parts of a qualified name (`Class.method`, `Type::method`).
    pub(crate) separator: &'static str,
    compiled: OnceLock<Result<CompiledQueries, String>>,
}

pub(crate) struct CompiledQueries {
    pub(crate) functions: Query,
    pub(crate) scopes: Query,
}

macro_rules! language {
    ($name:literal, aliases: $aliases:expr, extensions: $exts:expr, grammar: $grammar:expr, separator: $sep:literal) => {
        LanguageSpec {
            name: $name,
            aliases: $aliases,
            extensions: $exts,
            grammar: || $grammar.into(),
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
            compiled: OnceLock::new(),
        }
    };
}

/// The registry. Adding a language = a grammar crate, `grammars/<name>/{functions,scopes}.scm`, one line here.
static REGISTRY: [LanguageSpec; 4] = [
    language!("python", aliases: &["py", "python3"], extensions: &["py", "pyi"],
              grammar: tree_sitter_python::LANGUAGE, separator: "."),
    language!("go", aliases: &["golang"], extensions: &["go"],
              grammar: tree_sitter_go::LANGUAGE, separator: "."),
    language!("rust", aliases: &["rs"], extensions: &["rs"],
              grammar: tree_sitter_rust::LANGUAGE, separator: "::"),
    language!("javascript", aliases: &["js", "node", "nodejs"], extensions: &["js", "mjs", "cjs", "jsx"],
              grammar: tree_sitter_javascript::LANGUAGE, separator: "."),
];

/// A supported source language.
#[derive(Clone, Copy)]
pub struct Language {
    spec: &'static LanguageSpec,
}

impl Language {
    /// Every supported language, in registry order.
    pub fn all() -> impl Iterator<Item = Language> {
        REGISTRY.iter().map(|spec| Language { spec })
    }

    /// The language of a file, from its extension (case-insensitive).
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Self::all().find(|lang| lang.spec.extensions.contains(&ext.as_str()))
    }

    /// A language from its name or an alias (`python|py`, `go|golang`, `rust|rs`, `javascript|js|node`),
    /// case-insensitive.
    pub fn from_name(name: &str) -> Option<Language> {
        let name = name.trim().to_ascii_lowercase();
        Self::all()
            .find(|lang| lang.spec.name == name || lang.spec.aliases.contains(&name.as_str()))
    }

    /// The canonical name: `python`, `go`, `rust` or `javascript`.
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// File extensions without the dot.
    pub fn extensions(&self) -> &'static [&'static str] {
        self.spec.extensions
    }

    /// Every supported extension with its dot, for messages: `.py, .pyi, .go, ...`.
    pub fn supported_extensions() -> String {
        Self::all()
            .flat_map(|lang| lang.extensions().iter().map(|ext| format!(".{ext}")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every accepted language name, for messages.
    pub fn supported_names() -> String {
        Self::all()
            .map(|lang| {
                std::iter::once(lang.name())
                    .chain(lang.spec.aliases.iter().copied())
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

    pub(crate) fn grammar(&self) -> tree_sitter::Language {
        (self.spec.grammar)()
    }

    /// The compiled queries, built on first use.
    pub(crate) fn queries(&self) -> Result<&'static CompiledQueries, String> {
        let spec = self.spec;
        spec.compiled
            .get_or_init(|| {
                let grammar = self.grammar();
                let compile = |file: &str, text: &str| {
                    Query::new(&grammar, text)
                        .map_err(|e: QueryError| format!("grammars/{}/{file}: {e}", spec.name))
                };
                Ok(CompiledQueries {
                    functions: compile("functions.scm", spec.functions_query)?,
                    scopes: compile("scopes.scm", spec.scopes_query)?,
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl PartialEq for Language {
    fn eq(&self, other: &Self) -> bool {
        self.spec.name == other.spec.name
    }
}

impl Eq for Language {}

impl std::hash::Hash for Language {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.spec.name.hash(state);
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
