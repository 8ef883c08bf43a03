//! The suite: every registered eval built with its variants, datasets and
//! scorers, each mistake where it was registered.

use std::collections::HashMap;
use std::path::Path;

use super::cell_index::IndexedCell;
use super::erased::{self, ErasedEval};
use super::{DatasetRegistration, EvalRegistration, ScorerRegistration, VariantRegistration};
use crate::dataset::Dataset;
use crate::util::file_safe;

/// The registered evals and their parts, sorted.
struct Registered {
    evals: Vec<&'static EvalRegistration>,
    variants: Vec<&'static VariantRegistration>,
    datasets: Vec<&'static DatasetRegistration>,
    scorers: Vec<&'static ScorerRegistration>,
}

impl Registered {
    fn collect() -> Registered {
        let mut evals: Vec<_> = inventory::iter::<EvalRegistration>().collect();
        evals.sort_by_key(|r| (r.name, r.file, r.line));
        let mut variants: Vec<_> = inventory::iter::<VariantRegistration>().collect();
        variants.sort_by_key(|r| (r.eval, r.name, r.file, r.line));
        let mut datasets: Vec<_> = inventory::iter::<DatasetRegistration>().collect();
        datasets.sort_by_key(|r| (r.eval, r.file, r.line));
        let mut scorers: Vec<_> = inventory::iter::<ScorerRegistration>().collect();
        scorers.sort_by_key(|r| (r.eval, r.file, r.line));
        Registered {
            evals,
            variants,
            datasets,
            scorers,
        }
    }

    fn parts(&self) -> Parts<'_> {
        Parts {
            variants: &self.variants,
            datasets: &self.datasets,
            scorers: &self.scorers,
        }
    }
}

/// Every registered eval, or what is wrong with the suite (each mistake
/// where it was registered).
pub(super) fn build_evals(manifest_dir: &Path) -> Result<Vec<Box<dyn ErasedEval>>, Vec<String>> {
    let mut errors = Vec::new();
    let registered = Registered::collect();
    for pair in registered.evals.windows(2) {
        if pair[0].name == pair[1].name {
            errors.push(format!(
                "two evals are named `{}`: {}:{} and {}:{}",
                pair[0].name, pair[0].file, pair[0].line, pair[1].file, pair[1].line
            ));
        }
    }
    let parts = registered.parts();
    let mut evals = Vec::new();
    let mut wheres = Vec::new();
    for reg in &registered.evals {
        evals.push(build_eval(reg, &parts, Some(manifest_dir), &mut errors));
        wheres.push((reg.name, reg.file, reg.line));
    }
    let named: Vec<(&str, EvalSource)> = evals
        .iter()
        .zip(wheres)
        .map(|(eval, w)| (eval.name(), w))
        .collect();
    errors.extend(colliding_eval_names(&named));
    if errors.is_empty() {
        Ok(evals)
    } else {
        Err(errors)
    }
}

/// Every registered eval for a process that runs `cell` alone: no
/// `#[dataset]` function is called, and the cell's eval has `dataset`, the
/// cell's with its case alone (see [`cell_index`](super::cell_index)). `None` when the suite is not
/// the one the index was written by (other evals, a mistake): the process
/// then builds the whole suite, which says what is wrong.
pub(super) fn build_evals_for_cell(
    cell: &IndexedCell,
    dataset: Dataset,
) -> Option<Vec<Box<dyn ErasedEval>>> {
    let registered = Registered::collect();
    let parts = registered.parts();
    let mut errors = Vec::new();
    let mut evals = Vec::new();
    for reg in &registered.evals {
        let mut eval = build_eval(reg, &parts, None, &mut errors);
        // An eval's builder may give it datasets of its own.
        eval.release_cases();
        evals.push(eval);
    }
    let names = evals.iter().map(|e| e.name());
    let same_suite = names.eq(cell.evals.iter().map(|(name, _)| name.as_str()));
    if !errors.is_empty() || !same_suite {
        return None;
    }
    evals.get_mut(cell.eval)?.add_dataset(dataset);
    Some(evals)
}

/// The registered parts of the evals, sorted.
struct Parts<'r> {
    variants: &'r [&'r VariantRegistration],
    datasets: &'r [&'r DatasetRegistration],
    scorers: &'r [&'r ScorerRegistration],
}

/// One registered eval with its variants, datasets and scorers; what is
/// wrong goes to `errors`. An eval whose `#[dataset]` function failed is not
/// also said to have no cases: the failure is why. Without `datasets` (the
/// package the `#[dataset]` functions read from), none is called and the
/// eval is not checked.
fn build_eval(
    reg: &EvalRegistration,
    parts: &Parts<'_>,
    datasets: Option<&Path>,
    errors: &mut Vec<String>,
) -> Box<dyn ErasedEval> {
    let mut eval = (reg.build)();
    eval.set_default_name(reg.name);
    for v in parts.variants.iter().filter(|v| v.eval == reg.name) {
        if let Err(e) = eval.add_variant(v.name, (v.build)()) {
            errors.push(format!("{}:{}: variant `{}`: {e}", v.file, v.line, v.name));
        }
    }
    for s in parts.scorers.iter().filter(|s| s.eval == reg.name) {
        if let Err(e) = eval.add_scorer((s.build)()) {
            errors.push(format!("{}:{}: scorer `{}`: {e}", s.file, s.line, s.name));
        }
    }
    let Some(manifest_dir) = datasets else {
        return eval;
    };
    let mut dataset_failed = false;
    for d in parts.datasets.iter().filter(|d| d.eval == reg.name) {
        // Dataset paths are relative to the package, whatever the working directory.
        match with_current_dir(manifest_dir, || (d.build)()) {
            Ok(list) => list.into_iter().for_each(|ds| eval.add_dataset(ds)),
            Err(e) => {
                dataset_failed = true;
                errors.push(format!("{}:{}: dataset `{}`: {e}", d.file, d.line, d.name));
            }
        }
    }
    match eval.check() {
        Err(e) if dataset_failed && e == erased::NO_CASES => {}
        Err(e) => errors.push(format!(
            "{}:{}: eval `{}`: {e}",
            reg.file, reg.line, reg.name
        )),
        Ok(()) => {}
    }
    eval
}

/// Where an eval was registered: its registered name, file and line.
type EvalSource = (&'static str, &'static str, u32);

/// Evals whose names (an eval's builder may choose one) would share files
/// or results: the same name (one row of results for two cells), or names
/// that are one once made file-safe, as recordings and snapshots write them
/// (`code review` and `code-review`). Two registrations of one name are
/// reported where they are registered, not here again.
fn colliding_eval_names(evals: &[(&str, EvalSource)]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut files: HashMap<String, (&str, EvalSource)> = HashMap::new();
    for &(name, at) in evals {
        let safe = file_safe(name);
        let Some((first, first_at)) = files.insert(safe.clone(), (name, at)) else {
            continue;
        };
        let ((reg, file, line), (first_reg, first_file, first_line)) = (at, first_at);
        if first_reg == reg {
            continue;
        }
        errors.push(if first == name {
            format!("two evals are named `{name}`: {first_file}:{first_line} and {file}:{line}")
        } else {
            format!(
                "evals `{first}` ({first_file}:{first_line}) and `{name}` ({file}:{line}) \
                 name the same files: recordings and snapshots write both as `{safe}`; rename one"
            )
        });
    }
    errors
}

/// Run `f` with the working directory at `dir` (restored after).
fn with_current_dir<T>(dir: &Path, f: impl FnOnce() -> T) -> T {
    let previous = std::env::current_dir().ok();
    let _ = std::env::set_current_dir(dir);
    let out = f();
    if let Some(previous) = previous {
        let _ = std::env::set_current_dir(previous);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::erased::erase;
    use crate::harness::registry::Built;

    fn workflow() -> Built {
        use crate::provider::{ScriptedProvider, ScriptedReply};
        use crate::workflow::{Agent, Phase, Workflow};
        let agent = Agent::<String>::new("a")
            .provider(ScriptedProvider::new("m").reply(ScriptedReply::text("x")))
            .prompt(|s| s.clone())
            .update(|t, s| *s = t);
        Box::new(Workflow::new("w", String::new()).phase("p", Phase::run(agent)))
    }

    fn no_dataset() -> Result<Vec<crate::dataset::Dataset>, String> {
        Err("invalid dataset evals/review.yaml: 1 error".into())
    }

    fn build(datasets: &[&DatasetRegistration]) -> Vec<String> {
        let reg = EvalRegistration {
            name: "review",
            file: "evals/suite.rs",
            line: 3,
            build: || erase(crate::eval::Eval::<String>::new()),
        };
        let variant = VariantRegistration {
            eval: "review",
            name: "v",
            file: "evals/suite.rs",
            line: 5,
            build: workflow,
        };
        let parts = Parts {
            variants: &[&variant],
            datasets,
            scorers: &[],
        };
        let mut errors = Vec::new();
        build_eval(&reg, &parts, Some(Path::new(".")), &mut errors);
        errors
    }

    #[test]
    fn a_dataset_that_fails_is_the_only_word_on_it() {
        let failing = DatasetRegistration {
            eval: "review",
            name: "cases",
            file: "evals/suite.rs",
            line: 9,
            build: no_dataset,
        };
        assert_eq!(
            build(&[&failing]),
            ["evals/suite.rs:9: dataset `cases`: invalid dataset evals/review.yaml: 1 error"]
        );
        // With no dataset at all, the eval has no cases: that is said.
        assert_eq!(
            build(&[]),
            [format!(
                "evals/suite.rs:3: eval `review`: {}",
                erased::NO_CASES
            )]
        );
    }

    #[test]
    fn evals_whose_names_share_files_or_results_are_refused() {
        let at = |reg, line| (reg, "evals/suite.rs", line);
        // Distinct names, distinct files: nothing to say.
        assert!(colliding_eval_names(&[("review", at("a", 1)), ("triage", at("b", 2))]).is_empty());
        // One name chosen by two builders.
        assert_eq!(
            colliding_eval_names(&[("review", at("a", 1)), ("review", at("b", 9))]),
            ["two evals are named `review`: evals/suite.rs:1 and evals/suite.rs:9"]
        );
        // Two names, one file name.
        assert_eq!(
            colliding_eval_names(&[("code review", at("a", 1)), ("code/review", at("b", 9))]),
            [
                "evals `code review` (evals/suite.rs:1) and `code/review` (evals/suite.rs:9) name \
              the same files: recordings and snapshots write both as `code-review`; rename one"
            ]
        );
        // Two registrations of one name are reported where they are registered.
        assert!(colliding_eval_names(&[("review", at("a", 1)), ("review", at("a", 9))]).is_empty());
    }
}
