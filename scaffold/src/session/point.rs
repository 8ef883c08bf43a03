//! Fork points: where in a session a fork continues, and how they resolve.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::{Value, json};

use super::SessionError;
use crate::signal::{Signal, names};
use crate::store::apply_state_change;

/// Which entry into a phase: the first, the last, or the n-th (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    /// The first time the workflow entered the phase.
    First,
    /// The last time.
    Last,
    /// The n-th time, counting from 1.
    Nth(u32),
}

impl Occurrence {
    fn to_json(self) -> Value {
        match self {
            Occurrence::First => json!("first"),
            Occurrence::Last => json!("last"),
            Occurrence::Nth(n) => json!(n),
        }
    }
}

impl fmt::Display for Occurrence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Occurrence::First => f.write_str("first"),
            Occurrence::Last => f.write_str("last"),
            Occurrence::Nth(n) => write!(f, "{n}"),
        }
    }
}

/// A phase whose occurrence is still to be chosen: [`ForkPoint::phase`]
/// returns it, and [`first`](PhasePoint::first), [`last`](PhasePoint::last)
/// or [`nth`](PhasePoint::nth) make the fork point (phases loop, so the
/// occurrence must be explicit).
#[derive(Debug, Clone)]
pub struct PhasePoint {
    phase: String,
}

impl PhasePoint {
    /// The first time the workflow entered the phase.
    pub fn first(self) -> ForkPoint {
        self.occurrence(Occurrence::First)
    }

    /// The last time the workflow entered the phase.
    pub fn last(self) -> ForkPoint {
        self.occurrence(Occurrence::Last)
    }

    /// The `n`-th time the workflow entered the phase (from 1: the
    /// `occurrence` of its `phase:entered` signal).
    pub fn nth(self, n: u32) -> ForkPoint {
        self.occurrence(Occurrence::Nth(n))
    }

    /// The given occurrence.
    pub fn occurrence(self, occurrence: Occurrence) -> ForkPoint {
        ForkPoint(Kind::Phase {
            phase: self.phase,
            occurrence,
        })
    }
}

type Predicate = dyn Fn(&Value) -> bool + Send + Sync;

/// Where in a session a fork continues. Always explicit: a phase with its
/// occurrence, a signal index, or the first point where a predicate over the
/// state holds.
///
/// How each kind resolves to (signal index, phase to continue at, state):
///
/// - **phase** (`ForkPoint::phase("coding").first()`): the index of the
///   chosen `phase:entered` signal of that phase; the fork enters that phase
///   with the state just before that signal.
/// - **index** (`ForkPoint::index(47)`): the state after signal 47; the fork
///   re-enters the phase current at signal 47, that is the phase of the last
///   `phase:entered` at or before it (if signal 47 precedes every
///   `phase:entered`, the first phase the session entered). Whatever that
///   phase's agent already did before signal 47 is in the state, and the
///   agent runs again.
/// - **predicate** (`ForkPoint::when("5 tasks", |s| ...)`): the first index
///   whose state (after that signal) satisfies the predicate; then as for an
///   index.
///
/// As a string (for the CLI and `SCAFFOLD_FORK_AT`):
///
/// ```
/// use scaffold::session::ForkPoint;
/// let p: ForkPoint = "phase:coding:first".parse().unwrap();
/// assert_eq!(p.to_string(), "phase:coding:first");
/// assert_eq!("phase:coding:2".parse::<ForkPoint>().unwrap().to_string(), "phase:coding:2");
/// assert_eq!("index:47".parse::<ForkPoint>().unwrap().spec(), serde_json::json!({"eventIndex": 47}));
/// let err = "coding".parse::<ForkPoint>().unwrap_err().to_string();
/// assert!(err.contains("expected phase:<name>:first"), "{err}");
/// ```
#[derive(Clone)]
pub struct ForkPoint(Kind);

#[derive(Clone)]
enum Kind {
    Phase {
        phase: String,
        occurrence: Occurrence,
    },
    Index(u64),
    When {
        description: String,
        predicate: Arc<Predicate>,
    },
}

impl ForkPoint {
    /// An entry into `phase`; choose which with `.first()`, `.last()` or `.nth(n)`.
    pub fn phase(phase: impl Into<String>) -> PhasePoint {
        PhasePoint {
            phase: phase.into(),
        }
    }

    /// The exact signal index.
    pub fn index(index: u64) -> ForkPoint {
        ForkPoint(Kind::Index(index))
    }

    /// The first signal after which the folded state satisfies `predicate`;
    /// `description` names it in the fork point and in errors.
    pub fn when(
        description: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> ForkPoint {
        ForkPoint(Kind::When {
            description: description.into(),
            predicate: Arc::new(predicate),
        })
    }

    /// The point as JSON, without its resolution: `{"phase": "coding",
    /// "occurrence": "first"}`, `{"eventIndex": 47}` or `{"where": "..."}`.
    pub fn spec(&self) -> Value {
        match &self.0 {
            Kind::Phase { phase, occurrence } => {
                json!({"phase": phase, "occurrence": occurrence.to_json()})
            }
            Kind::Index(index) => json!({"eventIndex": index}),
            Kind::When { description, .. } => json!({"where": description}),
        }
    }

    /// Resolve the point in the session `session` (its initial state and
    /// signals, in index order from 0).
    pub fn resolve(
        &self,
        session: &str,
        initial_state: &Value,
        signals: &[Signal],
    ) -> Result<ResolvedFork, SessionError> {
        let (position, phase, state) = match &self.0 {
            Kind::Phase { phase, occurrence } => {
                let entries: Vec<usize> = signals
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| entered_phase(s) == Some(phase.as_str()))
                    .map(|(i, _)| i)
                    .collect();
                if entries.is_empty() {
                    return Err(SessionError::PhaseNeverEntered {
                        session: session.to_owned(),
                        phase: phase.clone(),
                        entered: phases_entered(signals),
                    });
                }
                let chosen = match occurrence {
                    Occurrence::First => Some(entries[0]),
                    Occurrence::Last => entries.last().copied(),
                    Occurrence::Nth(n) => (*n as usize)
                        .checked_sub(1)
                        .and_then(|i| entries.get(i).copied()),
                };
                let Some(position) = chosen else {
                    return Err(SessionError::NoSuchOccurrence {
                        session: session.to_owned(),
                        phase: phase.clone(),
                        count: entries.len(),
                        occurrence: match occurrence {
                            Occurrence::Nth(n) => *n,
                            _ => 0,
                        },
                    });
                };
                // `phase:entered` changes no state: the state before it.
                let state = fold(initial_state, &signals[..position]);
                (position, phase.clone(), state)
            }
            Kind::Index(index) => {
                let position = usize::try_from(*index)
                    .ok()
                    .filter(|&p| p < signals.len())
                    .ok_or_else(|| SessionError::IndexPastEnd {
                        session: session.to_owned(),
                        index: *index,
                        count: signals.len(),
                    })?;
                let state = fold(initial_state, &signals[..=position]);
                let phase = current_phase(session, signals, position)?;
                (position, phase, state)
            }
            Kind::When {
                description,
                predicate,
            } => {
                let mut state = initial_state.clone();
                let mut found = None;
                for (position, signal) in signals.iter().enumerate() {
                    if let Some(key) = signal.state_key() {
                        apply_state_change(&mut state, key, &signal.payload);
                    }
                    if predicate(&state) {
                        found = Some(position);
                        break;
                    }
                }
                let Some(position) = found else {
                    return Err(SessionError::PredicateNeverTrue {
                        session: session.to_owned(),
                        description: description.clone(),
                        count: signals.len(),
                    });
                };
                let phase = current_phase(session, signals, position)?;
                (position, phase, state)
            }
        };
        let event_index = signals[position].index;
        let mut fork_point = self.spec();
        fork_point["eventIndex"] = json!(event_index);
        fork_point["resumeAt"] = json!(phase);
        Ok(ResolvedFork {
            event_index,
            phase,
            state,
            fork_point,
        })
    }
}

/// A fork point resolved in one session.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFork {
    /// The index of the signal the point names.
    pub event_index: u64,
    /// The phase the fork enters first.
    pub phase: String,
    /// The state the fork starts from.
    pub state: Value,
    /// What the child session stores as its fork point: the spec plus
    /// `eventIndex` and `resumeAt` (the phase), e.g.
    /// `{"phase":"coding","occurrence":"first","eventIndex":47,"resumeAt":"coding"}`.
    pub fork_point: Value,
}

fn fold(initial: &Value, signals: &[Signal]) -> Value {
    crate::store::fold_state(initial.clone(), signals)
}

/// The phase a `phase:entered` signal enters.
fn entered_phase(signal: &Signal) -> Option<&str> {
    if signal.name == names::PHASE_ENTERED {
        signal.payload.get("phase").and_then(Value::as_str)
    } else {
        None
    }
}

/// The distinct phases entered, in order of first entry, comma-separated.
fn phases_entered(signals: &[Signal]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for phase in signals.iter().filter_map(entered_phase) {
        if !seen.contains(&phase) {
            seen.push(phase);
        }
    }
    if seen.is_empty() {
        "none".to_owned()
    } else {
        seen.join(", ")
    }
}

/// The phase current at `position`: the last entered at or before it, else
/// the first entered after it.
fn current_phase(
    session: &str,
    signals: &[Signal],
    position: usize,
) -> Result<String, SessionError> {
    signals[..=position]
        .iter()
        .rev()
        .find_map(entered_phase)
        .or_else(|| signals[position..].iter().find_map(entered_phase))
        .map(str::to_owned)
        .ok_or_else(|| SessionError::NoPhase {
            session: session.to_owned(),
        })
}

impl fmt::Display for ForkPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Phase { phase, occurrence } => write!(f, "phase:{phase}:{occurrence}"),
            Kind::Index(index) => write!(f, "index:{index}"),
            Kind::When { description, .. } => write!(f, "where:{description}"),
        }
    }
}

impl fmt::Debug for ForkPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ForkPoint({self})")
    }
}

impl FromStr for ForkPoint {
    type Err = SessionError;

    /// `phase:<name>:first`, `phase:<name>:last`, `phase:<name>:<n>` (n from
    /// 1) or `index:<n>`. A predicate has no string form.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| SessionError::BadForkPoint {
            input: s.to_owned(),
            reason: reason.to_owned(),
        };
        let text = s.trim();
        if let Some(index) = text.strip_prefix("index:") {
            return index
                .trim()
                .parse::<u64>()
                .map(ForkPoint::index)
                .map_err(|_| bad("the index must be a whole number"));
        }
        let Some(rest) = text.strip_prefix("phase:") else {
            return Err(bad("it starts with neither `phase:` nor `index:`"));
        };
        let Some((phase, occurrence)) = rest.rsplit_once(':') else {
            return Err(bad("the occurrence is missing"));
        };
        if phase.is_empty() {
            return Err(bad("the phase name is empty"));
        }
        let occurrence = match occurrence.trim() {
            "first" => Occurrence::First,
            "last" => Occurrence::Last,
            n => match n.parse::<u32>() {
                Ok(0) => return Err(bad("occurrences count from 1")),
                Ok(n) => Occurrence::Nth(n),
                Err(_) => return Err(bad("the occurrence must be first, last or a number")),
            },
        };
        Ok(ForkPoint::phase(phase).occurrence(occurrence))
    }
}
