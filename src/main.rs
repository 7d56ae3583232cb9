use std::process::ExitCode;

fn main() -> ExitCode {
    // Syntax trees are built on two threads and freed on a third, which mimalloc does faster than glibc's
    // malloc (src/code/allocator.rs). SAFETY: the first thing the process does, on its only thread: no
    // tree-sitter object exists yet.
    unsafe { fault::code::allocator::use_mimalloc_for_syntax_trees() };
    fault::cli::main()
}
