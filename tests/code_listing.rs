//! Function listing per language on fixtures that hold every category.

use std::path::PathBuf;

use fault::code::{self, FunctionInfo};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/code")
        .join(name)
}

fn listing(name: &str) -> Vec<FunctionInfo> {
    code::list_functions(&fixture(name)).unwrap()
}

#[test]
fn dump() {
    for f in ["sample.py", "sample.go", "sample.rs", "sample.js"] {
        println!("== {f}");
        for i in listing(f) {
            println!(
                "{:?} {} {} {}-{}",
                i.kind, i.name, i.qualified_name, i.start_line, i.end_line
            );
        }
    }
}
