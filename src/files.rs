//! The one way a file named by a user (a tool input, a command-line flag, a plan) is read. Its metadata is
//! checked before it is opened: directories, devices, FIFOs and sockets are refused without being opened (a
//! FIFO would block the reader, `/dev/zero` never ends). The size limit is enforced again while reading, since
//! the file may grow after the check.

use std::{
    fs::Metadata,
    io::{ErrorKind, Read},
    path::{Path, PathBuf},
};

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("file not found: {0}")]
    NotFound(PathBuf),
    #[error("no such directory: {0}")]
    NoDirectory(PathBuf),
    #[error("{0} is a directory, not a file")]
    IsDirectory(PathBuf),
    #[error("{0} is not a regular file (a device, FIFO or socket); pass the path of a file")]
    NotAFile(PathBuf),
    #[error("{path} is {size} bytes or more, over the {limit} byte limit")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The metadata of `path` when it is an existing regular file (symbolic links followed).
pub fn regular_file(path: &Path) -> Result<Metadata, FileError> {
    let metadata = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    if metadata.is_dir() {
        return Err(FileError::IsDirectory(path.to_owned()));
    }
    if !metadata.is_file() {
        return Err(FileError::NotAFile(path.to_owned()));
    }
    Ok(metadata)
}

/// The bytes of the regular file `path`, at most `limit` of them.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let metadata = regular_file(path)?;
    if metadata.len() > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            size: metadata.len(),
            limit,
        });
    }
    read_checked(path, &metadata, limit)
}

/// The bytes of `path`, whose `metadata` [`regular_file`] returned, at most `limit` of them.
pub fn read_checked(path: &Path, metadata: &Metadata, limit: u64) -> Result<Vec<u8>, FileError> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// `path` created (or emptied) for writing, when it is a regular file or nothing yet in an existing
/// directory: a directory, a FIFO (opening it would block until a reader comes), a device or a socket is
/// refused, and so is a path whose directory does not exist.
pub fn create_output(path: &Path) -> Result<std::fs::File, FileError> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => return Err(FileError::IsDirectory(path.to_owned())),
        Ok(metadata) if !metadata.is_file() => return Err(FileError::NotAFile(path.to_owned())),
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(FileError::NoDirectory(parent.to_owned()));
            }
        }
        Err(e) => return Err(io_error(path, e)),
    }
    std::fs::File::create(path).map_err(|e| io_error(path, e))
}

/// The UTF-8 text of the regular file `path`, at most `limit` bytes; the error of invalid UTF-8 gives the line.
pub fn read_text(path: &Path, limit: u64) -> Result<String, FileError> {
    let bytes = read_bounded(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        let valid_up_to = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..valid_up_to]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        FileError::Io {
            path: path.to_owned(),
            source: std::io::Error::new(
                ErrorKind::InvalidData,
                format!("not valid UTF-8 (first bad byte on line {line})"),
            ),
        }
    })
}

fn io_error(path: &Path, error: std::io::Error) -> FileError {
    match error.kind() {
        // A path component that is a file (e.g. /etc/hosts/x.py) also means "not there".
        ErrorKind::NotFound | ErrorKind::NotADirectory => FileError::NotFound(path.to_owned()),
        _ => FileError::Io {
            path: path.to_owned(),
            source: error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_bounded_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_bounded(dir.path(), 10),
            Err(FileError::IsDirectory(_))
        ));
        assert!(matches!(
            read_bounded(Path::new("/dev/zero"), 10),
            Err(FileError::NotAFile(_))
        ));
        assert!(matches!(
            read_bounded(&dir.path().join("missing"), 10),
            Err(FileError::NotFound(_))
        ));
        let big = dir.path().join("big");
        std::fs::write(&big, [b'x'; 11]).unwrap();
        assert!(matches!(
            read_bounded(&big, 10),
            Err(FileError::TooLarge { size: 11, .. })
        ));
        assert_eq!(read_bounded(&big, 11).unwrap().len(), 11);
        std::fs::write(&big, b"ok\n\xff").unwrap();
        let error = read_text(&big, 100).unwrap_err().to_string();
        assert!(error.contains("line 2"), "{error}");

        assert!(matches!(
            create_output(dir.path()),
            Err(FileError::IsDirectory(_))
        ));
        assert!(matches!(
            create_output(Path::new("/dev/zero")),
            Err(FileError::NotAFile(_))
        ));
        assert!(matches!(
            create_output(&dir.path().join("missing/out.md")),
            Err(FileError::NoDirectory(_))
        ));
        assert!(create_output(&big).is_ok());
        assert_eq!(std::fs::metadata(&big).unwrap().len(), 0);
    }
}
