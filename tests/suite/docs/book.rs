//! The book in docs/ builds with mdbook; every link and anchor of the built pages and of README.md resolves
//! (external http(s) links are listed, not fetched: CI has no network); and every built page opens in Chromium
//! with no console error, no failed request and no missing image. Needs mdbook (`$FAULT_TEST_MDBOOK`, else
//! `mdbook` on PATH, else `~/.cache/fault-ci/mdbook/bin/mdbook`, where `.ci/run` installs it) and, for the
//! browser, Chromium and a Python with Playwright; skips out loud without them.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use serde_json::Value;

use crate::support::common;
use crate::support::optional;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The mdbook to build with, or why there is none.
fn mdbook() -> Result<PathBuf, String> {
    let candidates = std::env::var_os("FAULT_TEST_MDBOOK")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("mdbook"))
                .collect::<Vec<_>>()
        }))
        .chain(
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/fault-ci/mdbook/bin/mdbook")),
        );
    for candidate in candidates {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(
        "no mdbook (cargo install mdbook --locked --version 0.5.4, or set FAULT_TEST_MDBOOK)"
            .to_owned(),
    )
}

/// The book built into a temporary directory, or why it could not be (a missing mdbook is a skip).
fn build(test: &str) -> Option<tempfile::TempDir> {
    let mdbook = match mdbook() {
        Ok(mdbook) => mdbook,
        Err(why) => {
            optional::skip(test, &why);
            return None;
        }
    };
    let out = tempfile::Builder::new()
        .prefix("fault-book-")
        .tempdir()
        .expect("a directory for the book");
    let output = std::process::Command::new(&mdbook)
        .arg("build")
        .arg(repo().join("docs"))
        .arg("--dest-dir")
        .arg(out.path())
        .output()
        .expect("run mdbook");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "mdbook build failed:\n{log}");
    // A warning is a page that renders wrong (an include not found, a broken SUMMARY entry).
    let warnings: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("WARN") || line.contains("ERROR"))
        .collect();
    assert!(
        warnings.is_empty(),
        "mdbook warned:\n{}",
        warnings.join("\n")
    );
    Some(out)
}

/// The built pages: every HTML file of the book but 404.html, which mdbook writes for a web server (its
/// links are absolute from the site's root, so they resolve only when served there).
fn pages(book: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(book)
        .expect("the built book")
        .map(|entry| entry.expect("a built file").path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "html")
                && path.file_name().is_some_and(|n| n != "404.html")
        })
        .collect();
    pages.sort();
    pages
}

/// The values of `attribute="…"` in an HTML page.
fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let marker = format!(" {attribute}=\"");
    html.match_indices(&marker)
        .filter_map(|(at, _)| {
            let rest = &html[at + marker.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

/// Where a link goes, as a link checker sees it.
enum Target<'a> {
    External(&'a str),
    /// A file (relative to the linking page) and an anchor in it.
    Local(&'a str, Option<&'a str>),
    Ignored,
}

fn target(link: &str) -> Target<'_> {
    if link.starts_with("http://") || link.starts_with("https://") {
        return Target::External(link);
    }
    if link.starts_with("mailto:") || link.starts_with("javascript:") || link.starts_with("data:") {
        return Target::Ignored;
    }
    let link = link.split('?').next().unwrap_or_default();
    match link.split_once('#') {
        Some((file, anchor)) => Target::Local(file, Some(anchor)),
        None => Target::Local(link, None),
    }
}

#[test]
fn the_book_builds_and_its_links_and_anchors_resolve() {
    let test = "docs::book::the_book_builds_and_its_links_and_anchors_resolve";
    let Some(book) = build(test) else {
        return;
    };
    let pages = pages(book.path());
    assert!(pages.len() > 20, "{} pages built", pages.len());
    let mut ids = BTreeMap::<PathBuf, BTreeSet<String>>::new();
    for page in &pages {
        let html = std::fs::read_to_string(page).expect("a built page");
        let found = attribute_values(&html, "id")
            .into_iter()
            .map(str::to_owned)
            .collect();
        ids.insert(page.clone(), found);
    }
    let mut broken = Vec::new();
    let mut external = BTreeSet::new();
    for page in &pages {
        let html = std::fs::read_to_string(page).expect("a built page");
        let name = page.file_name().unwrap_or_default().to_string_lossy();
        let links = attribute_values(&html, "href")
            .into_iter()
            .chain(attribute_values(&html, "src"));
        for link in links {
            let (file, anchor) = match target(link) {
                Target::External(url) => {
                    external.insert(url.to_owned());
                    continue;
                }
                Target::Ignored => continue,
                Target::Local(file, anchor) => (file, anchor),
            };
            let file = if file.is_empty() {
                page.clone()
            } else {
                page.parent().expect("the book's directory").join(file)
            };
            if !file.exists() {
                broken.push(format!("{name}: {link}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor.filter(|a| !a.is_empty())
                && !ids.get(&file).is_some_and(|ids| ids.contains(anchor))
            {
                broken.push(format!("{name}: {link}: no element with that id"));
            }
        }
    }
    let mut report = format!(
        "docs::book: {} pages; external links, listed and not fetched ({}):\n",
        pages.len(),
        external.len()
    );
    for url in &external {
        report += &format!("  {url}\n");
    }
    let _ = std::io::stderr().lock().write_all(report.as_bytes());
    assert!(
        broken.is_empty(),
        "{} broken links in the built book:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// A heading's anchor as GitHub makes it: lower case, spaces as hyphens, other punctuation dropped.
fn github_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown file's headings.
fn markdown_anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(heading) = heading.as_mut() {
                    heading.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(heading) = heading.take() {
                    anchors.insert(github_anchor(&heading));
                }
            }
            _ => {}
        }
    }
    anchors
}

/// README.md's links and images as GitHub renders them: files of the repository that exist, anchors of their
/// headings.
#[test]
fn the_readme_links_and_anchors_resolve() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut broken = Vec::new();
    let mut checked = 0;
    for event in Parser::new(&readme) {
        let link = match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => dest_url,
            _ => continue,
        };
        let Target::Local(file, anchor) = target(&link) else {
            continue;
        };
        checked += 1;
        let path = if file.is_empty() {
            repo().join("README.md")
        } else {
            repo().join(file)
        };
        if !path.exists() {
            broken.push(format!("{link}: no such file"));
            continue;
        }
        if let Some(anchor) = anchor.filter(|a| !a.is_empty()) {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if !markdown_anchors(&text).contains(anchor) {
                broken.push(format!("{link}: no heading with that anchor"));
            }
        }
    }
    assert!(checked > 10, "only {checked} links found in README.md");
    assert!(
        broken.is_empty(),
        "broken links in README.md:\n{}",
        broken.join("\n")
    );
    // The README starts with the two set-up commands and stays short: the rest is the book's.
    let first_block = readme.split("```sh\n").nth(1).unwrap_or_default();
    assert!(
        first_block.starts_with(
            "cargo install --locked --path . && fault agent tool\ncargo test --locked\n```"
        ),
        "README.md's first block is not the two set-up commands"
    );
    let lines = readme.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines; at most 300");
}

#[test]
fn every_page_of_the_book_opens_in_chromium() {
    let test = "docs::book::every_page_of_the_book_opens_in_chromium";
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    let chromium = std::env::var_os("FAULT_TEST_CHROMIUM")
        .map(PathBuf::from)
        .or(chromium);
    let Some(chromium) = chromium else {
        return optional::skip(
            test,
            "no Chromium (apt-get install chromium, or set FAULT_TEST_CHROMIUM)",
        );
    };
    let python = match common::python_with(&["playwright"]) {
        Ok(python) => python,
        Err(why) => return optional::skip(test, &why),
    };
    let Some(book) = build(test) else {
        return;
    };
    let pages: Vec<String> = pages(book.path())
        .iter()
        .map(|p| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let script = repo().join("tests/suite/docs/browser/check_book.py");
    let sandbox = common::Sandbox::new("docs-book-browser");
    let _heavy = common::CPU_HEAVY.lock_blocking();
    let output = common::python_command(&python, &sandbox)
        .arg(script)
        .arg(&chromium)
        .arg(book.path())
        .args(&pages)
        .output()
        .expect("run the browser script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "browser script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let mut problems = Vec::new();
    let mut images = 0;
    for page in &pages {
        let page_seen = &seen[page.as_str()];
        images += page_seen["images"].as_u64().unwrap_or_default();
        for kind in [
            "console_errors",
            "failed_requests",
            "foreign_requests",
            "broken_images",
        ] {
            for item in page_seen[kind].as_array().into_iter().flatten() {
                problems.push(format!("{page}: {kind}: {item}"));
            }
        }
    }
    assert!(images >= 4, "only {images} images on the book's pages");
    assert!(
        problems.is_empty(),
        "{} problems in Chromium:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
