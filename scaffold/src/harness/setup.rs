//! What the suite's settings and definitions make of a process, read
//! before any cell is built.

use std::path::Path;
use std::sync::Arc;

use libtest_mimic::Arguments;

use super::budget::{self, Budget};
use super::cell_index::{CellIndex, IndexedCell, Lookup};
use super::settings::{self, Settings, check_variant_globs};
use super::suite::{build_evals, build_evals_for_cell};
use super::{
    ErasedEval, SetupError, check_keys, fake, fork, open_store, reports, results_dir, test_target,
    under_nextest, wanted_formats,
};
use crate::eval::CellEnv;
use crate::eval::gate::{self, GateOptions};
use crate::provider::bridge::BridgeHost;
use crate::provider::http::ReqwestTransport;
use crate::provider::recorder::{MODE_ENV, Playback, ProviderRecorder, RecorderMode};
use crate::provider::transport::{Transport, TransportError};
use crate::report::Format;
use crate::session::FORK_FROM_ENV;
use crate::store::Store;

/// What the suite's settings and definitions make of this process, read
/// before any cell is built.
pub(super) struct Setup {
    pub(super) mode: RecorderMode,
    /// The HTTP client for real APIs, built on a thread of its own meanwhile.
    pub(super) client: Option<std::thread::JoinHandle<Result<ReqwestTransport, TransportError>>>,
    pub(super) formats: Vec<Format>,
    pub(super) transcripts: reports::html::TranscriptSelection,
    pub(super) settings: Settings,
    pub(super) evals: Vec<Box<dyn ErasedEval>>,
    pub(super) budgets: Vec<Option<Arc<Budget>>>,
    /// The store and whether it is in memory; none when only listing.
    pub(super) store: Option<Store>,
    pub(super) in_memory: bool,
    pub(super) fork: Option<fork::ForkPlan>,
    pub(super) gate_options: Vec<GateOptions>,
    /// `SCAFFOLD_FAKE`'s rules, which answer every provider call.
    pub(super) fake: Option<fake::FakeRules>,
    /// The one cell this process runs, as the run's index has it.
    pub(super) one_cell: Option<IndexedCell>,
    /// Where this process keeps the run's index of the suite's cells, when
    /// it built the whole suite in a nextest run.
    pub(super) index: Option<CellIndex>,
}

impl Setup {
    /// Read the settings, build the evals and open the store.
    pub(super) fn load(manifest_dir: &Path, args: &Arguments) -> Result<Setup, SetupError> {
        let line = SetupError::Line;
        let mode = RecorderMode::from_env().map_err(|e| line(e.to_string()))?;
        // Calls to real APIs run on the harness's runtime, which the cells run
        // on too, rather than a hop to the shared client's one-thread background
        // runtime (at concurrency 32 that one thread serialized every wave's
        // HTTP work). Playback stays there: its local server answers at once,
        // and the hop keeps each exchange on one thread (7% less CPU at 2,000
        // cells). The client (some milliseconds: TLS roots, proxies) is built
        // while the suite sets up; if it cannot be, the background one reports
        // why on the first call.
        let client = (!args.list && mode != RecorderMode::Playback)
            .then(|| std::thread::spawn(ReqwestTransport::new));
        // The store (a new file: its schema and syncs, some milliseconds)
        // opens while the datasets are read; a suite that fails to build is
        // reported first, as before.
        let store = (!args.list).then(|| {
            let dir = manifest_dir.to_path_buf();
            std::thread::spawn(move || open_store(&dir))
        });
        let formats = wanted_formats().map_err(line)?;
        let transcripts =
            reports::html::TranscriptSelection::from_env().map_err(|e| line(e.to_string()))?;
        let settings = Settings::from_env(manifest_dir).map_err(line)?;
        let fake = fake::FakeRules::from_env(manifest_dir, mode).map_err(line)?;
        // Each process of a nextest run loads the datasets: all but the first
        // read them back from here rather than parse them again.
        crate::dataset::cache::keep_in(results_dir(manifest_dir).join("datasets"), under_nextest());
        // A process of a nextest run that the run's index tells its cell
        // builds that cell alone; the first to build the whole suite keeps
        // the index for the others.
        let index = CellIndex::of_run(&results_dir(manifest_dir).join("cells"), manifest_dir)
            .filter(|_| settings.resume.is_none() && std::env::var_os(FORK_FROM_ENV).is_none());
        let (mut evals, one_cell, keep_index) = match indexed_cell(index.as_ref(), args, &settings)
        {
            Indexed::Cell(evals, cell) => (evals, Some(cell), false),
            found => {
                let mut evals = build_evals(manifest_dir).map_err(SetupError::Suite)?;
                apply_settings(&settings, &mut evals).map_err(line)?;
                // A test the index reads and has no cell of keeps it as it is.
                (evals, None, !matches!(found, Indexed::NotACell))
            }
        };
        let index = index.filter(|_| keep_index);
        let budgets = budget::budgets(settings.max_cost, &evals);
        if mode == RecorderMode::Record && fake.is_none() && !args.list {
            check_keys(&evals, settings.variants.as_deref()).map_err(line)?;
        }
        let (store, in_memory) = match store {
            None => (None, false),
            Some(opening) => opening
                .join()
                .unwrap_or_else(|_| Err("opening it panicked".into()))
                .map(|(store, in_memory)| (Some(store), in_memory))
                .map_err(|e| line(format!("session store: {e}")))?,
        };
        let fork = fork::plan(manifest_dir, &mut evals, store.as_ref()).map_err(line)?;
        if let Some(fork) = fork.as_ref().filter(|_| !args.list) {
            eprintln!("{}", fork.banner);
        }
        let mut gate_options = gate_options(manifest_dir, &evals).map_err(line)?;
        for options in gate_options.iter_mut() {
            options.strict |= settings.strict;
        }
        Ok(Setup {
            mode,
            client,
            formats,
            transcripts,
            settings,
            evals,
            budgets,
            store,
            in_memory,
            fork,
            gate_options,
            fake,
            one_cell,
            index,
        })
    }

    /// The environment of each eval's cells: its store and a recorder on
    /// its recordings folder, playing back on `playback`.
    /// One environment per eval; their recorders play back on `playback`
    /// and send real calls through `client` (else the shared one).
    pub(super) fn cell_envs(
        &self,
        (manifest_dir, source): (&Path, &Path),
        playback: &Playback,
        client: Option<&Arc<dyn Transport>>,
    ) -> Vec<CellEnv> {
        // One server for the run's bridged agents (started by the first).
        let bridges = BridgeHost::new();
        // The default re-record command runs this suite's own test target.
        let target = std::env::current_exe()
            .ok()
            .and_then(|exe| test_target(&exe, source));
        self.evals
            .iter()
            .map(|eval| {
                let dir = eval
                    .recordings_dir()
                    .map(|d| manifest_dir.join(d))
                    .unwrap_or_else(|| manifest_dir.join("evals").join("recordings"));
                // `SCAFFOLD_RECORD` was checked with `SCAFFOLD_MODE`.
                let policy =
                    crate::provider::recorder::RecordPolicy::from_env().unwrap_or_default();
                let mut recorder = ProviderRecorder::new(dir, self.mode)
                    .record_policy(policy)
                    .playback(playback.clone())
                    .match_requests(eval.match_rules());
                if let Some(client) = client {
                    recorder = recorder.inner(client.clone());
                }
                let command = match (eval.rerecord_command(), &target) {
                    (Some(command), _) => Some(command.to_string()),
                    (None, target) => {
                        (target.is_some() || self.settings.trials.is_some()).then(|| {
                            let target = target.as_deref().unwrap_or("evals");
                            format!("{MODE_ENV}=record cargo test --test {target} -- {{filter}}")
                        })
                    }
                };
                if let Some(command) = command {
                    recorder =
                        recorder.rerecord_command(with_trials(command, self.settings.trials));
                }
                CellEnv {
                    store: self.store.clone(),
                    transport: Some(recorder.transport()),
                    virtual_time: self.mode == RecorderMode::Playback,
                    tools: Some(recorder.tools()),
                    recorder: Some(recorder),
                    bridges: Some(bridges.clone()),
                }
            })
            .collect()
    }
}

/// The re-record command `command`, with `SCAFFOLD_TRIALS` when it set the
/// trials: without it, the trials beyond the eval's own have no cells to
/// record.
fn with_trials(command: String, trials: Option<u32>) -> String {
    match trials {
        Some(n) => format!("{}={n} {command}", settings::TRIALS_ENV),
        None => command,
    }
}

/// Apply `SCAFFOLD_TRIALS` to `evals` and check `SCAFFOLD_VARIANTS` names
/// some of their variants.
fn apply_settings(settings: &Settings, evals: &mut [Box<dyn ErasedEval>]) -> Result<(), String> {
    if let Some(trials) = settings.trials {
        for eval in evals.iter_mut() {
            eval.set_trials(trials);
        }
    }
    let Some(globs) = &settings.variants else {
        return Ok(());
    };
    let all: Vec<(String, String)> = evals
        .iter()
        .flat_map(|e| {
            let eval = e.name().to_string();
            e.variant_names()
                .into_iter()
                .map(move |v| (eval.clone(), v))
        })
        .collect();
    check_variant_globs(globs, &all)
}

/// Per eval, its gate options with the quarantine of `evals/quarantine.yaml` added.
fn gate_options(
    manifest_dir: &Path,
    evals: &[Box<dyn ErasedEval>],
) -> Result<Vec<GateOptions>, String> {
    let quarantine = gate::load_quarantine(manifest_dir.join(gate::QUARANTINE_FILE))
        .map_err(|e| format!("quarantine: {e}"))?;
    Ok(evals
        .iter()
        .map(|eval| {
            let mut options = eval.gate_options();
            options
                .quarantine
                .extend(quarantine.get(eval.name()).into_iter().flatten().cloned());
            options
        })
        .collect())
}

/// What the run's index makes of this process.
enum Indexed {
    /// The cell `NAME --exact` names, and the suite built for it alone.
    Cell(Vec<Box<dyn ErasedEval>>, IndexedCell),
    /// The index reads and has no such cell.
    NotACell,
    /// No index to use: none, one that does not read, one this suite does
    /// not match, or a process that runs more than one test.
    None,
}

/// The cell `NAME --exact` names, as the run's `index` has it, and the
/// suite built for it alone (settings applied), if the suite built here
/// gives that cell at that place.
fn indexed_cell(index: Option<&CellIndex>, args: &Arguments, settings: &Settings) -> Indexed {
    let name = args.filter.as_deref().filter(|_| args.exact && !args.list);
    let (Some(index), Some(name)) = (index, name) else {
        return Indexed::None;
    };
    let (cell, dataset) = match index.find(name) {
        Lookup::Cell(found) => *found,
        Lookup::NotACell => return Indexed::NotACell,
        Lookup::NoIndex => return Indexed::None,
    };
    let Some(mut evals) = build_evals_for_cell(&cell, dataset) else {
        return Indexed::None;
    };
    let same = apply_settings(settings, &mut evals).is_ok()
        && evals
            .get(cell.eval)
            .and_then(|eval| eval.cell_id(cell.within))
            .is_some_and(|id| id.to_string() == cell.name);
    match same {
        true => Indexed::Cell(evals, cell),
        false => Indexed::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rerecord_command_sets_the_trials_scaffold_trials_set() {
        let command = "cargo run --example record".to_string();
        assert_eq!(
            with_trials(command.clone(), Some(5)),
            "SCAFFOLD_TRIALS=5 cargo run --example record"
        );
        assert_eq!(with_trials(command.clone(), None), command);
    }
}
