//! A one-line progress bar on stderr for long eval runs.
//!
//! Shown only when stderr is a terminal, not under nextest or CI, and
//! `SCAFFOLD_PROGRESS` is not `0`; drawn first after a second (short runs
//! never see it) and at most ten times a second. The test harness prints
//! its own `test … ok` lines on stdout, usually the same terminal: the bar
//! returns the cursor to the start of the line and is never wider than
//! those lines, so each of them overwrites it completely. With one test
//! thread or terse/JSON test output the harness does not show it at all.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Environment variable: `0` hides the progress bar.
pub const PROGRESS_ENV: &str = "SCAFFOLD_PROGRESS";

/// Whether a progress bar may be shown in this process: stderr is a
/// terminal, not under nextest or CI, and `SCAFFOLD_PROGRESS` is not `0`.
pub fn allowed() -> bool {
    let off = std::env::var(PROGRESS_ENV).is_ok_and(|v| v.trim() == "0");
    let nextest =
        std::env::var_os("NEXTEST_RUN_ID").is_some() || std::env::var_os("NEXTEST").is_some();
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    !off && !nextest && !ci && std::io::stderr().is_terminal()
}

#[derive(Debug)]
struct State {
    done: usize,
    failed: usize,
    last_draw: Option<Instant>,
    drawn: bool,
}

/// A progress bar over `total` cells (its lines: the test below).
#[derive(Debug)]
pub struct Progress {
    total: usize,
    width: usize,
    started: Instant,
    delay: Duration,
    state: Mutex<State>,
}

impl Progress {
    /// A bar over `total` cells, never wider than `max_width` characters.
    pub fn new(total: usize, max_width: usize) -> Progress {
        Progress {
            total,
            width: max_width,
            started: Instant::now(),
            delay: Duration::from_secs(1),
            state: Mutex::new(State {
                done: 0,
                failed: 0,
                last_draw: None,
                drawn: false,
            }),
        }
    }

    /// The bar's text after `done` cells, `failed` of them failing, in `elapsed`.
    pub fn line(&self, done: usize, failed: usize, elapsed: Duration) -> String {
        let clock = |d: Duration| {
            let s = d.as_secs();
            if s >= 3600 {
                format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
            } else {
                format!("{}:{:02}", s / 60, s % 60)
            }
        };
        let total = self.total.max(1);
        let mut info = format!("{done}/{} cells", self.total);
        if failed > 0 {
            info.push_str(&format!(" · {failed} failed"));
        }
        info.push_str(&format!(" · {}", clock(elapsed)));
        if done > 0 && done < self.total {
            let left = elapsed.mul_f64((self.total - done) as f64 / done as f64);
            info.push_str(&format!(" · ~{} left", clock(left)));
        }
        // The bar gives way to the numbers when the line is short.
        let room = self.width.saturating_sub(info.chars().count() + 3).min(24);
        let line = if room >= 6 {
            let filled = (done.min(total) * room) / total;
            format!(
                "[{}{}] {info}",
                "#".repeat(filled),
                "·".repeat(room - filled)
            )
        } else {
            info
        };
        line.chars().take(self.width).collect()
    }

    /// One more cell finished.
    pub fn tick(&self, failed: bool) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        st.done += 1;
        st.failed += usize::from(failed);
        let elapsed = self.started.elapsed();
        let due = st
            .last_draw
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
        if elapsed < self.delay || !due || self.width < 10 {
            return;
        }
        let line = self.line(st.done, st.failed, elapsed);
        // Hold stdout so the bar never lands inside a line being written.
        let _stdout = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}\r");
        let _ = err.flush();
        st.last_draw = Some(Instant::now());
        st.drawn = true;
    }

    /// Clear the bar if it is on screen.
    pub fn finish(&self) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        if st.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            st.drawn = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Progress;
    use std::time::Duration;

    #[test]
    fn the_bar_shrinks_then_goes_and_the_numbers_stay() {
        let p = Progress::new(200, 80);
        assert_eq!(
            p.line(50, 2, Duration::from_secs(10)),
            "[######··················] 50/200 cells · 2 failed · 0:10 · ~0:30 left"
        );
        assert_eq!(
            Progress::new(200, 50).line(50, 0, Duration::from_secs(10)),
            "[###············] 50/200 cells · 0:10 · ~0:30 left"
        );
        assert_eq!(
            Progress::new(200, 36).line(50, 0, Duration::from_secs(10)),
            "50/200 cells · 0:10 · ~0:30 left"
        );
    }
}
