//! `signal.contains`, `signal.not`, `signal.count`, `signal.trajectory`,
//! `signal.first`, `signal.last`: assertions over the signal stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::{EvalContext, NameSet};
use super::display;
use super::glob::Glob;
use super::matcher::Expect;
use super::result::{Bounds, Outcome};

/// A signal exists whose name matches `pattern` (and whose payload
/// partially matches `payload`, if given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalContains {
    /// Glob over the signal name (`agent:*`, `tool:**`).
    pub pattern: String,
    /// Partial payload (see [expected values](crate::assert#expected-values)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// No signal matches `pattern` (and `payload`, if given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalNot {
    /// Glob over the signal name.
    pub pattern: String,
    /// Partial payload; only signals that match it count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// The number of signals matching `pattern` (and `payload`) is within bounds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SignalCount {
    /// Glob over the signal name.
    pub pattern: String,
    /// Partial payload; only signals that match it are counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// At least this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    /// At most this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// Exactly this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<u64>,
}

/// One step of a trajectory: a name glob and an optional partial payload.
/// In datasets either a bare string (`review:complete`) or
/// `{pattern: agent:activated, payload: {agent: fixer}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StepRepr", into = "StepRepr")]
pub struct SignalPattern {
    /// Glob over the signal name.
    pub pattern: String,
    /// Partial payload.
    pub payload: Option<Value>,
}

impl From<&str> for SignalPattern {
    fn from(pattern: &str) -> Self {
        SignalPattern {
            pattern: pattern.to_string(),
            payload: None,
        }
    }
}

impl SignalPattern {
    /// A step with a payload.
    pub fn with_payload(pattern: &str, payload: Value) -> Self {
        SignalPattern {
            pattern: pattern.to_string(),
            payload: Some(payload),
        }
    }

    fn describe(&self) -> String {
        display::pattern(&self.pattern, self.payload.as_ref())
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StepRepr {
    Name(String),
    Full {
        pattern: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        payload: Option<Value>,
    },
}

impl From<StepRepr> for SignalPattern {
    fn from(r: StepRepr) -> Self {
        match r {
            StepRepr::Name(pattern) => SignalPattern {
                pattern,
                payload: None,
            },
            StepRepr::Full { pattern, payload } => SignalPattern { pattern, payload },
        }
    }
}

impl From<SignalPattern> for StepRepr {
    fn from(p: SignalPattern) -> Self {
        match p.payload {
            None => StepRepr::Name(p.pattern),
            Some(payload) => StepRepr::Full {
                pattern: p.pattern,
                payload: Some(payload),
            },
        }
    }
}

/// Signals matching the patterns appear in this order.
///
/// Not strict (the default): the steps form a subsequence of the stream; any
/// signals may come between them. Strict (seed 003: "no unmatched signals
/// between patterns"): the steps hold at some placement where nothing but
/// signals the `ignore` globs name — the noise a user chooses to allow
/// (`text:delta`, `state:**`, ...) — comes between two consecutive steps;
/// every placement is searched. A failure names the furthest step reached
/// and the first signal that stood in its way, with its index.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SignalTrajectory {
    /// The steps, in order.
    pub patterns: Vec<SignalPattern>,
    /// See above.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    /// Strict only: globs over the names of signals allowed between steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
}

/// The first signal matching `pattern` has `payload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalFirst {
    /// Glob over the signal name.
    pub pattern: String,
    /// Partial payload the first match must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// The last signal matching `pattern` has `payload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalLast {
    /// Glob over the signal name.
    pub pattern: String,
    /// Partial payload the last match must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// A compiled name glob plus payload expectation.
pub(crate) struct Compiled<'e> {
    pub(crate) glob: Glob,
    pub(crate) set: NameSet,
    pub(crate) expect: Option<Expect<'e>>,
}

impl<'e> Compiled<'e> {
    pub(crate) fn new(
        ctx: &EvalContext<'_>,
        pattern: &str,
        payload: Option<&'e Value>,
    ) -> Result<Compiled<'e>, Box<Outcome>> {
        let glob = Glob::new(pattern)
            .map_err(|e| Box::new(Outcome::fail(format!("invalid pattern `{pattern}`: {e}"))))?;
        let expect = payload.map(Expect::compile).transpose().map_err(|e| {
            Box::new(Outcome::fail(format!(
                "invalid payload for `{pattern}`: {e}"
            )))
        })?;
        let set = ctx.index().set(&glob);
        Ok(Compiled { glob, set, expect })
    }

    /// Whether the signal at `i` (whose name is already known to match) has the payload.
    pub(crate) fn payload_ok(&self, ctx: &EvalContext<'_>, i: usize) -> bool {
        self.expect
            .as_ref()
            .is_none_or(|e| e.test(&ctx.signals()[i].payload))
    }

    /// Every signal that matches, in order. With a `key: "text"` in the
    /// payload, a shared field column narrows the candidates first, so
    /// repeated full scans do not read every payload again.
    pub(crate) fn all_matches(&self, ctx: &EvalContext<'_>) -> Vec<usize> {
        let index = ctx.index();
        let candidates = match self.expect.as_ref().and_then(Expect::literal_str_field) {
            Some((field, value)) => index.positions_where(&self.set, field, value),
            None => index.positions(&self.set).collect(),
        };
        if self.expect.is_none() {
            return candidates;
        }
        candidates
            .into_iter()
            .filter(|&i| self.payload_ok(ctx, i))
            .collect()
    }

    pub(crate) fn matches_at(&self, ctx: &EvalContext<'_>, i: usize) -> bool {
        self.set.contains(ctx.index().ids[i]) && self.payload_ok(ctx, i)
    }

    pub(crate) fn describe(&self, payload: Option<&Value>) -> String {
        display::pattern(self.glob.as_str(), payload)
    }
}

macro_rules! compiled {
    ($ctx:expr, $pattern:expr, $payload:expr) => {
        match Compiled::new($ctx, $pattern, $payload) {
            Ok(c) => c,
            Err(outcome) => return *outcome,
        }
    };
}

/// "no signal is named like `x` (names seen: a, b, …)".
pub(crate) fn no_name(ctx: &EvalContext<'_>, pattern: &str) -> String {
    let names = &ctx.index().names;
    let shown: Vec<&str> = names.iter().take(12).copied().collect();
    let more = if names.len() > shown.len() {
        format!(", … {} more", names.len() - shown.len())
    } else {
        String::new()
    };
    format!(
        "no signal matches `{pattern}` ({} in the session; names seen: {}{more})",
        display::plural(ctx.signals().len(), "signal"),
        if shown.is_empty() {
            "none".to_string()
        } else {
            shown.join(", ")
        }
    )
}

/// Up to `n` near misses: name matched, payload did not, with the reason.
fn near_misses(ctx: &EvalContext<'_>, c: &Compiled<'_>, n: usize) -> Vec<String> {
    let Some(expect) = &c.expect else {
        return Vec::new();
    };
    ctx.index()
        .positions(&c.set)
        .take(n)
        .map(|i| {
            let s = &ctx.signals()[i];
            let why = expect.explain(&s.payload).unwrap_or_default();
            format!("{} ({why})", display::signal_full(s))
        })
        .collect()
}

pub(crate) fn contains(a: &SignalContains, ctx: &EvalContext<'_>) -> Outcome {
    let c = compiled!(ctx, &a.pattern, a.payload.as_ref());
    let want = c.describe(a.payload.as_ref());
    let mut name_matches = 0usize;
    for i in ctx.index().positions(&c.set) {
        name_matches += 1;
        if c.payload_ok(ctx, i) {
            let s = &ctx.signals()[i];
            return Outcome::pass(format!("found {want} at {}", display::signal_full(s)))
                .expected(want)
                .actual(display::signal_full(s));
        }
    }
    if name_matches == 0 {
        return Outcome::fail(no_name(ctx, &a.pattern)).expected(want);
    }
    let misses = near_misses(ctx, &c, 3);
    Outcome::fail(format!(
        "{} {} `{}` but none has payload {}; e.g. {}",
        display::plural(name_matches, "signal"),
        if name_matches == 1 {
            "matches"
        } else {
            "match"
        },
        a.pattern,
        a.payload.as_ref().map(display::value).unwrap_or_default(),
        misses.join("; ")
    ))
    .expected(want)
    .actual(Value::from(misses))
}

pub(crate) fn not(a: &SignalNot, ctx: &EvalContext<'_>) -> Outcome {
    let c = compiled!(ctx, &a.pattern, a.payload.as_ref());
    let want = c.describe(a.payload.as_ref());
    let found = c.all_matches(ctx);
    if found.is_empty() {
        return Outcome::pass(format!("no signal matches {want}")).expected(format!("no {want}"));
    }
    let shown: Vec<String> = found
        .iter()
        .take(3)
        .map(|&i| display::signal_full(&ctx.signals()[i]))
        .collect();
    Outcome::fail(format!(
        "expected no signal matching {want}, found {}: {}{}",
        found.len(),
        shown.join("; "),
        if found.len() > shown.len() {
            "; …"
        } else {
            ""
        }
    ))
    .expected(format!("no {want}"))
    .actual(Value::from(shown))
}

pub(crate) fn count(a: &SignalCount, ctx: &EvalContext<'_>) -> Outcome {
    let c = compiled!(ctx, &a.pattern, a.payload.as_ref());
    let want = c.describe(a.payload.as_ref());
    let bounds = Bounds {
        exact: a.exact,
        min: a.min,
        max: a.max,
    };
    let n = if c.expect.is_none() {
        ctx.index().count(&c.set)
    } else {
        c.all_matches(ctx).len()
    } as u64;
    let passed = bounds.holds(n);
    Outcome::new(
        passed,
        format!(
            "found {} matching {want}, expected {}",
            display::plural(n as usize, "signal"),
            bounds.describe()
        ),
    )
    .expected(bounds.to_value())
    .actual(n)
}

fn first_or_last(
    ctx: &EvalContext<'_>,
    pattern: &str,
    payload: Option<&Value>,
    last: bool,
) -> Outcome {
    let c = compiled!(ctx, pattern, payload);
    let which = if last { "last" } else { "first" };
    let index = ctx.index();
    let found = if last {
        index.ids.iter().rposition(|&id| c.set.contains(id))
    } else {
        index.ids.iter().position(|&id| c.set.contains(id))
    };
    let Some(i) = found else {
        return Outcome::fail(no_name(ctx, pattern));
    };
    let s = &ctx.signals()[i];
    match (&c.expect, payload) {
        (Some(e), Some(p)) => match e.explain(&s.payload) {
            None => Outcome::pass(format!(
                "the {which} `{pattern}` is {} and has {}",
                display::signal_full(s),
                display::value(p)
            ))
            .expected(p.clone())
            .actual(s.payload.clone()),
            Some(why) => Outcome::fail(format!(
                "the {which} `{pattern}` is {}: {why}",
                display::signal_full(s)
            ))
            .expected(p.clone())
            .actual(s.payload.clone()),
        },
        _ => Outcome::pass(format!(
            "the {which} `{pattern}` is {}",
            display::signal_full(s)
        )),
    }
}

pub(crate) fn first(a: &SignalFirst, ctx: &EvalContext<'_>) -> Outcome {
    first_or_last(ctx, &a.pattern, a.payload.as_ref(), false)
}

pub(crate) fn last(a: &SignalLast, ctx: &EvalContext<'_>) -> Outcome {
    first_or_last(ctx, &a.pattern, a.payload.as_ref(), true)
}

fn repeated(entry: String, n: usize) -> String {
    if n == 1 {
        entry
    } else {
        format!("{entry} ×{n}")
    }
}

/// Entries of a trajectory shown in messages.
const WINDOW: usize = 40;

/// The relevant signals around position `stuck`, formatted with `keys`.
pub(crate) fn trajectory_window(
    ctx: &EvalContext<'_>,
    relevant: &[usize],
    stuck: usize,
    keys: &[&str],
) -> Vec<String> {
    let at = relevant.partition_point(|&i| i < stuck);
    let start = at.saturating_sub(WINDOW / 4);
    let end = (start + WINDOW).min(relevant.len());
    let start = end.saturating_sub(WINDOW).min(start);
    let mut out = Vec::with_capacity(end - start + 2);
    if start > 0 {
        out.push(format!("… {} earlier", start));
    }
    // Runs of the same entry are written once with a count: `text:delta ×12`.
    let mut run: Option<(String, usize)> = None;
    for &i in &relevant[start..end] {
        let entry = display::signal_with(&ctx.signals()[i], keys);
        match &mut run {
            Some((last, n)) if *last == entry => *n += 1,
            _ => {
                if let Some((last, n)) = run.take() {
                    out.push(repeated(last, n));
                }
                run = Some((entry, 1));
            }
        }
    }
    if let Some((last, n)) = run {
        out.push(repeated(last, n));
    }
    if end < relevant.len() {
        out.push(format!("… {} more", relevant.len() - end));
    }
    out
}

pub(crate) fn trajectory(a: &SignalTrajectory, ctx: &EvalContext<'_>) -> Outcome {
    if a.patterns.is_empty() {
        return Outcome::pass("an empty trajectory always holds");
    }
    let mut steps = Vec::with_capacity(a.patterns.len());
    for p in &a.patterns {
        steps.push(compiled!(ctx, &p.pattern, p.payload.as_ref()));
    }
    let t = Trajectory::new(ctx, a, steps);
    if !a.strict {
        return t.in_order();
    }
    match ignored(ctx, &a.ignore) {
        Ok(ignored) => t.strict(ignored),
        Err(outcome) => *outcome,
    }
}

/// The names of the `ignore` globs of a strict trajectory, together.
fn ignored(ctx: &EvalContext<'_>, globs: &[String]) -> Result<Option<NameSet>, Box<Outcome>> {
    let mut ignored: Option<NameSet> = None;
    for glob in globs {
        let set = Compiled::new(ctx, glob, None)?.set;
        match &mut ignored {
            Some(all) => all.union(&set),
            None => ignored = Some(set),
        }
    }
    Ok(ignored)
}

/// A trajectory's compiled steps and what its messages show.
struct Trajectory<'a, 'c, 'e> {
    ctx: &'a EvalContext<'c>,
    steps: Vec<Compiled<'e>>,
    /// The names any step matches: the signals a message shows.
    relevant: NameSet,
    /// The payload keys the steps name, shown with each signal.
    keys: Vec<&'e str>,
    /// Each step in words.
    expected: Vec<String>,
}

impl<'a, 'c, 'e> Trajectory<'a, 'c, 'e> {
    fn new(ctx: &'a EvalContext<'c>, a: &'e SignalTrajectory, steps: Vec<Compiled<'e>>) -> Self {
        let mut relevant = ctx.index().set(&steps[0].glob);
        for s in &steps[1..] {
            relevant.union(&s.set);
        }
        let mut keys: Vec<&str> = Vec::new();
        for p in &a.patterns {
            if let Some(Value::Object(m)) = &p.payload {
                for k in m.keys() {
                    if !keys.contains(&k.as_str()) {
                        keys.push(k);
                    }
                }
            }
        }
        Trajectory {
            ctx,
            steps,
            relevant,
            keys,
            expected: a.patterns.iter().map(SignalPattern::describe).collect(),
        }
    }

    /// Each step after the one before, anything between.
    fn in_order(&self) -> Outcome {
        let n = self.steps.len();
        let mut pos = 0usize;
        let mut matched = Vec::with_capacity(n);
        for (k, step) in self.steps.iter().enumerate() {
            let Some(i) = self.next_match(step, pos) else {
                let what = if k == 0 {
                    format!("expected {} (step 1 of {n})", self.expected[0])
                } else {
                    format!(
                        "expected {} after {} (step {} of {n})",
                        self.expected[k],
                        self.expected[k - 1],
                        k + 1
                    )
                };
                return self.failure(what, pos).matched(matched);
            };
            matched.push(self.ctx.signals()[i].index);
            pos = i + 1;
        }
        let at: Vec<String> = matched.iter().map(|i| format!("#{i}")).collect();
        Outcome::pass(format!("all {n} steps in order at {}", at.join(", ")))
            .expected(Value::from(self.expected.clone()))
            .matched(matched)
    }

    /// The first position from `pos` on that `step` matches.
    fn next_match(&self, step: &Compiled<'_>, pos: usize) -> Option<usize> {
        if step.set.is_empty() {
            return None;
        }
        self.ctx.index().ids[pos..]
            .iter()
            .enumerate()
            .filter(|(_, id)| step.set.contains(**id))
            .map(|(off, _)| pos + off)
            .find(|&i| step.payload_ok(self.ctx, i))
    }

    /// Each step right after the one before, only `ignored` names or
    /// signals a step matches between.
    fn strict(&self, ignored: Option<NameSet>) -> Outcome {
        let n = self.steps.len();
        let strict = Strict {
            ctx: self.ctx,
            steps: &self.steps,
            ignored,
        };
        match strict.find() {
            Ok(at) => {
                let matched: Vec<u64> = at.iter().map(|&i| self.ctx.signals()[i].index).collect();
                let at: Vec<String> = matched.iter().map(|i| format!("#{i}")).collect();
                Outcome::pass(format!(
                    "all {n} steps in order with nothing unmatched between them at {}",
                    at.join(", ")
                ))
                .expected(Value::from(self.expected.clone()))
                .matched(matched)
            }
            Err(miss) => {
                let stuck = miss.stuck.unwrap_or(self.ctx.signals().len());
                let blocker = miss.stuck.map(|i| self.ctx.signals()[i].index);
                self.failure(self.strict_miss(&miss), stuck)
                    .matched(blocker.into_iter().collect())
            }
        }
    }

    /// What a strict trajectory missed, in words.
    fn strict_miss(&self, miss: &StrictMiss) -> String {
        let (n, expected) = (self.steps.len(), &self.expected);
        match (miss.matched, miss.stuck) {
            (0, _) | (_, None) => format!(
                "expected {} (step {} of {n})",
                expected[miss.matched],
                miss.matched + 1
            ),
            (m, Some(i)) => format!(
                "expected {} right after {} (step {} of {n}, strict), but #{} {} came between \
                 them (allow such signals with `ignore`)",
                expected[m],
                expected[m - 1],
                m + 1,
                self.ctx.signals()[i].index,
                display::signal_with(&self.ctx.signals()[i], &self.keys)
            ),
        }
    }

    /// A failure saying `what`, with the relevant signals around `stuck`.
    fn failure(&self, what: String, stuck: usize) -> Outcome {
        let relevant: Vec<usize> = self.ctx.index().positions(&self.relevant).collect();
        let window = trajectory_window(self.ctx, &relevant, stuck, &self.keys);
        Outcome::fail(format!(
            "{what}; actual trajectory: [{}]",
            window.join(", ")
        ))
        .expected(Value::from(self.expected.clone()))
        .trajectory(window)
    }
}

/// A strict trajectory's search over the signals.
struct Strict<'a, 'c, 'e> {
    ctx: &'a EvalContext<'c>,
    steps: &'a [Compiled<'e>],
    /// Names allowed between steps whatever their payload.
    ignored: Option<NameSet>,
}

/// Why no strict match was found: how many steps the best attempt matched,
/// and the signal that stopped it (`None`: the end of the session).
struct StrictMiss {
    matched: usize,
    stuck: Option<usize>,
}

impl Strict<'_, '_, '_> {
    /// Whether the signal at `i` may stand between two steps: only the
    /// `ignore` globs' names may.
    fn ignored(&self, i: usize) -> bool {
        (self.ignored.as_ref()).is_some_and(|set| set.contains(self.ctx.index().ids[i]))
    }

    /// Where each step can stand: `reach[j][q]` when step `j` matches the
    /// signal at `q` and steps `0..j` can stand before it, each pair of
    /// consecutive steps with only ignored signals between them. Every
    /// start and every choice is searched (a step may also match an
    /// ignored signal, which may then be skipped): `k × n`.
    fn reach(&self, ignored: &[bool]) -> Vec<Vec<bool>> {
        let signals = ignored.len();
        let mut reach = vec![
            (0..signals)
                .map(|q| self.steps[0].matches_at(self.ctx, q))
                .collect::<Vec<bool>>(),
        ];
        for step in &self.steps[1..] {
            let before = reach.last().map(Vec::as_slice).unwrap_or_default();
            // Whether a place of the step before lies in the window since
            // the last signal that may not stand between two steps.
            let mut open = false;
            let mut here = vec![false; signals];
            for q in 0..signals {
                here[q] = open && step.matches_at(self.ctx, q);
                open = before[q] || (open && ignored[q]);
            }
            reach.push(here);
        }
        reach
    }

    /// The positions of the steps: the earliest place of the last step,
    /// and before each step the nearest place of the one before it.
    fn find(&self) -> Result<Vec<usize>, StrictMiss> {
        let signals = self.ctx.signals().len();
        let ignored: Vec<bool> = (0..signals).map(|i| self.ignored(i)).collect();
        let reach = self.reach(&ignored);
        let last = reach.len() - 1;
        let Some(end) = reach[last].iter().position(|&r| r) else {
            return Err(self.miss(&reach, &ignored));
        };
        let mut at = vec![end];
        for j in (0..last).rev() {
            let next = at[at.len() - 1];
            // reach[j + 1][next] holds: such a place exists.
            let place = (0..next).rev().find(|&p| reach[j][p]).unwrap_or_default();
            at.push(place);
        }
        at.reverse();
        Ok(at)
    }

    /// The furthest any placement got, and the signal that stopped its
    /// first attempt (`None`: the end of the session).
    fn miss(&self, reach: &[Vec<bool>], ignored: &[bool]) -> StrictMiss {
        let Some(placed) = reach.iter().rposition(|r| r.contains(&true)) else {
            return StrictMiss {
                matched: 0,
                stuck: None,
            };
        };
        let first = reach[placed].iter().position(|&r| r).unwrap_or_default();
        StrictMiss {
            matched: placed + 1,
            stuck: (first + 1..ignored.len()).find(|&i| !ignored[i]),
        }
    }
}
