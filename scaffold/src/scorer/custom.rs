//! `custom`: a scorer from a closure.

use async_trait::async_trait;

use super::{Score, Scorer, ScorerContext};

/// What a custom scoring function returns: a number (passes at 0.5 or more),
/// a bool (1 or 0, passes when true), or a value with an explicit pass and
/// detail.
///
/// ```
/// use scaffold::scorer::CustomScore;
/// let s: CustomScore = 0.7.into();
/// assert_eq!((s.value, s.pass), (0.7, None));
/// let s = CustomScore::new(0.3).pass(true).detail("lenient on drafts");
/// assert_eq!((s.value, s.pass, s.detail.as_deref()), (0.3, Some(true), Some("lenient on drafts")));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CustomScore {
    /// The score.
    pub value: f64,
    /// Pass; `None` means `value >= 0.5`.
    pub pass: Option<bool>,
    /// Why.
    pub detail: Option<String>,
}

impl CustomScore {
    /// A value; passes at 0.5 or more unless [`pass`](Self::pass) says otherwise.
    pub fn new(value: f64) -> Self {
        CustomScore {
            value,
            pass: None,
            detail: None,
        }
    }

    /// Pass or fail regardless of the value.
    pub fn pass(mut self, pass: bool) -> Self {
        self.pass = Some(pass);
        self
    }

    /// Why, in words.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

impl From<f64> for CustomScore {
    fn from(value: f64) -> Self {
        CustomScore::new(value)
    }
}

impl From<f32> for CustomScore {
    fn from(value: f32) -> Self {
        CustomScore::new(f64::from(value))
    }
}

impl From<bool> for CustomScore {
    fn from(pass: bool) -> Self {
        CustomScore::new(if pass { 1.0 } else { 0.0 }).pass(pass)
    }
}

impl From<(f64, bool)> for CustomScore {
    fn from((value, pass): (f64, bool)) -> Self {
        CustomScore::new(value).pass(pass)
    }
}

impl From<(f64, bool, String)> for CustomScore {
    fn from((value, pass, detail): (f64, bool, String)) -> Self {
        CustomScore::new(value).pass(pass).detail(detail)
    }
}

/// A scorer from a closure over the [`ScorerContext`].
///
/// A value that is not a finite number fails, with value 0 and a detail
/// saying so (statistics over NaN mean nothing).
///
/// ```
/// use scaffold::scorer::{custom, CustomScore, Scorer, ScorerContext};
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct State { tasks: Vec<String> }
/// let plan_quality = custom("plan-quality", |ctx: &ScorerContext<'_, State>| {
///     let has_tests = ctx.state.tasks.iter().any(|t| t.contains("test"));
///     CustomScore::new(if has_tests { 1.0 } else { 0.3 }).detail(format!("{} tasks", ctx.state.tasks.len()))
/// });
/// assert_eq!(plan_quality.name(), "plan-quality");
///
/// let state = State { tasks: vec!["write tests".into()] };
/// let metrics = scaffold::metrics::Metrics::default();
/// let ctx = ScorerContext::new(&state, &[], &metrics);
/// let s = tokio::runtime::Runtime::new().unwrap().block_on(plan_quality.score(&ctx));
/// assert_eq!((s.pass, s.value, s.detail.as_deref()), (true, 1.0, Some("1 tasks")));
/// ```
pub fn custom<S, R, F>(name: impl Into<String>, f: F) -> Custom<F>
where
    F: Fn(&ScorerContext<'_, S>) -> R + Send + Sync,
    R: Into<CustomScore>,
{
    Custom {
        name: name.into(),
        f,
    }
}

/// See [`custom`].
pub struct Custom<F> {
    name: String,
    f: F,
}

impl<F> std::fmt::Debug for Custom<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Custom")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<S, R, F> Scorer<S> for Custom<F>
where
    S: Sync,
    F: Fn(&ScorerContext<'_, S>) -> R + Send + Sync,
    R: Into<CustomScore>,
{
    fn name(&self) -> &str {
        &self.name
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        let r: CustomScore = (self.f)(ctx).into();
        if !r.value.is_finite() {
            return Score::failed(
                self.name.clone(),
                format!(
                    "the scorer returned {}, not a finite number{}",
                    r.value,
                    r.detail.map(|d| format!(" ({d})")).unwrap_or_default()
                ),
            );
        }
        Score {
            name: self.name.clone(),
            pass: r.pass.unwrap_or(r.value >= 0.5),
            value: r.value,
            unit: None,
            detail: r.detail,
            borderline: false,
        }
    }
}
