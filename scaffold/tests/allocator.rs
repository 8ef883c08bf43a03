//! The allocator `scaffold::main!()` gives the eval binary with the feature
//! `mimalloc` (`.ci/run` runs this test with it): what it expands, here in
//! a binary of its own (the library's unit tests keep glibc's, whose
//! trimming `harness::memory` tests).

scaffold::__global_allocator!();

#[cfg(feature = "mimalloc")]
mod mimalloc {
    use std::ffi::{c_int, c_long, c_void};

    unsafe extern "C" {
        fn mi_is_in_heap_region(p: *const c_void) -> bool;
        fn mi_version() -> c_int;
        fn mi_option_get(option: c_int) -> c_long;
    }

    #[test]
    fn the_eval_binary_allocates_with_mimalloc() {
        let boxed = Box::new([7u8; 64]);
        let grown: Vec<u64> = (0..1000).collect();
        let local = 5u8;
        // SAFETY: the function only compares addresses with mimalloc's regions.
        unsafe {
            assert!(mi_is_in_heap_region(boxed.as_ptr().cast()));
            assert!(mi_is_in_heap_region(grown.as_ptr().cast()));
            // A stack address is on no heap: the check can say no.
            assert!(!mi_is_in_heap_region((&raw const local).cast()));
        }
    }

    /// The option numbers `harness::allocator` sets are mimalloc 3's; a
    /// new major version must have them checked again.
    #[test]
    fn freed_memory_goes_back_at_once_and_arenas_are_committed_as_used() {
        let _ = Box::new(1u8);
        // SAFETY: plain reads of mimalloc's version and options.
        let (version, eager, purge) =
            unsafe { (mi_version(), mi_option_get(4), mi_option_get(15)) };
        // `MI_MALLOC_VERSION`: 30302 is 3.3.2.
        assert!((30_000..40_000).contains(&version), "mimalloc {version}");
        assert_eq!((eager, purge), (0, 0), "arena_eager_commit, purge_delay");
    }
}
