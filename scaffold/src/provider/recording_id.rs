//! Recording ids: `eval__{dataset}__{case}__{variant}__{node}__inv{n}`, plus
//! `__t{trial}` when an eval runs several trials.
//!
//! This module is the only place that makes or parses them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::util::file_safe as component;

/// The key of one recorded provider call.
///
/// ```
/// use scaffold::provider::RecordingId;
/// let id = RecordingId::new("code-review.v1", "sql-injection", "gpt-4o", "reviewer", 0);
/// assert_eq!(id.to_string(), "eval__code-review.v1__sql-injection__gpt-4o__reviewer__inv0");
/// let with_trial = id.clone().with_trial(Some(2));
/// assert_eq!(with_trial.to_string(), "eval__code-review.v1__sql-injection__gpt-4o__reviewer__inv0__t2");
/// assert_eq!(with_trial.to_string().parse::<RecordingId>().unwrap(), with_trial);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordingId {
    /// Dataset id or name.
    pub dataset: String,
    /// Case id.
    pub case: String,
    /// Variant name.
    pub variant: String,
    /// The node (agent) that made the call.
    pub node: String,
    /// The how-manieth call of that node in the run, from 0.
    pub invocation: u32,
    /// The trial, when the eval runs more than one.
    pub trial: Option<u32>,
}

/// Why a string is not a recording id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{input}` is not a recording id ({reason}); expected eval__{{dataset}}__{{case}}__{{variant}}__{{node}}__inv{{n}}[__t{{trial}}]"
)]
pub struct RecordingIdError {
    /// The string that failed to parse.
    pub input: String,
    /// What was wrong.
    pub reason: String,
}

impl RecordingId {
    /// A recording id; components are made file-name safe.
    pub fn new(
        dataset: &str,
        case: &str,
        variant: &str,
        node: &str,
        invocation: u32,
    ) -> RecordingId {
        RecordingId {
            dataset: component(dataset),
            case: component(case),
            variant: component(variant),
            node: component(node),
            invocation,
            trial: None,
        }
    }

    /// Set the trial (use `None` when the eval runs one trial).
    pub fn with_trial(mut self, trial: Option<u32>) -> RecordingId {
        self.trial = trial;
        self
    }

    /// The same call, one invocation later.
    pub fn invocation(&self, invocation: u32) -> RecordingId {
        RecordingId {
            invocation,
            ..self.clone()
        }
    }
}

impl fmt::Display for RecordingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "eval__{}__{}__{}__{}__inv{}",
            self.dataset, self.case, self.variant, self.node, self.invocation
        )?;
        if let Some(trial) = self.trial {
            write!(f, "__t{trial}")?;
        }
        Ok(())
    }
}

impl FromStr for RecordingId {
    type Err = RecordingIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| RecordingIdError {
            input: s.to_string(),
            reason: reason.to_string(),
        };
        let parts: Vec<&str> = s.split("__").collect();
        if parts.first() != Some(&"eval") {
            return Err(err("it must start with `eval__`"));
        }
        let (inv, trial) = match parts.len() {
            6 => (parts[5], None),
            7 => {
                let t = parts[6]
                    .strip_prefix('t')
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| err("the last part must be `t{trial}`"))?;
                (parts[5], Some(t))
            }
            n => return Err(err(&format!("it has {n} `__`-separated parts, not 6 or 7"))),
        };
        let invocation = inv
            .strip_prefix("inv")
            .and_then(|n| n.parse::<u32>().ok())
            .ok_or_else(|| err("the sixth part must be `inv{n}`"))?;
        if parts[1..5].iter().any(|p| p.is_empty()) {
            return Err(err("a part is empty"));
        }
        Ok(RecordingId {
            dataset: parts[1].to_string(),
            case: parts[2].to_string(),
            variant: parts[3].to_string(),
            node: parts[4].to_string(),
            invocation,
            trial,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unsafe_components_are_cleaned() {
        let id = RecordingId::new("my data/set", "a__b", "v", "n", 3);
        assert_eq!(id.to_string(), "eval__my-data-set__a_b__v__n__inv3");
    }

    #[test]
    fn bad_ids_are_rejected_with_reason() {
        for bad in [
            "",
            "foo__a__b__c__d__inv0",
            "eval__a__b__c__d__x0",
            "eval__a__b__c__d",
            "eval__a__b__c__d__inv0__x",
            "eval____b__c__d__inv0",
        ] {
            let e = bad.parse::<RecordingId>().unwrap_err();
            assert!(e.to_string().contains("expected eval__"), "{e}");
        }
    }

    proptest! {
        #[test]
        fn make_then_parse_round_trips(
            d in ".{0,12}", c in ".{0,12}", v in ".{0,12}", n in ".{0,12}",
            inv in 0u32..1000, trial in proptest::option::of(0u32..50)
        ) {
            let id = RecordingId::new(&d, &c, &v, &n, inv).with_trial(trial);
            let parsed: RecordingId = id.to_string().parse().unwrap();
            prop_assert_eq!(parsed, id);
        }
    }
}
