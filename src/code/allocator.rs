//! tree-sitter's C library allocating with mimalloc; the rest of the process keeps the system allocator.
//!
//! A syntax tree is one allocation per node. A large file's two halves are parsed on two threads and their
//! trees freed on a third; glibc's malloc makes that cross-thread work slow (arena locks, consolidation),
//! mimalloc does not. The first listing of a 10,000-line file takes 4–20 % less time with it, for about the
//! same resident memory (docs/src/benchmarks.md, "The allocator").

use std::ffi::c_void;

use libmimalloc_sys::{mi_calloc, mi_free, mi_malloc, mi_realloc};

/// Makes tree-sitter allocate with mimalloc; without this call it uses the system allocator.
///
/// # Safety
/// Call it once, on one thread, before any tree-sitter object exists (first thing in `main`): a tree made
/// with one allocator must not be freed by the other.
pub unsafe fn use_mimalloc_for_syntax_trees() {
    let allocator = tree_sitter::Allocator {
        malloc,
        calloc,
        realloc,
        free: mi_free,
    };
    // SAFETY: mimalloc's functions, with malloc's alignment; none returns null (they abort, as tree-sitter's
    // defaults do); the caller makes this the first tree-sitter call.
    unsafe { tree_sitter::set_allocator(Some(allocator)) }
}

unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: any size may be asked.
    allocated(unsafe { mi_malloc(size) }, size)
}

unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: mimalloc checks `count * size` for overflow (null then).
    allocated(
        unsafe { mi_calloc(count, size) },
        count.saturating_mul(size),
    )
}

unsafe extern "C" fn realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: tree-sitter passes null or a pointer it got from these functions.
    allocated(unsafe { mi_realloc(pointer, size) }, size)
}

/// tree-sitter does not check for null: out of memory ends the process, as its own allocator does.
fn allocated(pointer: *mut c_void, size: usize) -> *mut c_void {
    if pointer.is_null() && size != 0 {
        eprintln!("fault: out of memory allocating {size} bytes for a syntax tree");
        std::process::abort();
    }
    pointer
}
