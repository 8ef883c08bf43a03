//! The crate's integration tests that can share one process, as modules of
//! one test binary (each binary links the whole crate: one link instead of
//! thirteen). Run one of them with `cargo test -p scaffold-evals --test all -- store::`.
//!
//! Their own binaries, next to this directory: the `harness = false` suites
//! (`baseline_gate`, `flaky_gate`, `insta_cargo`), `macros` (trybuild and
//! `inventory` registrations), and the tests that change process-wide state
//! while they run: environment variables (`providers`, `scorers`), or
//! that re-run their own
//! binary with a test's exact name (`recorder`), and `session`, whose
//! messages name its types by path (`session::Build`, not
//! `all::session::Build`).

mod assertions;
mod bridge;
mod bridge_command;
mod browser;
mod compare;
mod datasets;
mod eval_cells;
mod eval_runs;
mod fake_provider;
mod fake_responses;
mod record_modes;
mod record_playback;
mod reports;
mod secrets;
mod stats;
mod store;
mod transcript;
mod trials;
mod untrusted;
mod workflow;
