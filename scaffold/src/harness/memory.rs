//! Resident memory over a long run.
//!
//! glibc's allocator keeps the pages that cells free for later: each cell's
//! short-lived buffers (HTTP bodies, signals, JSON) land between the
//! summaries of earlier cells, and resident memory creeps up with the cells
//! though the live heap does not. [`Trim`] hands the free pages back every
//! [`TRIM_EVERY`] cells (`malloc_trim`, which also releases free pages in
//! the middle of a heap), and costs well under a millisecond each time.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many finished cells between two trims.
pub(crate) const TRIM_EVERY: usize = 256;

/// Counts finished cells and trims the allocator every [`TRIM_EVERY`].
#[derive(Debug, Default)]
pub(crate) struct Trim {
    cells: AtomicUsize,
}

impl Trim {
    /// One more cell finished.
    pub(crate) fn cell_finished(&self) {
        if self.cells.fetch_add(1, Ordering::Relaxed) % TRIM_EVERY == TRIM_EVERY - 1 {
            release_free_memory();
        }
    }

    /// Before the summary, which is the run's peak: trim if at least
    /// [`TRIM_EVERY`] cells finished (a trim walks every thread's arena,
    /// 2–3 ms with a live run's 32 threads, for the little a few cells
    /// leave free); whether it did.
    pub(crate) fn before_summary(&self) -> bool {
        let many = self.cells.load(Ordering::Relaxed) >= TRIM_EVERY;
        if many {
            release_free_memory();
        }
        many
    }
}

/// Drop `value` on a thread of its own, which the process does not wait
/// for: what a run let go of at its end (its results, some megabytes of
/// small allocations) is freed while the harness shuts down, not before
/// it, and not at all when the process exits first. Dropped here when no
/// thread can be had.
pub(crate) fn drop_aside<T: Send + 'static>(value: T) {
    // A thread that cannot start drops its closure, and `value`, here.
    let _ = std::thread::Builder::new()
        .name("scaffold-drop".into())
        .spawn(move || drop(value));
}

/// Give the allocator's free pages back to the system, where the allocator
/// keeps them (glibc); a no-op elsewhere.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim only walks glibc's own heaps, under their locks.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod drop_tests {
    use super::drop_aside;
    use std::sync::mpsc;

    /// Tells, when dropped, on which thread.
    struct Tell(mpsc::Sender<std::thread::ThreadId>);

    impl Drop for Tell {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }

    #[test]
    fn what_is_dropped_aside_is_dropped_on_another_thread() {
        let (tell, told) = mpsc::channel();
        drop_aside(Tell(tell));
        let on = told
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("never dropped");
        assert_ne!(on, std::thread::current().id());
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    fn resident_anon_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("RssAnon:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0)
    }

    #[test]
    fn only_a_run_of_many_cells_is_trimmed_before_its_summary() {
        let trim = Trim::default();
        for _ in 1..TRIM_EVERY {
            trim.cell_finished();
        }
        assert!(!trim.before_summary(), "{} cells", TRIM_EVERY - 1);
        trim.cell_finished();
        assert!(trim.before_summary(), "{TRIM_EVERY} cells");
    }

    /// Set in the child process the test below runs its measurement in.
    const ALONE: &str = "SCAFFOLD_MEMORY_TEST_ALONE";

    /// Resident memory is the whole process's: the other tests of this
    /// binary, allocating on their threads meanwhile, would blur it. The
    /// test runs itself again in a process of its own.
    #[test]
    fn freed_pages_between_live_blocks_go_back_to_the_system() {
        if std::env::var_os(ALONE).is_some() {
            return measure_a_trim();
        }
        let name = "harness::memory::tests::freed_pages_between_live_blocks_go_back_to_the_system";
        let exe = std::env::current_exe().expect("the test binary's path");
        let out = std::process::Command::new(exe)
            .args([name, "--exact", "--nocapture", "--test-threads", "1"])
            .env(ALONE, "1")
            .output()
            .expect("run the test binary again");
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("1 passed"),
            "the measurement did not run:\n{text}"
        );
    }

    fn measure_a_trim() {
        // 64 MiB of 16 KiB buffers, each followed by a small block that stays:
        // once the buffers are freed, nothing at the top of the heap is free,
        // so glibc keeps their pages until it is asked to trim.
        let mut kept = Vec::new();
        let mut freed = Vec::new();
        for i in 0..4096u32 {
            let mut buffer = vec![1u8; 16 * 1024];
            buffer[i as usize] = 2;
            freed.push(buffer);
            kept.push(Box::new(i));
        }
        drop(freed);
        let before = resident_anon_kib();
        release_free_memory();
        let after = resident_anon_kib();
        assert!(
            before.saturating_sub(after) > 32 * 1024,
            "resident anonymous memory {before} KiB before the trim, {after} KiB after"
        );
        assert_eq!(kept.len(), 4096);
    }
}
