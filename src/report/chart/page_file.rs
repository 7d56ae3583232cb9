//! The HTML page a run writes when asked (a tool's `report_path`, `--report x.html`): the path is checked
//! and the file created before the run starts, so a path that cannot be written is refused at once rather
//! than after minutes of load; the page is written when the report is ready.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use crate::files::{FileError, create_output};

/// The longest path accepted, in bytes (Linux's PATH_MAX).
pub const MAX_PATH_BYTES: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum PageFileError {
    #[error("is empty; give the path of the .html file to write")]
    Empty,
    #[error("is {0} bytes long; accepted: at most {MAX_PATH_BYTES} bytes")]
    TooLong(usize),
    #[error(transparent)]
    Unusable(FileError),
    #[error("cannot create {path}: {source}")]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The page's file, created and empty until [`PageFile::write`].
#[derive(Debug)]
pub struct PageFile {
    path: PathBuf,
    file: std::fs::File,
}

impl PageFile {
    /// `path` created for the page: refused when too long, in a missing directory, a directory, a FIFO, a
    /// device, or not writable.
    pub fn create(path: &Path) -> Result<Self, PageFileError> {
        let length = path.as_os_str().len();
        if length == 0 {
            return Err(PageFileError::Empty);
        }
        if length > MAX_PATH_BYTES {
            return Err(PageFileError::TooLong(length));
        }
        let file = create_output(path).map_err(|e| match e {
            FileError::Io { path, source } => PageFileError::Create { path, source },
            other => PageFileError::Unusable(other),
        })?;
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `page` and closes the file.
    pub fn write(mut self, page: &str) -> Result<PathBuf, PageFileError> {
        let failed = |source| PageFileError::Write {
            path: self.path.clone(),
            source,
        };
        self.file.write_all(page.as_bytes()).map_err(failed)?;
        self.file.sync_data().map_err(failed)?;
        Ok(self.path)
    }

    /// Removes the file: the run it was for ended without a report.
    pub fn discard(self) {
        drop(self.file);
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::debug!(path = %self.path.display(), error = %e, "the empty report file stays");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_over_4096_bytes_is_refused_by_its_length() {
        let long = format!("/tmp/{}.html", "a".repeat(MAX_PATH_BYTES));
        let error = PageFile::create(Path::new(&long)).unwrap_err();
        assert!(error.to_string().contains("at most 4096 bytes"), "{error}");
    }
}
