//! The eval binary's allocator with the feature `mimalloc`: mimalloc,
//! set to hand freed memory back at once.
//!
//! A played-back cell allocates often and briefly on many threads: under
//! glibc's allocator a fifth of its CPU time went to `malloc` and `free`.
//! mimalloc as it comes keeps freed pages for a while and commits its
//! arenas eagerly, which tripled a 10,000-cell run's peak memory; with
//! purging at once and arenas committed as they are used, the run's peak
//! is 0.6–1.9 MiB above glibc's (`benches/PERFORMANCE.md`).
//! `MIMALLOC_PURGE_DELAY` and `MIMALLOC_ARENA_EAGER_COMMIT` in the
//! environment still win.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};

use mimalloc::MiMalloc;

/// mimalloc, configured before its first allocation. What
/// `scaffold::main!()` makes the binary's `#[global_allocator]`.
pub struct Allocator;

/// Whether [`configure`] ran.
static CONFIGURED: AtomicBool = AtomicBool::new(false);

/// mimalloc 3's option numbers (`mi_option_e` in its `mimalloc.h`);
/// `tests/allocator.rs` checks the version they belong to.
const ARENA_EAGER_COMMIT: i32 = 4;
const PURGE_DELAY: i32 = 15;

unsafe extern "C" {
    fn mi_option_set(option: i32, value: std::ffi::c_long);
}

/// Set mimalloc's options the environment does not set. Allocates nothing
/// (it runs inside the first allocation); running twice is harmless.
fn configure() {
    for (option, name, value) in [
        (PURGE_DELAY, c"MIMALLOC_PURGE_DELAY", 0),
        (ARENA_EAGER_COMMIT, c"MIMALLOC_ARENA_EAGER_COMMIT", 0),
    ] {
        // SAFETY: getenv reads the environment without allocating; no
        // thread sets variables before the first allocation.
        let set = unsafe { !libc::getenv(name.as_ptr()).is_null() };
        if !set {
            // SAFETY: an option number of the linked mimalloc, a valid value.
            unsafe { mi_option_set(option, value) };
        }
    }
    CONFIGURED.store(true, Ordering::Release);
}

#[inline]
fn configured() {
    if !CONFIGURED.load(Ordering::Acquire) {
        configure();
    }
}

// SAFETY: every call goes to mimalloc's own, after `configured` (which
// neither allocates nor frees).
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        configured();
        unsafe { MiMalloc.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        configured();
        unsafe { MiMalloc.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
    }
}
