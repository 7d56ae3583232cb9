//! Reading a source file given by a user: path checks, size limit, text checks.

use std::path::{Path, PathBuf};

use super::{CodeError, Language, MAX_SOURCE_BYTES};
use crate::files;

/// Turns `path_or_uri` (an absolute path or a `file://` URI) into an absolute path.
pub fn resolve_path(path_or_uri: &str) -> Result<PathBuf, CodeError> {
    let raw = path_or_uri.trim();
    if raw.is_empty() {
        return Err(CodeError::EmptyPath);
    }
    // `get` and not `[..7]`: a multi-byte character across byte 7 must not panic.
    let path = if raw
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("file://"))
    {
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
    let (language, bytes) = read_checked(&path)?;
    let text = decode(&path, bytes, true)?;
    Ok((path, language, text))
}

/// [`read_source`] keeping the text byte for byte (a byte-order mark stays), for tools that diff against
/// the file as it is on disk.
pub fn read_source_exact(path_or_uri: &str) -> Result<(PathBuf, Language, String), CodeError> {
    let path = resolve_path(path_or_uri)?;
    let (language, bytes) = read_checked(&path)?;
    let text = decode(&path, bytes, false)?;
    Ok((path, language, text))
}

/// What the reader checks before opening: an absolute path to a regular file (devices, FIFOs and sockets
/// refused from their metadata), of a language the registry knows, at most [`MAX_SOURCE_BYTES`]. Tools that
/// only locate a file (e.g. to pick its project) check it with this, without reading it.
pub fn check_source_file(path: &Path) -> Result<(Language, std::fs::Metadata), CodeError> {
    if !path.is_absolute() {
        return Err(CodeError::RelativePath(path.display().to_string()));
    }
    let metadata = files::regular_file(path)?;
    let language = Language::from_path(path).ok_or_else(|| CodeError::UnsupportedExtension {
        path: path.to_owned(),
    })?;
    if metadata.len() > MAX_SOURCE_BYTES {
        return Err(CodeError::TooLarge {
            path: path.to_owned(),
            size: metadata.len(),
        });
    }
    Ok((language, metadata))
}

/// The one place a user's source file is opened, through [`crate::files`]: a regular file (devices, FIFOs and
/// sockets are refused from their metadata, never opened), a language the registry knows, at most
/// [`MAX_SOURCE_BYTES`] enforced while reading (the file may grow after the metadata call).
fn read_checked(path: &Path) -> Result<(Language, Vec<u8>), CodeError> {
    let (language, metadata) = check_source_file(path)?;
    let bytes = files::read_checked(path, &metadata, MAX_SOURCE_BYTES)?;
    Ok((language, bytes))
}

/// UTF-8 text without NUL bytes, byte-order mark removed when `drop_bom`.
fn decode(path: &Path, mut bytes: Vec<u8>, drop_bom: bool) -> Result<String, CodeError> {
    if bytes.contains(&0) {
        return Err(CodeError::Binary(path.to_owned()));
    }
    if drop_bom && bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
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
        // A multi-byte character across byte 7 is a relative path, not a panic.
        assert!(matches!(
            resolve_path("fil\u{e9}:///x.py"),
            Err(CodeError::RelativePath(_))
        ));
        assert!(matches!(
            resolve_path("file://remote-host/x.py"),
            Err(CodeError::BadUri(..))
        ));
    }

    #[test]
    fn decoding() {
        let path = Path::new("/x.py");
        assert_eq!(
            decode(path, b"\xEF\xBB\xBFdef f(): pass".to_vec(), true).unwrap(),
            "def f(): pass"
        );
        assert_eq!(
            decode(path, b"\xEF\xBB\xBFx".to_vec(), false).unwrap(),
            "\u{feff}x"
        );
        assert!(matches!(
            decode(path, b"a\0b".to_vec(), true),
            Err(CodeError::Binary(_))
        ));
        assert!(matches!(
            decode(path, b"a\nb\n\xff".to_vec(), true),
            Err(CodeError::NotUtf8 { line: 3, .. })
        ));
    }
}
