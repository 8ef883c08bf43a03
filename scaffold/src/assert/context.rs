//! What assertions are evaluated against: one session's signals, state,
//! output and metrics.

use std::borrow::Cow;
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;
use serde::Serialize;
use serde_json::Value;

use super::glob::Glob;
use super::judge::Judge;
use crate::metrics::Metrics;
use crate::signal::{Signal, names};
use crate::store::{apply_state_change, fold_state};
use crate::workflow::RunResult;

/// One session as the assertions see it.
///
/// Borrowing: the signals are borrowed, never copied, so a context over a
/// million-signal [`RunResult`] is cheap to make. On first use it builds a
/// small index (one id per signal name) that every assertion shares, so each
/// glob is matched once per distinct name rather than once per signal.
///
/// ```
/// use scaffold::assert::{Assertion, EvalContext, evaluate};
/// use scaffold::signal::Signal;
/// use serde_json::json;
///
/// let sig = |index, name: &str, payload| Signal { index, name: name.into(), payload, at_ms: index, agent: None };
/// let signals = vec![
///     sig(0, "harness:start", json!({"state": {}})),
///     sig(1, "agent:activated", json!({"agent": "reviewer", "trigger": "phase:entered"})),
///     sig(2, "harness:end", json!({"durationMs": 5})),
/// ];
/// let ctx = EvalContext::new(&signals).output(json!("looks fine"));
/// let result = evaluate(&Assertion::signal_contains("agent:*"), &ctx);
/// assert!(result.passed, "{}", result.message);
/// ```
pub struct EvalContext<'a> {
    signals: &'a [Signal],
    initial_state: Cow<'a, Value>,
    final_state: Option<Cow<'a, Value>>,
    folded_final: OnceLock<Value>,
    output: Option<Cow<'a, Value>>,
    metrics: OnceLock<Metrics>,
    judge: Option<&'a Judge>,
    index: OnceLock<NameIndex<'a>>,
}

impl std::fmt::Debug for EvalContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvalContext")
            .field("signals", &self.signals.len())
            .field("output", &self.output.is_some())
            .field("judge", &self.judge.is_some())
            .finish_non_exhaustive()
    }
}

/// The state a session starts from: `harness:start`'s `state`, else `null`.
fn initial_from_signals(signals: &[Signal]) -> Option<&Value> {
    signals
        .iter()
        .take(8)
        .find(|s| s.name == names::HARNESS_START)
        .and_then(|s| s.payload.get("state"))
}

impl<'a> EvalContext<'a> {
    /// A context over raw `signals`. The initial state is the `state` of
    /// `harness:start` (else `null`), the final state is folded from the
    /// signals when first needed, the metrics are computed from them when
    /// first needed, and there is no output until [`EvalContext::output`].
    pub fn new(signals: &'a [Signal]) -> Self {
        let initial = initial_from_signals(signals)
            .map(Cow::Borrowed)
            .unwrap_or(Cow::Owned(Value::Null));
        EvalContext {
            signals,
            initial_state: initial,
            final_state: None,
            folded_final: OnceLock::new(),
            output: None,
            metrics: OnceLock::new(),
            judge: None,
            index: OnceLock::new(),
        }
    }

    /// A context over a finished run: its signals, state, output and metrics.
    ///
    /// The final state is the run's state serialized to JSON; should that
    /// fail, it is folded from the signals instead.
    pub fn from_run<S: Serialize>(run: &'a RunResult<S>) -> Self {
        let mut ctx = EvalContext::new(&run.signals);
        if let Ok(state) = serde_json::to_value(&run.state) {
            ctx.final_state = Some(Cow::Owned(state));
        }
        ctx.output = run.output.as_ref().map(Cow::Borrowed);
        let _ = ctx.metrics.set(run.metrics);
        ctx
    }

    /// Set the initial state (what `snapshot.at` folds state changes over).
    pub fn initial_state(mut self, state: Value) -> Self {
        self.initial_state = Cow::Owned(state);
        self
    }

    /// Set the initial state without copying it.
    pub fn initial_state_ref(mut self, state: &'a Value) -> Self {
        self.initial_state = Cow::Borrowed(state);
        self
    }

    /// Set the final state (what `snapshot.final` reads).
    pub fn final_state(mut self, state: Value) -> Self {
        self.final_state = Some(Cow::Owned(state));
        self
    }

    /// Set the final state without copying it.
    pub fn final_state_ref(mut self, state: &'a Value) -> Self {
        self.final_state = Some(Cow::Borrowed(state));
        self
    }

    /// Set the output (what `output.*` and `llm.judge` read).
    pub fn output(mut self, output: Value) -> Self {
        self.output = Some(Cow::Owned(output));
        self
    }

    /// Set the output without copying it.
    pub fn output_ref(mut self, output: &'a Value) -> Self {
        self.output = Some(Cow::Borrowed(output));
        self
    }

    /// Set the metrics instead of computing them from the signals.
    pub fn metrics(self, metrics: Metrics) -> Self {
        let cell = OnceLock::new();
        let _ = cell.set(metrics);
        EvalContext {
            metrics: cell,
            ..self
        }
    }

    /// The judge that `llm.judge` assertions call.
    pub fn judge(mut self, judge: &'a Judge) -> Self {
        self.judge = Some(judge);
        self
    }

    /// The signals.
    pub fn signals(&self) -> &'a [Signal] {
        self.signals
    }

    /// The state before the first signal.
    pub fn get_initial_state(&self) -> &Value {
        &self.initial_state
    }

    /// The final state (folded from the signals if it was not given).
    pub fn get_final_state(&self) -> &Value {
        match &self.final_state {
            Some(s) => s,
            None => self
                .folded_final
                .get_or_init(|| fold_state(self.initial_state.as_ref().clone(), self.signals)),
        }
    }

    /// The value at `path` in the final state. Without a given final state
    /// only the path's top-level key is looked up (no full fold).
    pub(crate) fn final_value(&self, path: &super::Path) -> Option<Cow<'_, Value>> {
        match (&self.final_state, self.signals.len().checked_sub(1)) {
            (Some(state), _) => path.resolve(state).map(Cow::Borrowed),
            (None, Some(last)) if path.first_key().is_some() => self.state_value_at(last, path),
            (None, _) => path.resolve(self.get_final_state()).map(Cow::Borrowed),
        }
    }

    /// The output, if any.
    pub fn get_output(&self) -> Option<&Value> {
        self.output.as_deref()
    }

    /// The metrics (computed from the signals if they were not given).
    pub fn get_metrics(&self) -> &Metrics {
        self.metrics.get_or_init(|| {
            // Only these signals change the metrics; feeding just them (and
            // the last signal, whose time is the latency without
            // `harness:end`) gives the same figures without reading every
            // name again.
            let index = self.index();
            let mut set = index.set_of(names::AGENT_ACTIVATED);
            set.union(&index.set_of(names::PROVIDER_END));
            set.union(&index.set_of(names::HARNESS_END));
            let last = self.signals.len().checked_sub(1);
            let relevant = index
                .positions(&set)
                .filter(|&i| Some(i) != last)
                .chain(last)
                .map(|i| &self.signals[i]);
            Metrics::from_signals(relevant)
        })
    }

    /// The judge, if one was given.
    pub fn get_judge(&self) -> Option<&'a Judge> {
        self.judge
    }

    /// Build now the index that assertions otherwise build on first use
    /// (one id per signal name; two threads for long sessions), e.g. to
    /// keep that work out of a timed section. Idempotent.
    pub fn prepare(&self) -> &Self {
        self.index();
        self
    }

    /// The shared name index (built on first use).
    pub(crate) fn index(&self) -> &NameIndex<'a> {
        self.index.get_or_init(|| NameIndex::build(self.signals))
    }

    /// The value at `path` in the state right after signal `at` (an index
    /// into the signals). Only the changes to the path's top-level key are
    /// looked at, walking back from `at`; a root path folds everything up to `at`.
    pub(crate) fn state_value_at(&self, at: usize, path: &super::Path) -> Option<Cow<'_, Value>> {
        let Some(key) = path.first_key() else {
            let state = fold_state(self.initial_state.as_ref().clone(), &self.signals[..=at]);
            return path.resolve(&state).cloned().map(Cow::Owned);
        };
        let name = names::state_changed(key);
        let index = self.index();
        let last_change = index
            .id_of(&name)
            .and_then(|id| index.ids[..=at].iter().rposition(|&x| x == id));
        let rest = &path.segments()[1..];
        match last_change {
            None => {
                let top = self.initial_state.get(key)?;
                super::path::resolve_segments(rest, top).map(Cow::Borrowed)
            }
            Some(i) => {
                // Apply that one change to a scratch state with the same rule
                // as the store's fold.
                let mut scratch = Value::Object(Default::default());
                apply_state_change(&mut scratch, key, &self.signals[i].payload);
                let Value::Object(mut map) = scratch else {
                    return None;
                };
                let top = map.remove(key)?;
                super::path::resolve_segments(rest, &top)
                    .cloned()
                    .map(Cow::Owned)
            }
        }
    }
}

/// Signal names interned to small ids, one id per signal, plus lazily
/// built columns of payload fields.
pub(crate) struct NameIndex<'a> {
    signals: &'a [Signal],
    /// The name id of every signal, in order.
    pub(crate) ids: Vec<u32>,
    /// The distinct names, by id.
    pub(crate) names: Vec<&'a str>,
    /// How many signals have each name.
    counts: Vec<u32>,
    by_name: FxHashMap<&'a str, u32>,
    fields: Mutex<FxHashMap<String, FieldColumn<'a>>>,
}

/// Which name ids a glob matches.
pub(crate) struct NameSet {
    hits: Vec<bool>,
    any: bool,
}

impl NameSet {
    /// Whether the name with this id is in the set.
    #[inline]
    pub(crate) fn contains(&self, id: u32) -> bool {
        self.hits[id as usize]
    }

    /// Whether no name at all is in the set.
    pub(crate) fn is_empty(&self) -> bool {
        !self.any
    }

    /// The union of two sets over the same index.
    pub(crate) fn union(&mut self, other: &NameSet) {
        for (a, b) in self.hits.iter_mut().zip(&other.hits) {
            *a |= *b;
        }
        self.any |= other.any;
    }

    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.hits
            .iter()
            .enumerate()
            .filter(|(_, h)| **h)
            .map(|(i, _)| i as u32)
    }
}

/// Not loaded yet.
const UNSET: u32 = u32::MAX;
/// Loaded; the field is missing or not a string.
const NOT_STRING: u32 = u32::MAX - 1;

/// One payload field, interned, for the signals of the names loaded so far.
/// Reading a payload costs several cache misses; a column pays them once
/// per (name, field) and then answers from a dense array.
struct FieldColumn<'a> {
    values: Vec<u32>,
    loaded: Vec<bool>,
    dict: Vec<&'a str>,
    by_value: FxHashMap<&'a str, u32>,
}

/// Intern the names of `signals` into `(ids, names)`.
fn intern(signals: &[Signal]) -> (Vec<u32>, Vec<&str>) {
    let mut ids = Vec::with_capacity(signals.len());
    let mut names: Vec<&str> = Vec::new();
    let mut by_name: FxHashMap<&str, u32> = FxHashMap::default();
    let mut prev: Option<(&str, u32)> = None;
    for s in signals {
        let name = s.name.as_str();
        let id = match prev {
            // Runs of one name (text deltas) skip the hash.
            Some((p, id)) if p == name => id,
            _ => *by_name.entry(name).or_insert_with(|| {
                names.push(name);
                names.len() as u32 - 1
            }),
        };
        prev = Some((name, id));
        ids.push(id);
    }
    (ids, names)
}

/// Work over `0..len` in this many pieces, one per thread, at or above
/// [`PARALLEL_FROM`] items (machines here have two cores).
const PIECES: usize = 2;

/// Sessions at least this long are worked on in parallel.
const PARALLEL_FROM: usize = 200_000;

/// Run `f` over `0..len`, split into [`PIECES`] ranges on as many threads
/// when `len` is large; the results come back in range order. Should a
/// worker thread fail to run, its range is done on this thread.
fn split_work<T: Send>(len: usize, f: impl Fn(std::ops::Range<usize>) -> T + Sync) -> Vec<T> {
    if len < PARALLEL_FROM {
        return vec![f(0..len)];
    }
    let step = len.div_ceil(PIECES);
    let ranges: Vec<std::ops::Range<usize>> = (0..PIECES)
        .map(|k| (k * step).min(len)..((k + 1) * step).min(len))
        .collect();
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = ranges[1..]
            .iter()
            .map(|r| {
                let r = r.clone();
                scope.spawn(move || f(r))
            })
            .collect();
        let mut out = vec![f(ranges[0].clone())];
        for (h, r) in handles.into_iter().zip(&ranges[1..]) {
            out.push(h.join().unwrap_or_else(|_| f(r.clone())));
        }
        out
    })
}

impl<'a> NameIndex<'a> {
    fn build(signals: &'a [Signal]) -> Self {
        // Reading every name is memory-bound: long sessions are interned in
        // two halves on two threads, then the halves' ids are mapped onto
        // one dictionary.
        let mut ids = Vec::with_capacity(signals.len());
        let mut names: Vec<&'a str> = Vec::new();
        let mut by_name: FxHashMap<&'a str, u32> = FxHashMap::default();
        for (part_ids, part_names) in split_work(signals.len(), |r| intern(&signals[r])) {
            let remap: Vec<u32> = part_names
                .iter()
                .map(|n| {
                    *by_name.entry(n).or_insert_with(|| {
                        names.push(n);
                        names.len() as u32 - 1
                    })
                })
                .collect();
            ids.extend(part_ids.iter().map(|&id| remap[id as usize]));
        }
        let mut counts = vec![0u32; names.len()];
        for &id in &ids {
            counts[id as usize] += 1;
        }
        NameIndex {
            signals,
            ids,
            names,
            counts,
            by_name,
            fields: Mutex::new(FxHashMap::default()),
        }
    }

    /// The id of `name`, if some signal has it.
    pub(crate) fn id_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The names `glob` matches (each distinct name tested once).
    pub(crate) fn set(&self, glob: &Glob) -> NameSet {
        let mut hits = vec![false; self.names.len()];
        let mut any = false;
        if glob.is_literal() {
            if let Some(id) = self.id_of(glob.as_str()) {
                hits[id as usize] = true;
                any = true;
            }
        } else {
            for (h, name) in hits.iter_mut().zip(&self.names) {
                *h = glob.matches(name);
                any |= *h;
            }
        }
        NameSet { hits, any }
    }

    /// The set holding exactly `name`.
    pub(crate) fn set_of(&self, name: &str) -> NameSet {
        let mut hits = vec![false; self.names.len()];
        let id = self.id_of(name);
        if let Some(id) = id {
            hits[id as usize] = true;
        }
        NameSet {
            hits,
            any: id.is_some(),
        }
    }

    /// Positions of the signals whose names are in `set`, in order.
    pub(crate) fn positions<'s>(&'s self, set: &'s NameSet) -> impl Iterator<Item = usize> + 's {
        let ids: &[u32] = if set.is_empty() { &[] } else { &self.ids };
        ids.iter()
            .enumerate()
            .filter(move |(_, id)| set.contains(**id))
            .map(|(i, _)| i)
    }

    /// How many signals have names in `set`.
    pub(crate) fn count(&self, set: &NameSet) -> usize {
        set.ids().map(|id| self.counts[id as usize] as usize).sum()
    }

    /// Run `f` on the column of `field`, loaded for every name in `set`.
    fn with_column<R>(
        &self,
        set: &NameSet,
        field: &str,
        f: impl FnOnce(&FieldColumn<'a>) -> R,
    ) -> R {
        let mut fields = self
            .fields
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let column = fields
            .entry(field.to_string())
            .or_insert_with(|| FieldColumn {
                values: vec![UNSET; self.ids.len()],
                loaded: vec![false; self.names.len()],
                dict: Vec::new(),
                by_value: FxHashMap::default(),
            });
        let missing: Vec<u32> = set
            .ids()
            .filter(|&id| !column.loaded[id as usize])
            .collect();
        if !missing.is_empty() {
            let mut want = vec![false; self.names.len()];
            for &id in &missing {
                want[id as usize] = true;
                column.loaded[id as usize] = true;
            }
            // Read the payloads (the slow, cache-missing part) on two threads
            // for long sessions, each interning locally; then map onto the
            // column's dictionary.
            let read = |range: std::ops::Range<usize>| {
                let mut local: Vec<&'a str> = Vec::new();
                let mut by_value: FxHashMap<&'a str, u32> = FxHashMap::default();
                let mut found: Vec<(u32, u32)> = Vec::new();
                for i in range {
                    if !want[self.ids[i] as usize] {
                        continue;
                    }
                    let v = match self.signals[i].payload.get(field) {
                        Some(Value::String(v)) => {
                            let v: &'a str = v.as_str();
                            *by_value.entry(v).or_insert_with(|| {
                                local.push(v);
                                local.len() as u32 - 1
                            })
                        }
                        _ => NOT_STRING,
                    };
                    found.push((i as u32, v));
                }
                (found, local)
            };
            for (found, local) in split_work(self.ids.len(), read) {
                let remap: Vec<u32> = local
                    .iter()
                    .map(|v| {
                        *column.by_value.entry(v).or_insert_with(|| {
                            column.dict.push(v);
                            column.dict.len() as u32 - 1
                        })
                    })
                    .collect();
                for (i, v) in found {
                    column.values[i as usize] = if v == NOT_STRING {
                        NOT_STRING
                    } else {
                        remap[v as usize]
                    };
                }
            }
        }
        f(column)
    }

    /// Positions, in order, of the signals with names in `set` whose
    /// payload `field` is the string `value`.
    pub(crate) fn positions_where(&self, set: &NameSet, field: &str, value: &str) -> Vec<usize> {
        if set.is_empty() {
            return Vec::new();
        }
        self.with_column(set, field, |column| {
            let Some(&want) = column.by_value.get(value) else {
                return Vec::new();
            };
            column
                .values
                .iter()
                .enumerate()
                .filter(|(i, v)| **v == want && set.contains(self.ids[*i]))
                .map(|(i, _)| i)
                .collect()
        })
    }

    /// `(position, payload[field] if a string)` of the signals with names in
    /// `set`, in order.
    pub(crate) fn field_strings(
        &self,
        set: &NameSet,
        field: &str,
    ) -> Vec<(usize, Option<&'a str>)> {
        if set.is_empty() {
            return Vec::new();
        }
        self.with_column(set, field, |column| {
            self.ids
                .iter()
                .enumerate()
                .filter(|(_, id)| set.contains(**id))
                .map(|(i, _)| {
                    let v = column.values[i];
                    (i, column.dict.get(v as usize).copied())
                })
                .collect()
        })
    }
}
