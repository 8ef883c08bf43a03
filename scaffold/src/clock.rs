//! Where a run's durations and timestamps come from.
//!
//! A live or recording run measures real time. A played-back run keeps
//! **virtual time**: it starts at zero and moves only by what the recordings
//! say (each exchange's recorded duration and first byte, each recorded
//! retry wait, each recorded tool call's duration), so every figure it
//! reports is the same run after run, whatever the machine's load, the
//! thread count or the test runner. Work that is not recorded (unrecorded
//! tools, scoring, the harness itself) takes no virtual time.
//!
//! ```
//! use std::time::Duration;
//! use scaffold::clock::Clock;
//!
//! let clock = Clock::virtual_time();
//! assert_eq!(clock.elapsed_ms(), 0);
//! clock.advance(Duration::from_millis(120));
//! assert_eq!(clock.elapsed_ms(), 120);
//!
//! // A real clock ignores what a recording says.
//! let real = Clock::real();
//! real.advance(Duration::from_secs(60));
//! assert!(real.elapsed_ms() < 60_000);
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The time source of one run; clones share it.
#[derive(Clone)]
pub struct Clock(Arc<Kind>);

enum Kind {
    /// Real time since the clock was made, plus the milliseconds of
    /// recorded time credited to it ([`Clock::credit`]).
    Real(Instant, AtomicU64),
    /// Milliseconds the recordings have accounted for so far.
    Virtual(AtomicU64),
}

impl Clock {
    /// A clock that measures real time from now.
    pub fn real() -> Clock {
        Clock(Arc::new(Kind::Real(Instant::now(), AtomicU64::new(0))))
    }

    /// A clock at zero that moves only by [`Clock::advance`]: playback's.
    pub fn virtual_time() -> Clock {
        Clock(Arc::new(Kind::Virtual(AtomicU64::new(0))))
    }

    /// Whether this is a virtual clock.
    pub fn is_virtual(&self) -> bool {
        matches!(*self.0, Kind::Virtual(_))
    }

    /// Time since the clock started.
    pub fn elapsed(&self) -> Duration {
        match &*self.0 {
            Kind::Real(started, credited) => {
                started.elapsed() + Duration::from_millis(credited.load(Ordering::Relaxed))
            }
            Kind::Virtual(ms) => Duration::from_millis(ms.load(Ordering::Relaxed)),
        }
    }

    /// [`Clock::elapsed`] in whole milliseconds.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Count `by` of recorded time: moves a virtual clock, leaves a real one
    /// alone (real time passes by itself).
    pub fn advance(&self, by: Duration) {
        if let Kind::Virtual(ms) = &*self.0 {
            add(ms, by);
        }
    }

    /// Count `by` of recorded time that did not pass here, on either kind
    /// of clock: record mode answering a call from its recording (or
    /// taking a fake server's simulated timing) moves a real clock by the
    /// recorded time too, so the run's figures are the recordings'.
    pub fn credit(&self, by: Duration) {
        match &*self.0 {
            Kind::Virtual(ms) | Kind::Real(_, ms) => add(ms, by),
        }
    }
}

/// Add `by` to `ms`, saturating: a corrupt recording cannot wrap the clock
/// around.
fn add(ms: &AtomicU64, by: Duration) {
    let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
    let _ = ms.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        Some(now.saturating_add(by))
    });
}

impl Default for Clock {
    /// A real clock started now.
    fn default() -> Self {
        Clock::real()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_virtual() { "virtual" } else { "real" };
        write!(f, "Clock({kind}, {} ms)", self.elapsed_ms())
    }
}

impl PartialEq for Clock {
    /// Two handles of one clock.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_time_moves_only_when_told_and_never_wraps() {
        let clock = Clock::virtual_time();
        let shared = clock.clone();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(clock.elapsed_ms(), 0);
        shared.advance(Duration::from_millis(7));
        assert_eq!(clock.elapsed_ms(), 7);
        clock.advance(Duration::from_millis(u64::MAX));
        assert_eq!(clock.elapsed_ms(), u64::MAX);
        assert!(clock.is_virtual() && clock == shared && clock != Clock::virtual_time());
    }

    #[test]
    fn real_time_ignores_recorded_durations() {
        let clock = Clock::real();
        clock.advance(Duration::from_secs(3600));
        assert!(!clock.is_virtual());
        assert!(clock.elapsed() < Duration::from_secs(3600));
    }

    #[test]
    fn credited_time_moves_either_clock() {
        let real = Clock::real();
        real.credit(Duration::from_secs(3600));
        assert!(real.elapsed() >= Duration::from_secs(3600));
        let virtual_clock = Clock::virtual_time();
        virtual_clock.credit(Duration::from_millis(9));
        assert_eq!(virtual_clock.elapsed_ms(), 9);
    }
}
