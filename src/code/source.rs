//! Reading a source file given by a user: path checks, size limit, text checks.

use std::{
    io::ErrorKind,
    path::{Path, PathBuf},
};

use super::{CodeError, Language, MAX_SOURCE_BYTES};

/// Turns `path_or_uri` (an absolute path or a `file://` URI) into an absolute path.
pub fn resolve_path(path_or_uri: &str) -> Result<PathBuf, CodeError> {
    let raw = path_or_uri.trim();
    if raw.is_empty() {
        return Err(CodeError::EmptyPath);
    }
    let path = if raw.len() >= 7 && raw[..7].eq_ignore_ascii_case("file://") {
        let url =
            url::Url::parse(raw).map_err(|e| CodeError::BadUri(raw.to_owned(), e.to_string()))?;
        url.to_file_path().map_err(|()| {
            CodeError::BadUri(raw.to_owned(), "it names no local absolute path".to_owned())
        })?
    } else {
        PathBuf::from(raw)
    };
    if !path.is_absolute() {
        return Err(CodeError::RelativePath(raw.to_owned()));
    }
    Ok(path)
}

/// Reads a source file: absolute path or `file://` URI, an existing regular file with a supported extension,
/// at most [`MAX_SOURCE_BYTES`], UTF-8 text without NUL bytes. A leading byte-order mark is dropped.
pub fn read_source(path_or_uri: &str) -> Result<(PathBuf, Language, String), CodeError> {
    read_source_file(resolve_path(path_or_uri)?)
}

/// [`read_source`] for a path already at hand; it must be absolute.
pub fn read_source_file(path: PathBuf) -> Result<(PathBuf, Language, String), CodeError> {
    if !path.is_absolute() {
        return Err(CodeError::RelativePath(path.display().to_string()));
    }
    let metadata = std::fs::metadata(&path).map_err(|e| io_error(&path, e))?;
    if metadata.is_dir() {
        return Err(CodeError::IsDirectory(path));
    }
    if !metadata.is_file() {
        return Err(CodeError::NotAFile(path));
    }
    let language = Language::from_path(&path)
        .ok_or_else(|| CodeError::UnsupportedExtension { path: path.clone() })?;
    if metadata.len() > MAX_SOURCE_BYTES {
        return Err(CodeError::TooLarge {
            path,
            size: metadata.len(),
        });
    }
    let bytes = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
    // The file may have grown since the metadata call.
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(CodeError::TooLarge {
            size: bytes.len() as u64,
            path,
        });
    }
    let text = decode(&path, bytes)?;
    Ok((path, language, text))
}

/// UTF-8 text without NUL bytes, byte-order mark removed.
fn decode(path: &Path, mut bytes: Vec<u8>) -> Result<String, CodeError> {
    if bytes.contains(&0) {
        return Err(CodeError::Binary(path.to_owned()));
    }
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid_up_to = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..valid_up_to]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        CodeError::NotUtf8 {
            path: path.to_owned(),
            line,
        }
    })
}

fn io_error(path: &Path, error: std::io::Error) -> CodeError {
    match error.kind() {
        ErrorKind::NotFound => CodeError::NotFound(path.to_owned()),
        // A path component that is a file (e.g. /etc/hosts/x.py) also means "not there".
        ErrorKind::NotADirectory => CodeError::NotFound(path.to_owned()),
        _ => CodeError::Io {
            path: path.to_owned(),
            source: error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_relative_paths() {
        assert_eq!(
            resolve_path("file:///tmp/a%20b.py").unwrap(),
            PathBuf::from("/tmp/a b.py")
        );
        assert!(matches!(
            resolve_path("src/app.py"),
            Err(CodeError::RelativePath(_))
        ));
        assert!(matches!(resolve_path("  "), Err(CodeError::EmptyPath)));
        assert!(matches!(
            resolve_path("file://remote-host/x.py"),
            Err(CodeError::BadUri(..))
        ));
    }

    #[test]
    fn decoding() {
        let path = Path::new("/x.py");
        assert_eq!(
            decode(path, b"\xEF\xBB\xBFdef f(): pass".to_vec()).unwrap(),
            "def f(): pass"
        );
        assert!(matches!(
            decode(path, b"a\0b".to_vec()),
            Err(CodeError::Binary(_))
        ));
        assert!(matches!(
            decode(path, b"a\nb\n\xff".to_vec()),
            Err(CodeError::NotUtf8 { line: 3, .. })
        ));
    }
}
