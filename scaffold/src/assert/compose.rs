//! `all`, `any`, `not`: assertions made of assertions.
//!
//! Every inner assertion is evaluated (no short-circuit), so reports show
//! them all and `llm.judge` recording numbers do not depend on results.

use serde::{Deserialize, Serialize};

use super::Assertion;
use super::result::{AssertionResult, Outcome};

/// Every inner assertion holds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct All {
    /// The inner assertions.
    pub assertions: Vec<Assertion>,
}

/// At least one inner assertion holds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Any {
    /// The inner assertions.
    pub assertions: Vec<Assertion>,
}

/// The inner assertion does not hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Not {
    /// The inner assertion.
    pub assertion: Box<Assertion>,
}

fn summary(r: &AssertionResult) -> String {
    format!("{}: {}", r.assertion.type_name(), r.message)
}

pub(crate) fn all(children: Vec<AssertionResult>) -> Outcome {
    let failed: Vec<&AssertionResult> = children.iter().filter(|r| !r.passed).collect();
    let n = children.len();
    let mut o = if failed.is_empty() {
        Outcome::pass(format!("all {n} hold"))
    } else {
        Outcome::fail(format!(
            "{} of {n} failed; first: {}",
            failed.len(),
            summary(failed[0])
        ))
    };
    o.children = children;
    o
}

pub(crate) fn any(children: Vec<AssertionResult>) -> Outcome {
    let n = children.len();
    let mut o = match children.iter().find(|r| r.passed) {
        Some(r) => Outcome::pass(format!(
            "{} of {n} hold; {}",
            children.iter().filter(|r| r.passed).count(),
            summary(r)
        )),
        None => Outcome::fail(format!(
            "none of {n} holds: {}",
            children.iter().map(summary).collect::<Vec<_>>().join("; ")
        )),
    };
    o.children = children;
    o
}

pub(crate) fn not(child: AssertionResult) -> Outcome {
    let mut o = if child.passed {
        Outcome::fail(format!(
            "expected this to fail, but it held: {}",
            summary(&child)
        ))
    } else {
        Outcome::pass(format!("fails as expected: {}", summary(&child)))
    };
    o.children = vec![child];
    o
}
