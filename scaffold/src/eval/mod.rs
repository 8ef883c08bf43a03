//! Evals: variants × cases × trials, graded by assertions and scorers.
//!
//! An [`Eval`] is a builder; the harness expands it into cells (one per
//! variant, case and trial) and runs each cell with [`Eval::run_cell`].
//! With [`Eval::fork_from`] every cell forks from one point of one parent
//! session instead of running from the start.

pub(crate) mod cell;
pub(crate) mod compare;
pub(crate) mod gate;
pub(crate) mod results;
pub(crate) mod runs;
pub(crate) mod small_map;
pub(crate) mod stats;

pub(crate) use cell::{CellEnv, CellId, CellResult};
pub(crate) use compare::{CompareOptions, Comparison, compare};
pub(crate) use gate::Gate;
pub use gate::{GateOptions, GateStatistic};
pub(crate) use results::{CellRecord, EvalResults, RunConfig};
pub(crate) use runs::{EvalPlan, EvalRunMeta, RecordedCell};
pub(crate) use small_map::SmallMap;
pub(crate) use stats::{CaseTrials, Interval, VariantSummary};

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::assert::Borderline;
use crate::dataset::{Case, Dataset};
use crate::provider::recorder::MatchRules;
use crate::provider::{Pricing, Provider};
use crate::scorer::Scorer;
use crate::session::ForkFrom;
use crate::workflow::bridge::AgentFn;
use crate::workflow::{AgentCommand, AgentCx, IntoVariant, State, Upstream, Workflow};

use std::future::Future;

use serde::Serialize;

/// An eval: what to run (variants), on what (datasets), how often (trials),
/// and how to grade it (the cases' assertions and the scorers).
///
/// ```
/// use scaffold::prelude::*;
/// use scaffold::eval::Eval;
/// use scaffold::dataset::Dataset;
/// #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
/// struct State { answer: String }
/// let base = Workflow::new("qa", State::default());
/// let eval = Eval::new()
///     .name("qa")
///     .variant("baseline", base.clone())
///     .trials(3)
///     .scorer(scaffold::scorer::output_valid())
///     .min_pass_rate(0.9);
/// assert_eq!(eval.variant_names(), ["baseline"]);
/// ```
pub struct Eval<S> {
    pub(crate) name: Option<String>,
    pub(crate) variants: Vec<(String, Workflow<S>)>,
    pub(crate) datasets: Vec<Dataset>,
    pub(crate) trials: u32,
    pub(crate) scorers: Vec<Arc<dyn Scorer<S>>>,
    pub(crate) min_pass_rate: f64,
    pub(crate) concurrency: Option<usize>,
    pub(crate) recordings: Option<PathBuf>,
    pub(crate) rerecord: Option<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) judge: Option<Arc<dyn Provider>>,
    pub(crate) fork_from: Option<ForkFrom>,
    pub(crate) gate: GateOptions,
    pub(crate) borderline: Option<Borderline>,
    pub(crate) on_error: OnError,
    pub(crate) pricing: Option<Arc<Pricing>>,
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) agent: Option<AgentFn>,
    pub(crate) match_rules: MatchRules,
    pub(crate) upstream: Upstream,
}

/// What an eval makes of a cell whose run errored (a provider error, a
/// time limit, a broken workflow), as opposed to one that ran and failed
/// its checks. Set with [`Eval::on_error`].
///
/// ```
/// use scaffold::eval::{Eval, OnError};
/// # #[derive(Clone, Default, serde::Serialize, serde::Deserialize)] struct S;
/// let eval = Eval::<S>::new().on_error(OnError::Retry(2));
/// assert_eq!(eval.error_policy(), OnError::Retry(2));
/// assert_eq!(Eval::<S>::new().error_policy(), OnError::CountAsZero);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnError {
    /// The cell fails and counts: it does not pass, and every score of the
    /// errored run is 0 (the default).
    #[default]
    CountAsZero,
    /// Run the cell again, up to this many more times, while its run
    /// errors; the last run is the one graded (and counted as zero if it
    /// errored too). The record says how many retries it took, and its
    /// metrics count the tokens, cost and calls of every run (each was
    /// billed): so does the cost budget.
    Retry(u32),
    /// Leave the cell out of the statistics and the gate; its test passes,
    /// and the summary and the results list it as excluded with its error.
    Exclude,
}

impl<S> fmt::Debug for Eval<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Eval")
            .field("name", &self.name)
            .field(
                "variants",
                &self.variants.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("datasets", &self.datasets.len())
            .field("trials", &self.trials)
            .field("scorers", &self.scorers.len())
            .field("min_pass_rate", &self.min_pass_rate)
            .field("fork_from", &self.fork_from)
            .field("gate", &self.gate)
            .finish_non_exhaustive()
    }
}

impl<S: State> Default for Eval<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State> Eval<S> {
    /// An empty eval: one trial, `min_pass_rate` 1.0.
    pub fn new() -> Self {
        Eval {
            name: None,
            variants: Vec::new(),
            datasets: Vec::new(),
            trials: 1,
            scorers: Vec::new(),
            min_pass_rate: 1.0,
            concurrency: None,
            recordings: None,
            rerecord: None,
            timeout: None,
            judge: None,
            fork_from: None,
            gate: GateOptions::default(),
            borderline: None,
            on_error: OnError::default(),
            pricing: None,
            max_cost_usd: None,
            agent: None,
            match_rules: MatchRules::default(),
            upstream: Upstream::default(),
        }
    }

    /// The display name (default: the `#[eval]` function's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Add a variant: a name and the workflow it runs, or the
    /// [`Variant`](crate::workflow::Variant) data of the eval's [agent](Eval::agent).
    pub fn variant(mut self, name: impl Into<String>, variant: impl IntoVariant<S>) -> Self {
        let workflow = self.with_agent(variant.into_workflow());
        self.variants.push((name.into(), workflow));
        self
    }

    /// Run your own async function as the thing under test, once per
    /// cell, instead of a workflow: it gets an [`AgentCx`] (the case's
    /// input, the variant's [`Variant`](crate::workflow::Variant) data, and the base URLs its model
    /// clients must use) and returns the output. Its calls through those
    /// URLs are recorded and played back, and become the run's signals
    /// (see [`AgentCx`]). Its error, or
    /// its panic, fails the cell.
    ///
    /// ```
    /// use scaffold::prelude::*;
    /// async fn echo(cx: AgentCx) -> Result<String, std::io::Error> {
    ///     Ok(cx.input_text())
    /// }
    /// let eval = Eval::<AgentState>::new()
    ///     .agent(echo)
    ///     .variant("plain", Variant::new().model("gpt-4o-mini"));
    /// assert_eq!(eval.variant_names(), ["plain"]);
    /// ```
    pub fn agent<F, Fut, T, E>(mut self, agent: F) -> Self
    where
        F: Fn(AgentCx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize,
        E: fmt::Display,
    {
        let agent = AgentFn::new(agent);
        for (_, workflow) in &mut self.variants {
            workflow.give_agent_fn(&agent);
        }
        self.agent = Some(agent);
        self
    }

    /// Run a program as the thing under test, once per cell, in any
    /// language (see [`AgentCommand`]): its model calls go through the
    /// bridge's base URLs it finds in its environment, so they are
    /// recorded, played back and read as for [`Eval::agent`].
    pub fn command(self, command: AgentCommand) -> Self {
        self.agent(move |cx| command.clone().run(cx))
    }

    /// `workflow` with the eval's agent, if it is a bridged one without.
    pub(crate) fn with_agent(&self, workflow: Workflow<S>) -> Workflow<S> {
        match &self.agent {
            Some(agent) => workflow.with_agent_fn(agent),
            None => workflow,
        }
    }

    /// Send the [agent](Eval::agent)'s OpenAI-compatible calls on (live and
    /// record) as `provider` sends its own: to its base URL, with its
    /// retries, time limits and rate limit; the key and the model are the
    /// ones the agent sends. Default: an
    /// [`OpenAi`](crate::provider::openai::OpenAi) from the environment
    /// (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    ///
    /// ```
    /// use scaffold::prelude::*;
    /// use scaffold::provider::RateLimit;
    /// let eval = Eval::<AgentState>::new()
    ///     .bridge_openai(OpenAi::new("").base_url("http://127.0.0.1:8080/v1").rate_limit(RateLimit::per_minute(60)));
    /// # let _ = eval;
    /// ```
    pub fn bridge_openai(mut self, provider: crate::provider::openai::OpenAi) -> Self {
        self.upstream.openai = Some(Arc::new(provider));
        self
    }

    /// Send the agent's Anthropic calls on as `provider` sends its own
    /// (see [`Eval::bridge_openai`]). Default: from `ANTHROPIC_BASE_URL`
    /// and `ANTHROPIC_API_KEY`.
    pub fn bridge_anthropic(mut self, provider: crate::provider::anthropic::Anthropic) -> Self {
        self.upstream.anthropic = Some(Arc::new(provider));
        self
    }

    /// Which differences between a request and its recording playback
    /// forgives (default [`MatchRules::default`]: only the fields SDKs fill
    /// per run or per user, `user`, `metadata`, `prompt_cache_key` and
    /// `safety_identifier`; everything else must match).
    ///
    /// ```
    /// use scaffold::eval::Eval;
    /// use scaffold::provider::recorder::MatchRules;
    /// # #[derive(Clone, Default, serde::Serialize, serde::Deserialize)] struct S;
    /// let eval = Eval::<S>::new().match_requests(MatchRules::default().ignore_field("messages.*.name"));
    /// # let _ = eval;
    /// ```
    pub fn match_requests(mut self, rules: MatchRules) -> Self {
        self.match_rules = rules;
        self
    }

    /// Add a dataset of cases.
    pub fn dataset(mut self, dataset: Dataset) -> Self {
        self.datasets.push(dataset);
        self
    }

    /// Run every variant × case this many times (default 1).
    pub fn trials(mut self, trials: u32) -> Self {
        self.trials = trials.max(1);
        self
    }

    /// Grade every cell with `scorer` too.
    pub fn scorer(mut self, scorer: impl Scorer<S> + 'static) -> Self {
        self.scorers.push(Arc::new(scorer));
        self
    }

    /// Grade every cell with a shared scorer.
    pub fn scorer_arc(mut self, scorer: Arc<dyn Scorer<S>>) -> Self {
        self.scorers.push(scorer);
        self
    }

    /// The share of cells that must pass (default 1.0). Below 1.0 the gate
    /// allows failures: a cell that fails its checks is reported as an
    /// allowed failure (libtest `ignored`, JUnit `<skipped>`, the table's
    /// `FAIL`) and the eval's `[gate]` test judges the run.
    pub fn min_pass_rate(mut self, rate: f64) -> Self {
        self.min_pass_rate = rate.clamp(0.0, 1.0);
        self
    }

    /// Quarantine cells: patterns `case` (under every variant) or
    /// `variant::case`, `*` matching a whole segment. Quarantined cells run
    /// and are reported (marked QUARANTINED), but the gate and baseline
    /// blocking do not count them; the summary lists them. The package's
    /// `evals/quarantine.yaml` adds more (see `gate`).
    pub fn quarantine<I, T>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.gate
            .quarantine
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Gate on the lower bound of the pass rate's Wilson interval instead
    /// of the pass rate itself (default false).
    ///
    /// ```
    /// use scaffold::eval::Eval;
    /// # #[derive(Clone, Default, serde::Serialize, serde::Deserialize)] struct S;
    /// let eval = Eval::<S>::new().min_pass_rate(0.8).gate_on_lower_bound(true).confidence(0.9);
    /// assert!(eval.gate_options().on_lower_bound);
    /// assert_eq!(eval.gate_options().confidence, 0.9);
    /// ```
    pub fn gate_on_lower_bound(mut self, on: bool) -> Self {
        self.gate.on_lower_bound = on;
        self
    }

    /// Strict (default false): every cell that fails its checks fails its
    /// own test and the run, whatever `min_pass_rate` says; for evals that
    /// allow nothing. `SCAFFOLD_STRICT=1` makes every eval of a run strict.
    ///
    /// ```
    /// use scaffold::eval::Eval;
    /// # #[derive(Clone, Default, serde::Serialize, serde::Deserialize)] struct S;
    /// let eval = Eval::<S>::new().min_pass_rate(0.8).strict(true);
    /// assert!(!eval.gate_options().allows_failures(0.8));
    /// ```
    pub fn strict(mut self, on: bool) -> Self {
        self.gate.strict = on;
        self
    }

    /// The confidence level of the intervals reported and gated on (default
    /// 0.95): a probability strictly between 0 and 1, else the suite does
    /// not start, saying so (`95` is not `0.95`).
    pub fn confidence(mut self, confidence: f64) -> Self {
        self.gate.confidence = confidence;
        self
    }

    /// The k of pass@k and pass^k (default: 1 and the number of trials).
    pub fn pass_at_k(mut self, ks: impl IntoIterator<Item = u32>) -> Self {
        self.gate.pass_at_k = ks.into_iter().collect();
        self
    }

    /// No variant is called the winner with fewer trials per case than this
    /// (default 0: no minimum).
    pub fn min_trials_for_winner(mut self, trials: u32) -> Self {
        self.gate.min_trials_for_winner = trials;
        self
    }

    /// The scorer whose mean is quality when variants are compared: it
    /// decides the Pareto frontier, the recommendation, `Best:` and the
    /// significance tests (default: none, the pass rate decides; so it
    /// does when the scorer gives every cell one value). A name that is
    /// not one of the eval's scorers stops the suite at set-up.
    ///
    /// ```
    /// use scaffold::eval::Eval;
    /// # #[derive(Clone, Default, serde::Serialize, serde::Deserialize)] struct S;
    /// let eval = Eval::<S>::new().primary_scorer("findings");
    /// assert_eq!(eval.gate_options().primary_scorer.as_deref(), Some("findings"));
    /// ```
    pub fn primary_scorer(mut self, scorer: impl Into<String>) -> Self {
        self.gate.primary_scorer = Some(scorer.into());
        self
    }

    /// All of the above at once.
    pub fn gate_with(mut self, options: GateOptions) -> Self {
        self.gate = options;
        self
    }

    /// How the results are judged (quarantine, confidence, pass@k, gate,
    /// primary scorer).
    pub fn gate_options(&self) -> &GateOptions {
        &self.gate
    }

    /// When an `llm.judge` verdict counts as borderline and whether to
    /// re-ask the judge (default: [`Borderline::default`]); an assertion's
    /// own `borderlineMargin` and `reask` take precedence.
    pub fn judge_borderline(mut self, borderline: Borderline) -> Self {
        self.borderline = Some(borderline);
        self
    }

    /// What to make of a cell whose run errors (default
    /// [`OnError::CountAsZero`]).
    pub fn on_error(mut self, policy: OnError) -> Self {
        self.on_error = policy;
        self
    }

    /// The error policy.
    pub fn error_policy(&self) -> OnError {
        self.on_error
    }

    /// How many cells may run at once (default: the test threads).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = Some(n.max(1));
        self
    }

    /// Stop starting cells once the finished ones have cost `usd` US
    /// dollars (their `metrics.costUsd`): the run ends unfinished, to be
    /// resumed with `SCAFFOLD_RESUME`. `SCAFFOLD_MAX_COST` replaces it with
    /// one budget for every eval of the run. A budget that is not a number
    /// above 0 stops the suite at set-up.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.max_cost_usd = Some(usd);
        self
    }

    /// Where this eval's recordings live (default `evals/recordings` in the package).
    pub fn recordings(mut self, dir: impl Into<PathBuf>) -> Self {
        self.recordings = Some(dir.into());
        self
    }

    /// The command that re-records this eval's calls, named by every
    /// playback failure instead of `SCAFFOLD_MODE=record cargo test --test
    /// evals -- {filter}` (for a suite that records against a fake server,
    /// or with a script); `{filter}`, if there, is the cell's test filter.
    pub fn rerecord_command(mut self, command: impl Into<String>) -> Self {
        self.rerecord = Some(command.into());
        self
    }

    /// Price the cells' calls with `pricing` instead of the built-in table:
    /// a proxy alias or a model the table lacks gets its price here
    /// (without one, its cost is unknown: shown as such, never ranked).
    ///
    /// ```
    /// use scaffold::eval::Eval;
    /// use scaffold::provider::{ModelPrice, Pricing};
    /// # #[derive(Clone, Default, serde::Serialize, serde::Deserialize)] struct S;
    /// let eval = Eval::<S>::new()
    ///     .pricing(Pricing::builtin().with_model("my-proxy-gpt", ModelPrice::per_mtok(2.5, 10.0)));
    /// # let _ = eval;
    /// ```
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(Arc::new(pricing));
        self
    }

    /// Time limit per cell, unless the case or dataset sets one.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The model that grades `llm.judge` assertions.
    pub fn judge(mut self, provider: impl Provider + 'static) -> Self {
        self.judge = Some(Arc::new(provider));
        self
    }

    /// Fork every cell from one point of one session instead of running it
    /// from the start, so all variants continue from identical state
    /// (isolating, say, the coder from the planner). Each case's input must
    /// be the parent session's input, else its cells fail saying both.
    ///
    /// ```
    /// use scaffold::prelude::*;
    /// use scaffold::eval::Eval;
    /// #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
    /// struct State { plan: String, code: String }
    /// let eval = Eval::<State>::new()
    ///     .name("coder-comparison")
    ///     .fork_from(ForkFrom::session("abc-123").at(ForkPoint::phase("coding").first()));
    /// assert!(eval.forks_from().is_some());
    /// ```
    pub fn fork_from(mut self, from: ForkFrom) -> Self {
        self.fork_from = Some(from);
        self
    }

    /// Where the cells fork from, if they do.
    pub fn forks_from(&self) -> Option<&ForkFrom> {
        self.fork_from.as_ref()
    }

    pub(crate) fn set_fork_from(&mut self, from: ForkFrom) {
        self.fork_from = Some(from);
    }

    /// The variants' names, in order.
    pub fn variant_names(&self) -> Vec<&str> {
        self.variants.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The datasets.
    pub fn datasets(&self) -> &[Dataset] {
        &self.datasets
    }

    /// The trial count.
    pub fn trial_count(&self) -> u32 {
        self.trials
    }

    /// The pass-rate gate.
    pub fn pass_rate_gate(&self) -> f64 {
        self.min_pass_rate
    }

    /// The configured concurrency.
    pub fn concurrency_limit(&self) -> Option<usize> {
        self.concurrency
    }

    /// The display name, if set.
    pub fn display_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The names of the scorers, in order.
    pub fn scorer_names(&self) -> Vec<String> {
        self.scorers.iter().map(|s| s.name().to_string()).collect()
    }

    pub(crate) fn set_default_name(&mut self, name: &str) {
        if self.name.is_none() {
            self.name = Some(name.to_string());
        }
    }

    /// How many cells: cases × variants × trials.
    pub fn cell_count(&self) -> usize {
        let cases: usize = self.datasets.iter().map(|d| d.cases.len()).sum();
        cases * self.variants.len() * self.trials as usize
    }

    /// Cell `index` of the stable order (dataset, case, variant, trial), in O(datasets).
    #[doc(hidden)]
    pub fn cell_at(&self, index: usize) -> Option<Cell<'_, S>> {
        let (d, c, within) = self.locate(index)?;
        let (dataset, case) = (&self.datasets[d], &self.datasets[d].cases[c]);
        let (variant, workflow) = &self.variants[within / self.trials as usize];
        let trial = (within % self.trials as usize) as u32;
        Some(Cell {
            id: CellId {
                eval: self.name.clone().unwrap_or_default(),
                variant: variant.clone(),
                case: case.id.clone(),
                trial: (self.trials > 1).then_some(trial),
            },
            dataset,
            case,
            workflow,
        })
    }

    /// Where cell `index` is: its dataset, its case in that dataset, and
    /// its place among the case's cells (variant × trial).
    pub(crate) fn locate(&self, index: usize) -> Option<(usize, usize, usize)> {
        let per_case = self.variants.len() * self.trials as usize;
        if per_case == 0 {
            return None;
        }
        let mut rest = index;
        for (d, dataset) in self.datasets.iter().enumerate() {
            let here = dataset.cases.len() * per_case;
            if rest < here {
                return Some((d, rest / per_case, rest % per_case));
            }
            rest -= here;
        }
        None
    }

    /// Every cell, in the stable order of [`Eval::cell_at`].
    #[doc(hidden)]
    pub fn cells(&self) -> impl Iterator<Item = Cell<'_, S>> {
        (0..self.cell_count()).filter_map(|i| self.cell_at(i))
    }
}

/// One cell of an eval: which it is and what it runs. The harness's view;
/// not public API.
#[doc(hidden)]
#[derive(Debug)]
pub struct Cell<'a, S> {
    /// Which cell.
    pub id: CellId,
    /// The dataset of its case.
    pub dataset: &'a Dataset,
    /// Its case.
    pub case: &'a Case,
    /// Its variant's workflow.
    pub workflow: &'a Workflow<S>,
}
