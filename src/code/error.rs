//! What can go wrong when reading, parsing or searching a source file. Every message says what to do.

use std::path::PathBuf;

use super::Language;

/// Largest source file accepted, in bytes (10 MiB): larger files are generated or data, not code to review.
pub const MAX_SOURCE_BYTES: u64 = 10 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error(
        "the file path is empty; pass an absolute path such as /home/me/project/app.py or a file:// URI"
    )]
    EmptyPath,

    #[error(
        "'{0}' is a relative path; pass an absolute path (e.g. /home/me/project/app.py) or a file:// URI, \
         since the server's working directory is not yours"
    )]
    RelativePath(String),

    #[error(
        "'{0}' is not a usable file:// URI ({1}); pass an absolute path or a URI like file:///home/me/app.py"
    )]
    BadUri(String, String),

    #[error("file not found: {0}; check the path (it must be absolute and readable by the server)")]
    NotFound(PathBuf),

    #[error("{0} is a directory, not a source file; pass the path of one file inside it")]
    IsDirectory(PathBuf),

    #[error("{0} is not a regular file; pass the path of a source file")]
    NotAFile(PathBuf),

    #[error(
        "unsupported file type '{ext}' for {path}; supported extensions: {supported}",
        ext = extension_label(path),
        supported = Language::supported_extensions()
    )]
    UnsupportedExtension { path: PathBuf },

    #[error(
        "{path} is {size} bytes, over the {limit} byte (10 MiB) limit; pass a smaller source file \
         or extract the part you need first",
        limit = MAX_SOURCE_BYTES
    )]
    TooLarge { path: PathBuf, size: u64 },

    #[error("{0} looks binary (it contains NUL bytes); pass a text source file")]
    Binary(PathBuf),

    #[error("{path} is not valid UTF-8 (first bad byte on line {line}); re-encode it as UTF-8")]
    NotUtf8 { path: PathBuf, line: usize },

    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "the function name is empty; pass a name such as `handler` or a qualified one such as `Class.method`"
    )]
    EmptyFunctionName,

    #[error("{}", function_not_found_message(func, path, closest, *total))]
    FunctionNotFound {
        func: String,
        path: PathBuf,
        /// The closest names in the file, best first.
        closest: Vec<String>,
        /// How many functions the file has.
        total: usize,
    },

    /// A grammar or query problem: a bug in this program, not in the user's input.
    #[error("internal error while parsing {language} source: {message}")]
    Internal { language: String, message: String },
}

impl From<crate::files::FileError> for CodeError {
    fn from(error: crate::files::FileError) -> Self {
        use crate::files::FileError;
        match error {
            FileError::NotFound(path) | FileError::NoDirectory(path) => CodeError::NotFound(path),
            FileError::IsDirectory(path) => CodeError::IsDirectory(path),
            FileError::NotAFile(path) => CodeError::NotAFile(path),
            FileError::TooLarge { path, size, .. } => CodeError::TooLarge { path, size },
            FileError::Io { path, source } => CodeError::Io { path, source },
        }
    }
}

fn extension_label(path: &std::path::Path) -> String {
    path.extension()
        .map(|ext| format!(".{}", ext.to_string_lossy()))
        .unwrap_or_else(|| "(no extension)".to_owned())
}

fn function_not_found_message(
    func: &str,
    path: &std::path::Path,
    closest: &[String],
    total: usize,
) -> String {
    if total == 0 {
        return format!(
            "function '{func}' not found in {}: the file has no functions",
            path.display()
        );
    }
    let hint = if closest.is_empty() {
        String::new()
    } else {
        format!("; closest names: {}", closest.join(", "))
    };
    format!(
        "function '{func}' not found in {} ({total} functions){hint}; call fault_list_function_names to see them all",
        path.display()
    )
}
