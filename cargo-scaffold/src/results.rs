//! Reading results documents: `{eval}.json` files, or directories of them.

use std::path::{Path, PathBuf};

use scaffold::_cargo_scaffold_support::eval::EvalResults;

use crate::cli::ResultsArg;
use crate::error::CliError;
use crate::paths;
use crate::store;

/// One results document and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file.
    pub path: PathBuf,
    /// Its results.
    pub results: EvalResults,
}

/// The results `--results` or `--run` name (the default results directory
/// when neither is given).
pub fn load_source(source: &ResultsArg) -> Result<Vec<Loaded>, CliError> {
    match &source.run {
        Some(run) => from_run(source.database.as_deref(), run),
        None => load_arg(source.results.as_deref(), "--results"),
    }
}

/// The results of eval run `run` (an id, a unique prefix or `latest`) of
/// the database, one document per eval, rebuilt from its recorded cells.
pub fn from_run(database: Option<&Path>, run: &str) -> Result<Vec<Loaded>, CliError> {
    let db = store::open(database)?;
    let record = store::eval_run(&db.store, run)?;
    let mut results = db.store.eval_results(&record.id).map_err(store::error)?;
    // An eval planned but not begun has results without cells.
    if results.iter().all(|r| r.results.is_empty()) {
        return Err(CliError::input(format!(
            "eval run {} in {} has no finished cell yet: nothing to show (see `cargo scaffold runs list`)",
            record.id,
            db.path.display()
        )));
    }
    eprintln!(
        "Run: {} ({}, {}, {} of {} cells passed)",
        record.id,
        record.origin,
        if record.finished {
            "finished"
        } else {
            "not finished"
        },
        record.passed,
        record.cells
    );
    results.sort_by(|a, b| a.eval.cmp(&b.eval));
    Ok(results
        .into_iter()
        .map(|results| Loaded {
            path: db.path.clone(),
            results,
        })
        .collect())
}

/// The results at `path` (`flag` names the option, for messages), or in the
/// default results directory when `path` is `None`.
pub fn load_arg(path: Option<&Path>, flag: &str) -> Result<Vec<Loaded>, CliError> {
    match path {
        Some(p) => load(p, flag),
        None => {
            let dir = paths::default_results_dir();
            if !dir.is_dir() {
                return Err(CliError::input(format!(
                    "no results at {} (the default): run the evals first (`cargo scaffold run`) or pass {flag} FILE|DIR",
                    dir.display()
                )));
            }
            load(&dir, flag)
        }
    }
}

/// The results at `path`: one `{eval}.json`, or every `*.json` of a
/// directory but the `*.comparison.json` files, sorted by eval.
pub fn load(path: &Path, flag: &str) -> Result<Vec<Loaded>, CliError> {
    if path.is_dir() {
        let mut out = Vec::new();
        for file in results_files(path)? {
            out.push(load_file(&file)?);
        }
        if out.is_empty() {
            return Err(CliError::input(format!(
                "{flag} {}: the directory holds no results JSON ({{eval}}.json)",
                path.display()
            )));
        }
        out.sort_by(|a, b| a.results.eval.cmp(&b.results.eval));
        for pair in out.windows(2) {
            if pair[0].results.eval == pair[1].results.eval {
                return Err(CliError::input(format!(
                    "{} and {} both hold eval `{}`: keep one, or merge shards with `cargo scaffold merge`",
                    pair[0].path.display(),
                    pair[1].path.display(),
                    pair[0].results.eval
                )));
            }
        }
        Ok(out)
    } else if path.exists() {
        Ok(vec![load_file(path)?])
    } else {
        Err(CliError::input(format!(
            "{flag} {}: no such file or directory",
            path.display()
        )))
    }
}

fn load_file(path: &Path) -> Result<Loaded, CliError> {
    EvalResults::load(path)
        .map(|results| Loaded {
            path: path.to_path_buf(),
            results,
        })
        .map_err(|e| CliError::input(e.to_string()))
}

/// The results files of a directory, sorted by name.
fn results_files(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        CliError::input(format!("cannot read the directory {}: {e}", dir.display()))
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_results_name(p))
        .collect();
    files.sort();
    Ok(files)
}

fn is_results_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json") && !name.ends_with(".comparison.json")
}

/// A baseline: one results file (for the eval it holds) or a directory of
/// `{eval}.json`.
#[derive(Debug)]
pub enum Baseline {
    /// One document.
    File(Box<Loaded>),
    /// A directory.
    Dir(PathBuf),
}

/// What a baseline holds for one eval.
#[derive(Debug)]
pub enum BaselineFor {
    /// Its results.
    Found(Box<Loaded>),
    /// Nothing for this eval; why, in words.
    Missing(String),
}

impl Baseline {
    /// Open the baseline at `path` (checked now, so that a typo fails before work starts).
    pub fn open(path: &Path, flag: &str) -> Result<Baseline, CliError> {
        if path.is_dir() {
            Ok(Baseline::Dir(path.to_path_buf()))
        } else if path.exists() {
            Ok(Baseline::File(Box::new(load_file(path)?)))
        } else {
            Err(CliError::input(format!(
                "{flag} {}: no such file or directory",
                path.display()
            )))
        }
    }

    /// The baseline of eval `eval`.
    pub fn for_eval(&self, eval: &str) -> Result<BaselineFor, CliError> {
        match self {
            Baseline::File(loaded) if loaded.results.eval == eval => {
                Ok(BaselineFor::Found(loaded.clone()))
            }
            Baseline::File(loaded) => Ok(BaselineFor::Missing(format!(
                "{} holds eval `{}`, not `{eval}`",
                loaded.path.display(),
                loaded.results.eval
            ))),
            Baseline::Dir(dir) => {
                let path = dir.join(format!("{eval}.json"));
                if path.is_file() {
                    Ok(BaselineFor::Found(Box::new(load_file(&path)?)))
                } else {
                    Ok(BaselineFor::Missing(format!("no {}", path.display())))
                }
            }
        }
    }
}
