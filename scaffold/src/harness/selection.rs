//! Which cells a run selected: libtest's filter and flags, and the
//! settings that pick cells. Kept with the run when it begins
//! ([`EvalRunMeta::selection`](crate::eval::EvalRunMeta::selection)), so
//! that a resume runs the run's own cells and no other.

use std::fmt;

use libtest_mimic::Arguments;
use serde::{Deserialize, Serialize};

use super::TAGS_ENV;
use super::settings::VARIANTS_ENV;

/// How a run chose its cells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Selection {
    /// libtest's filter (`cargo test --test evals -- FILTER`). `None` for a
    /// nextest run, whose processes each name one cell.
    filter: Option<String>,
    /// `--exact`.
    exact: bool,
    /// `--skip`, sorted.
    skip: Vec<String>,
    /// `--ignored`.
    ignored: bool,
    /// `--include-ignored`.
    include_ignored: bool,
    /// `SCAFFOLD_TAGS`, sorted.
    tags: Vec<String>,
    /// `SCAFFOLD_VARIANTS`, sorted.
    variants: Vec<String>,
}

fn sorted(list: &[String]) -> Vec<String> {
    let mut list = list.to_vec();
    list.sort();
    list.dedup();
    list
}

impl Selection {
    /// The selection of a process given `args`, `tags` and `variants`.
    /// Under nextest every process is given one cell of the run (its own
    /// filter and flags): the run's selection is the settings alone.
    pub(crate) fn new(
        args: &Arguments,
        tags: Option<&[String]>,
        variants: Option<&[String]>,
        nextest: bool,
    ) -> Selection {
        let settings = Selection {
            tags: sorted(tags.unwrap_or_default()),
            variants: sorted(variants.unwrap_or_default()),
            ..Selection::default()
        };
        if nextest {
            return settings;
        }
        Selection {
            filter: args.filter.clone().filter(|f| !f.is_empty()),
            exact: args.exact,
            skip: sorted(&args.skip),
            ignored: args.ignored,
            include_ignored: args.include_ignored,
            ..settings
        }
    }

    /// As stored with the run.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored selection; `None` if it does not parse (written by a newer scaffold).
    pub(crate) fn from_json(json: &str) -> Option<Selection> {
        serde_json::from_str(json).ok()
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut args: Vec<String> = Vec::new();
        if let Some(filter) = &self.filter {
            args.push(filter.clone());
        }
        if self.exact {
            args.push("--exact".into());
        }
        args.extend(self.skip.iter().map(|s| format!("--skip {s}")));
        if self.ignored {
            args.push("--ignored".into());
        }
        if self.include_ignored {
            args.push("--include-ignored".into());
        }
        let mut parts = Vec::new();
        parts.push(if args.is_empty() {
            "no test filter".to_string()
        } else {
            format!("test arguments `-- {}`", args.join(" "))
        });
        for (env, list) in [(TAGS_ENV, &self.tags), (VARIANTS_ENV, &self.variants)] {
            parts.push(if list.is_empty() {
                format!("{env} unset")
            } else {
                format!("{env}={}", list.join(","))
            });
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Arguments {
        Arguments::from_iter(std::iter::once("evals").chain(list.iter().copied()))
    }

    #[test]
    fn a_selection_says_what_chose_the_cells() {
        let tags = ["smoke".to_string(), "fast".to_string()];
        let all = Selection::new(&args(&[]), None, None, false);
        assert_eq!(
            all.to_string(),
            "no test filter, SCAFFOLD_TAGS unset, SCAFFOLD_VARIANTS unset"
        );
        let some = Selection::new(
            &args(&["c01", "--exact", "--skip", "b", "--skip", "a"]),
            Some(&tags),
            Some(&["gpt-*".to_string()]),
            false,
        );
        assert_eq!(
            some.to_string(),
            "test arguments `-- c01 --exact --skip a --skip b`, SCAFFOLD_TAGS=fast,smoke, \
             SCAFFOLD_VARIANTS=gpt-*"
        );
        assert_eq!(Selection::from_json(&some.to_json()), Some(some.clone()));
        assert_ne!(some, all);
        // The order of tags does not matter.
        let reordered = ["fast".to_string(), "smoke".to_string()];
        assert_eq!(
            Selection::new(&args(&[]), Some(&tags), None, false),
            Selection::new(&args(&[]), Some(&reordered), None, false)
        );
    }

    #[test]
    fn under_nextest_the_run_selects_by_its_settings_alone() {
        let one = Selection::new(&args(&["qa::a::c1", "--exact"]), None, None, true);
        let other = Selection::new(&args(&["qa::b::c2", "--exact"]), None, None, true);
        assert_eq!(one, other);
        assert_eq!(one, Selection::new(&args(&[]), None, None, false));
    }
}
