//! The harness's settings that come from environment variables (nextest and
//! `cargo insta test` pass no custom flags): parsed and checked once, each
//! error one line naming the variable and what it expects.

use std::path::{Path, PathBuf};

/// Environment variable: comma-separated tags; only cases with one of them run.
pub const TAGS_ENV: &str = "SCAFFOLD_TAGS";
/// Environment variable: the session database (`:memory:` or a path).
pub const DATABASE_ENV: &str = "SCAFFOLD_DATABASE";
/// Environment variable: the report formats (default `table,json`).
pub const FORMAT_ENV: &str = "SCAFFOLD_FORMAT";
/// Environment variable: the baseline results (a file or a directory).
pub const BASELINE_ENV: &str = "SCAFFOLD_BASELINE";

/// Environment variable: run every eval this many trials.
pub const TRIALS_ENV: &str = "SCAFFOLD_TRIALS";
/// Environment variable: comma-separated globs on variant names.
pub const VARIANTS_ENV: &str = "SCAFFOLD_VARIANTS";
/// Environment variable: the directory the reports are written to.
pub const OUTPUT_ENV: &str = "SCAFFOLD_OUTPUT";
/// Environment variable: the snapshot directory, or `off`.
pub const SNAPSHOTS_ENV: &str = "SCAFFOLD_SNAPSHOTS";
/// Environment variable: resume an interrupted run (`1`, `latest` or a run id).
pub const RESUME_ENV: &str = "SCAFFOLD_RESUME";
/// Environment variable: how many finished cells keep their whole record in
/// memory; the others keep a summary and the JSON, JUnit and HTML reports
/// are then written from the store.
pub const WHOLE_RECORDS_ENV: &str = "SCAFFOLD_WHOLE_RECORDS";
/// The default of [`WHOLE_RECORDS_ENV`]: small runs never read their cells back.
pub const DEFAULT_WHOLE_RECORDS: usize = 256;
/// Environment variable: the run's cost budget in US dollars; once its
/// cells have spent it, no new cell starts.
pub const MAX_COST_ENV: &str = "SCAFFOLD_MAX_COST";
/// Environment variable: `1` makes every eval of the run strict (every
/// failed cell fails its test and the run; see `Eval::strict`).
pub const STRICT_ENV: &str = "SCAFFOLD_STRICT";
/// Environment variable: how many cells run at once, as libtest reads it
/// (`--test-threads` wins).
pub const TEST_THREADS_ENV: &str = "RUST_TEST_THREADS";

/// Where the cells' snapshots are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Snapshots {
    /// Check against this directory.
    Dir(PathBuf),
    /// Do not check.
    Off,
}

/// Which run `SCAFFOLD_RESUME` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resume {
    /// The newest unfinished run.
    Latest,
    /// This run.
    Id(String),
}

impl Resume {
    /// How the user wrote it, for messages.
    pub(crate) fn as_written(&self) -> String {
        match self {
            Resume::Latest => format!("{RESUME_ENV}=latest"),
            Resume::Id(id) => format!("{RESUME_ENV}={id}"),
        }
    }
}

/// The settings read from the environment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// `SCAFFOLD_TRIALS`.
    pub(crate) trials: Option<u32>,
    /// `SCAFFOLD_VARIANTS`.
    pub(crate) variants: Option<Vec<String>>,
    /// `SCAFFOLD_OUTPUT`, absolute.
    pub(crate) output: Option<PathBuf>,
    /// `SCAFFOLD_SNAPSHOTS`, or `snapshots/` in the package.
    pub(crate) snapshots: Snapshots,
    /// `SCAFFOLD_RESUME`.
    pub(crate) resume: Option<Resume>,
    /// `SCAFFOLD_WHOLE_RECORDS`, or [`DEFAULT_WHOLE_RECORDS`].
    pub(crate) whole_records: usize,
    /// `RUST_TEST_THREADS`, as libtest reads it (`--test-threads` wins).
    pub(crate) test_threads: Option<usize>,
    /// `SCAFFOLD_MAX_COST`, in US dollars.
    pub(crate) max_cost: Option<f64>,
    /// `SCAFFOLD_STRICT`: every eval strict.
    pub(crate) strict: bool,
}

/// The value of `name`, trimmed; `None` when unset or blank.
pub(super) fn var(name: &str) -> Result<Option<String>, String> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v.trim().to_string())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name}: the value is not UTF-8")),
    }
}

/// `raw` as a path; relative paths are taken from the package's directory.
fn path_in(manifest_dir: &Path, raw: &str) -> PathBuf {
    let p = PathBuf::from(raw);
    if p.is_absolute() {
        p
    } else {
        manifest_dir.join(p)
    }
}

fn directory(name: &str, manifest_dir: &Path, raw: &str, what: &str) -> Result<PathBuf, String> {
    let path = path_in(manifest_dir, raw);
    if path.exists() && !path.is_dir() {
        return Err(format!(
            "{name}: expected a directory for {what}, but {} is not a directory",
            path.display()
        ));
    }
    Ok(path)
}

/// The whole number of `what` (at least 1) in the environment variable
/// `env`, if it is set.
fn at_least_one<T: std::str::FromStr + PartialEq + Default>(
    env: &str,
    what: &str,
) -> Result<Option<T>, String> {
    var(env)?
        .map(|raw| match raw.parse::<T>() {
            Ok(n) if n != T::default() => Ok(n),
            _ => Err(format!(
                "{env}: expected a whole number of {what} of at least 1, got `{raw}`"
            )),
        })
        .transpose()
}

impl Settings {
    /// Read the settings of the package at `manifest_dir` from the environment.
    pub(crate) fn from_env(manifest_dir: &Path) -> Result<Settings, String> {
        let trials = at_least_one::<u32>(TRIALS_ENV, "trials")?;
        let variants = var(VARIANTS_ENV)?
            .map(|raw| {
                let globs: Vec<String> = raw
                    .split(',')
                    .map(|g| g.trim().to_string())
                    .filter(|g| !g.is_empty())
                    .collect();
                if globs.is_empty() {
                    Err(format!(
                        "{VARIANTS_ENV}: expected comma-separated variant names or globs \
                         (`*` any characters, `?` one), got `{raw}`"
                    ))
                } else {
                    Ok(globs)
                }
            })
            .transpose()?;
        let output = var(OUTPUT_ENV)?
            .map(|raw| directory(OUTPUT_ENV, manifest_dir, &raw, "the reports"))
            .transpose()?;
        let snapshots = match var(SNAPSHOTS_ENV)? {
            None => Snapshots::Dir(manifest_dir.join("snapshots")),
            Some(raw) if raw.eq_ignore_ascii_case("off") => Snapshots::Off,
            Some(raw) => Snapshots::Dir(directory(
                SNAPSHOTS_ENV,
                manifest_dir,
                &raw,
                "the snapshots (or `off` to check none)",
            )?),
        };
        let resume = match var(RESUME_ENV)? {
            None => None,
            Some(raw) => match raw.to_ascii_lowercase().as_str() {
                "0" | "false" | "no" | "off" => None,
                "1" | "true" | "yes" | "latest" => Some(Resume::Latest),
                _ if raw.chars().any(char::is_whitespace) => {
                    return Err(format!(
                        "{RESUME_ENV}: expected `1` or `latest` (the newest unfinished run) \
                         or a run id, got `{raw}`"
                    ));
                }
                _ => Some(Resume::Id(raw)),
            },
        };
        let whole_records = match var(WHOLE_RECORDS_ENV)? {
            None => DEFAULT_WHOLE_RECORDS,
            Some(raw) => raw.parse::<usize>().map_err(|_| {
                format!(
                    "{WHOLE_RECORDS_ENV}: expected a whole number of cells (0 or more), got `{raw}`"
                )
            })?,
        };
        let test_threads = at_least_one::<usize>(TEST_THREADS_ENV, "threads")?;
        let max_cost = var(MAX_COST_ENV)?.map(|raw| max_cost(&raw)).transpose()?;
        let strict = match var(STRICT_ENV)?.map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("0" | "false" | "no" | "off") => false,
            Some("1" | "true" | "yes" | "on") => true,
            Some(_) => {
                return Err(format!(
                    "{STRICT_ENV}: expected `1` (every eval strict: any failed cell fails the \
                     run) or `0`, got `{}`",
                    var(STRICT_ENV)?.unwrap_or_default()
                ));
            }
        };
        Ok(Settings {
            strict,
            max_cost,
            whole_records,
            test_threads,
            trials,
            variants,
            output,
            snapshots,
            resume,
        })
    }
}

/// `SCAFFOLD_MAX_COST`'s dollars: a number above 0, `$` allowed before it.
fn max_cost(raw: &str) -> Result<f64, String> {
    let number = raw.strip_prefix('$').unwrap_or(raw).trim();
    match number.parse::<f64>() {
        Ok(usd) if super::budget::valid(usd) => Ok(usd),
        _ => Err(format!(
            "{MAX_COST_ENV}: expected a cost in US dollars above 0 (e.g. 0.50), got `{raw}`"
        )),
    }
}

/// Whether `name` matches `glob`: `*` is any run of characters (also none),
/// `?` exactly one; everything else matches itself.
pub(crate) fn glob_matches(glob: &str, name: &str) -> bool {
    let g: Vec<char> = glob.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with backtracking to the last `*`.
    let (mut gi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ni));
                gi += 1;
            }
            Some('?') => {
                gi += 1;
                ni += 1;
            }
            Some(c) if *c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    gi = sg + 1;
                    ni = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

/// Check that every glob matches one of `variants` (`(eval, variant)`
/// pairs); the error names them all.
pub(crate) fn check_variant_globs(
    globs: &[String],
    variants: &[(String, String)],
) -> Result<(), String> {
    let unmatched: Vec<&String> = globs
        .iter()
        .filter(|g| !variants.iter().any(|(_, v)| glob_matches(g, v)))
        .collect();
    if unmatched.is_empty() {
        return Ok(());
    }
    let mut by_eval: Vec<String> = Vec::new();
    let mut evals: Vec<&str> = variants.iter().map(|(e, _)| e.as_str()).collect();
    evals.dedup();
    for eval in evals {
        let names: Vec<&str> = variants
            .iter()
            .filter(|(e, _)| e == eval)
            .map(|(_, v)| v.as_str())
            .collect();
        by_eval.push(format!("{eval}: {}", names.join(", ")));
    }
    let unmatched: Vec<String> = unmatched.iter().map(|g| format!("`{g}`")).collect();
    Err(format!(
        "{VARIANTS_ENV}: {} match{} no variant; the variants are {}",
        unmatched.join(", "),
        if unmatched.len() == 1 { "es" } else { "" },
        if by_eval.is_empty() {
            "none".to_string()
        } else {
            by_eval.join("; ")
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_matches("gpt-4o", "gpt-4o"));
        assert!(!glob_matches("gpt-4o", "gpt-4o-mini"));
        assert!(glob_matches("gpt-*", "gpt-4o-mini"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("*sonnet*", "claude-sonnet-4-5"));
        assert!(glob_matches("claude-?onnet-*", "claude-sonnet-4-5"));
        assert!(!glob_matches("claude-?onnet", "claude-onnet"));
        assert!(glob_matches("a*b*c", "axxbyybc"));
        assert!(!glob_matches("a*b*c", "axxbyyb"));
        assert!(glob_matches("**x", "abx"));
    }

    #[test]
    fn a_cost_budget_is_dollars_above_zero() {
        assert_eq!(max_cost("0.5"), Ok(0.5));
        assert_eq!(max_cost("$2"), Ok(2.0));
        for bad in ["abc", "-1", "0", "NaN", "inf", "$"] {
            assert_eq!(
                max_cost(bad),
                Err(format!(
                    "SCAFFOLD_MAX_COST: expected a cost in US dollars above 0 (e.g. 0.50), got `{bad}`"
                ))
            );
        }
    }

    #[test]
    fn unmatched_globs_name_the_variants() {
        let variants = vec![
            ("qa".to_string(), "gpt-4o".to_string()),
            ("qa".to_string(), "claude".to_string()),
        ];
        assert!(check_variant_globs(&["gpt*".into()], &variants).is_ok());
        let err = check_variant_globs(&["gpt*".into(), "llama*".into()], &variants).unwrap_err();
        assert_eq!(
            err,
            "SCAFFOLD_VARIANTS: `llama*` matches no variant; the variants are qa: gpt-4o, claude"
        );
    }
}
