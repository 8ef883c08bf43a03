//! Which threads the scheduler runs first while cells wait on the network.
//!
//! In live and record runs a cell spends nearly all its time waiting for
//! its provider, and the answers of a wave of calls arrive together: then
//! every cell's own work (the answer parsed, assertions, the snapshot) asks
//! for the CPUs at once, beside the stages every cell waits on, the store's
//! writer that commits each cell's record and the runtime's HTTP workers.
//! Given an equal share among thirty-odd threads, those stages fall behind
//! and each cell waits longer for its commit before its thread starts the
//! next call. So each cell thread lowers its own scheduling priority
//! ([`CELL_NICENESS`] above the process's, Linux only) when it starts a
//! cell, and keeps it (the thread runs nothing but tests): the shared
//! stages run first. Playback is left alone: its cells are bound
//! by the CPUs rather than the network, and a writer that runs first commits
//! fewer cells at a time (more work a cell). A process a cell starts (a
//! bridged agent's command) inherits its thread's priority, as the cell's
//! own work.

use crate::provider::recorder::RecorderMode;

/// How much lower (in `nice` steps) a cell thread runs than the process:
/// a third of the CPU share of the threads it waits on.
pub(super) const CELL_NICENESS: i32 = 5;

/// The lowest priority there is (Linux clamps higher values to it).
const LOWEST: i32 = 19;

/// Whether, and to what, cell threads lower their priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CellPriority {
    /// The niceness of a cell thread; none to leave threads as they are.
    niceness: Option<i32>,
}

impl CellPriority {
    /// For a run in `mode` with `test_threads` cells at once: lowered in
    /// live and record runs of several threads (with one thread the cells
    /// run on the main thread, which also writes the summary), relative to
    /// the calling thread's niceness.
    pub(super) fn for_run(mode: RecorderMode, test_threads: usize) -> CellPriority {
        let lower = mode != RecorderMode::Playback && test_threads > 1;
        CellPriority {
            niceness: lower
                .then(|| current_niceness().map(|n| (n + CELL_NICENESS).min(LOWEST)))
                .flatten(),
        }
    }

    /// On a cell's thread, before the cell runs: set the thread's niceness.
    /// Setting the same value again is allowed to any user, so this is
    /// called for every cell rather than remembered per thread. A failure
    /// leaves the thread as it was.
    pub(super) fn enter(&self) {
        if let Some(niceness) = self.niceness {
            set_current_niceness(niceness);
        }
    }
}

/// The calling thread's niceness; none where threads have none of their own.
fn current_niceness() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpriority reads the calling thread's (`who` 0) niceness;
        // -1 is also a valid niceness, so errno tells a failure apart.
        unsafe {
            *libc::__errno_location() = 0;
            let n = libc::getpriority(libc::PRIO_PROCESS, 0);
            (n != -1 || *libc::__errno_location() == 0).then_some(n)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Set the calling thread's niceness (on Linux `PRIO_PROCESS` with a
/// thread's id sets that thread's alone).
fn set_current_niceness(niceness: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority only changes the calling thread's scheduling.
        unsafe {
            let thread = libc::gettid() as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, thread, niceness);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = niceness;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn live_and_record_runs_lower_their_cell_threads_and_playback_does_not() {
        let base = current_niceness().unwrap();
        let lowered = Some((base + CELL_NICENESS).min(LOWEST));
        for (mode, threads, niceness) in [
            (RecorderMode::Live, 32, lowered),
            (RecorderMode::Record, 4, lowered),
            (RecorderMode::Live, 1, None),
            (RecorderMode::Playback, 16, None),
        ] {
            assert_eq!(
                CellPriority::for_run(mode, threads),
                CellPriority { niceness },
                "{mode:?} with {threads} threads"
            );
        }
    }

    #[test]
    fn entering_a_cell_lowers_its_thread_alone_and_again_changes_nothing() {
        let base = current_niceness().unwrap();
        let priority = CellPriority::for_run(RecorderMode::Live, 2);
        let on_cell_thread = std::thread::spawn(move || {
            priority.enter();
            let first = current_niceness();
            priority.enter();
            (first, current_niceness())
        })
        .join()
        .unwrap();
        let lowered = Some((base + CELL_NICENESS).min(LOWEST));
        assert_eq!(on_cell_thread, (lowered, lowered));
        assert_eq!(
            current_niceness(),
            Some(base),
            "the calling thread is left alone"
        );
        let unchanged = std::thread::spawn(|| {
            CellPriority::for_run(RecorderMode::Playback, 2).enter();
            current_niceness()
        })
        .join()
        .unwrap();
        assert_eq!(unchanged, Some(base));
    }
}
