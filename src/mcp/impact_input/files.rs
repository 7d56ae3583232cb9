//! The files a scenario writes when asked, created before the run so a bad path is refused first.

use crate::report::chart::page_file::PageFile;

use super::*;

/// A scenario tool's `report_path`: the HTML page's file, created before the run (an error names the field).
pub(in crate::mcp) fn report_page(path: Option<String>) -> Result<Option<PageFile>, InputError> {
    output_file("report_path", path)
}

/// The file of `field` (a path, or none), created before the run (an error names the field).
pub(in crate::mcp) fn output_file(
    field: &str,
    path: Option<String>,
) -> Result<Option<PageFile>, InputError> {
    path.map(|path| {
        PageFile::create(std::path::Path::new(&path)).map_err(|e| bad(field, e.to_string()))
    })
    .transpose()
}

/// The files a scenario writes when asked: its HTML page (`report_path`) and its result (`result_path`), each
/// created before the run, so a path that cannot be written is refused before any load is sent.
#[derive(Debug, Default)]
pub(crate) struct RunFiles {
    pub page: Option<PageFile>,
    pub result: Option<PageFile>,
}

impl RunFiles {
    /// Removes the files: the run ended without a report.
    pub fn discard(self) {
        self.page
            .into_iter()
            .chain(self.result)
            .for_each(PageFile::discard);
    }
}
