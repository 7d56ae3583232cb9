//! Feed files for the feed's tests.

use std::path::PathBuf;

use super::{Feed, FeedError, FeedOrder, Template};

/// A feed file named `name` holding `text`, in a directory kept alive by the returned guard.
pub(super) fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

pub(super) fn load(name: &str, text: &str) -> Result<Feed, FeedError> {
    let (_dir, path) = file(name, text);
    Feed::load(&path, FeedOrder::Sequential, 0)
}

pub(super) fn refused(name: &str, text: &str) -> String {
    load(name, text).unwrap_err().to_string()
}

/// A CSV feed of `rows` users: `id` 0.., `name` "user-<id>".
pub(super) fn users_csv(rows: usize) -> String {
    let mut text = String::from("id,name\n");
    for id in 0..rows {
        text.push_str(&format!("{id},user-{id}\n"));
    }
    text
}

pub(super) fn template(field: &str, text: &str) -> Template {
    Template::parse(field, text).unwrap()
}
