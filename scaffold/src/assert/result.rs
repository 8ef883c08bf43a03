//! The result of evaluating one assertion.

use serde::Serialize;
use serde_json::Value;

use super::Assertion;

/// Whether an assertion held, and why, in words a person understands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssertionResult {
    /// The assertion evaluated (in its canonical form: seed 001's names are
    /// shown as the assertion they stand for).
    pub assertion: Assertion,
    /// Whether it held.
    pub passed: bool,
    /// What was expected and what happened, e.g. `expected
    /// agent:activated{agent: fixer} after review:complete; actual
    /// trajectory: [...]`.
    pub message: String,
    /// The expected value, when there is one to show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    /// The actual value, when there is one to show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    /// For trajectory-like assertions: the relevant actual sequence of
    /// signals (possibly cut around where matching stopped, with `…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Vec<String>>,
    /// For `all`, `any` and `not`: the results of the inner assertions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<AssertionResult>,
    /// An `llm.judge` whose score is within the borderline margin of its
    /// minimum (see [`Borderline`](super::Borderline)).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub borderline: bool,
    /// The indices of the signals the assertion matched or compared (a
    /// trajectory's steps, the signal `snapshot.at` looked after, the calls
    /// `tool.calledWith` compared, the calls `tool.called` and
    /// `tool.notCalled` counted): what the HTML transcript highlights.
    #[serde(skip)]
    pub(crate) matched: Vec<u64>,
}

impl std::fmt::Display for AssertionResult {
    /// `PASS type: message` / `FAIL type: message`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            if self.passed { "PASS" } else { "FAIL" },
            self.assertion.type_name(),
            self.message
        )
    }
}

/// What a family evaluator returns; the dispatcher adds the assertion.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) passed: bool,
    pub(crate) message: String,
    pub(crate) expected: Option<Value>,
    pub(crate) actual: Option<Value>,
    pub(crate) trajectory: Option<Vec<String>>,
    pub(crate) children: Vec<AssertionResult>,
    pub(crate) borderline: bool,
    pub(crate) matched: Vec<u64>,
}

impl Outcome {
    pub(crate) fn pass(message: impl Into<String>) -> Outcome {
        Outcome {
            passed: true,
            message: message.into(),
            ..Outcome::default()
        }
    }

    pub(crate) fn fail(message: impl Into<String>) -> Outcome {
        Outcome {
            passed: false,
            message: message.into(),
            ..Outcome::default()
        }
    }

    pub(crate) fn new(passed: bool, message: impl Into<String>) -> Outcome {
        Outcome {
            passed,
            message: message.into(),
            ..Outcome::default()
        }
    }

    pub(crate) fn expected(mut self, v: impl Into<Value>) -> Outcome {
        self.expected = Some(v.into());
        self
    }

    pub(crate) fn actual(mut self, v: impl Into<Value>) -> Outcome {
        self.actual = Some(v.into());
        self
    }

    pub(crate) fn borderline(mut self, borderline: bool) -> Outcome {
        self.borderline = borderline;
        self
    }

    /// The signals (by index) the assertion matched or compared.
    pub(crate) fn matched(mut self, indices: Vec<u64>) -> Outcome {
        self.matched = indices;
        self
    }

    pub(crate) fn trajectory(mut self, t: Vec<String>) -> Outcome {
        self.trajectory = Some(t);
        self
    }

    pub(crate) fn into_result(self, assertion: &Assertion) -> AssertionResult {
        AssertionResult {
            assertion: assertion.clone(),
            passed: self.passed,
            message: self.message,
            expected: self.expected,
            actual: self.actual,
            trajectory: self.trajectory,
            children: self.children,
            borderline: self.borderline,
            matched: self.matched,
        }
    }
}

/// A count bound as written in datasets: `exact`/`count`, `min`, `max`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bounds {
    pub(crate) exact: Option<u64>,
    pub(crate) min: Option<u64>,
    pub(crate) max: Option<u64>,
}

impl Bounds {
    /// With nothing set, at least one.
    pub(crate) fn or_at_least_one(self) -> Bounds {
        if self.exact.is_none() && self.min.is_none() && self.max.is_none() {
            Bounds {
                min: Some(1),
                ..self
            }
        } else {
            self
        }
    }

    pub(crate) fn holds(&self, n: u64) -> bool {
        self.exact.is_none_or(|e| n == e)
            && self.min.is_none_or(|m| n >= m)
            && self.max.is_none_or(|m| n <= m)
    }

    /// "exactly 4", "at least 1", "between 1 and 3", "at most 2".
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(e) = self.exact {
            parts.push(format!("exactly {e}"));
        }
        match (self.min, self.max) {
            (Some(a), Some(b)) => parts.push(format!("between {a} and {b}")),
            (Some(a), None) => parts.push(format!("at least {a}")),
            (None, Some(b)) => parts.push(format!("at most {b}")),
            (None, None) => {}
        }
        if parts.is_empty() {
            "any number".into()
        } else {
            parts.join(" and ")
        }
    }

    pub(crate) fn to_value(self) -> Value {
        let mut m = serde_json::Map::new();
        if let Some(e) = self.exact {
            m.insert("exact".into(), e.into());
        }
        if let Some(e) = self.min {
            m.insert("min".into(), e.into());
        }
        if let Some(e) = self.max {
            m.insert("max".into(), e.into());
        }
        Value::Object(m)
    }
}
