//! `output_valid`: the run completed and produced an output.

use async_trait::async_trait;

use super::{Score, Scorer, ScorerContext};

/// Passes (value 1) when the run completed without error and produced a
/// non-null output; fails (value 0) otherwise, with the error as detail.
///
/// ```
/// use scaffold::metrics::Metrics;
/// use scaffold::scorer::{output_valid, Scorer, ScorerContext};
/// use serde_json::json;
/// let metrics = Metrics::default();
/// let output = json!({"answer": 4});
/// let ok = ScorerContext::new(&(), &[], &metrics).with_output(&output);
/// let failed = ScorerContext::new(&(), &[], &metrics).with_error("agent `a`: timeout");
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// assert!(rt.block_on(output_valid().score(&ok)).pass);
/// let s = rt.block_on(output_valid().score(&failed));
/// assert_eq!((s.pass, s.value, s.detail.as_deref()), (false, 0.0, Some("agent `a`: timeout")));
/// ```
pub fn output_valid() -> OutputValid {
    OutputValid
}

/// See [`output_valid`].
#[derive(Debug, Clone, Copy, Default)]
pub struct OutputValid;

/// The name `output_valid` scores under.
pub(crate) const NAME: &str = "output-valid";

#[async_trait]
impl<S: Sync> Scorer<S> for OutputValid {
    fn name(&self) -> &str {
        NAME
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        let pass = ctx.error.is_none() && ctx.output.is_some_and(|o| !o.is_null());
        let detail = match ctx.error {
            Some(e) => Some(e.to_string()),
            None if !pass => Some("the run produced no output".to_string()),
            None => None,
        };
        Score {
            name: NAME.into(),
            pass,
            value: if pass { 1.0 } else { 0.0 },
            unit: None,
            detail,
            borderline: false,
        }
    }
}
