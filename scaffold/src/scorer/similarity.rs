//! `similarity`: how close the output is to an expected text.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::embed::{Embedder, cosine_similarity, words};
use super::{Score, Scorer, ScorerContext, value_text};
use crate::assert::Path;
use crate::provider::CallContext;

/// How [`similarity`] compares.
#[derive(Clone)]
pub enum Algorithm {
    /// 1 when the texts are equal, else 0.
    Exact,
    /// 1 when the output contains the expected text, else 0.
    Contains,
    /// `1 - distance / max(len)`, the Levenshtein distance over characters
    /// normalized by the longer text (1 for two empty texts).
    Levenshtein,
    /// Cosine of the two texts' word-count vectors (lowercased alphanumeric
    /// words); no model involved.
    Cosine,
    /// Cosine of the two texts' embeddings from `Embedder` (one call with
    /// both texts), negative values counted as 0.
    Semantic(Arc<dyn Embedder>),
}

impl Algorithm {
    /// Semantic similarity by `embedder`'s embeddings.
    pub fn semantic(embedder: impl Embedder + 'static) -> Algorithm {
        Algorithm::Semantic(Arc::new(embedder))
    }

    /// `exact`, `contains`, `levenshtein`, `cosine` or `semantic`.
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Exact => "exact",
            Algorithm::Contains => "contains",
            Algorithm::Levenshtein => "levenshtein",
            Algorithm::Cosine => "cosine",
            Algorithm::Semantic(_) => "semantic",
        }
    }
}

impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Algorithm::Semantic(e) => write!(f, "Semantic({})", e.model()),
            other => f.write_str(other.name()),
        }
    }
}

/// What the output is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// This text, for every case.
    Text(String),
    /// The value at this path of the case's input (`expected`,
    /// `answers[0].text`), as text; a case without it fails the scorer.
    Input(String),
}

impl Expected {
    /// The value at `path` of each case's input.
    pub fn input(path: impl Into<String>) -> Expected {
        Expected::Input(path.into())
    }
}

impl From<&str> for Expected {
    fn from(s: &str) -> Self {
        Expected::Text(s.to_string())
    }
}

impl From<String> for Expected {
    fn from(s: String) -> Self {
        Expected::Text(s)
    }
}

/// Compare the output (or the value at a path of it) with an expected text.
///
/// The output's text is the string itself, or compact JSON for other values.
/// Passes when the value is at least the minimum (default 0.8; with `exact`
/// and `contains`, whose values are 0 or 1, that means a match). Named
/// `similarity` unless [`named`](Similarity::named).
///
/// ```
/// use scaffold::metrics::Metrics;
/// use scaffold::scorer::{similarity, Algorithm, Expected, Scorer, ScorerContext};
/// use serde_json::json;
/// let metrics = Metrics::default();
/// let output = json!({"answer": "Paris, France"});
/// let input = json!({"expected": "paris"});
/// let ctx = ScorerContext::new(&(), &[], &metrics).with_output(&output).with_input(&input);
/// let rt = tokio::runtime::Runtime::new().unwrap();
///
/// let contains = similarity(Expected::input("expected"), Algorithm::Contains)
///     .path("answer")
///     .case_sensitive(false);
/// assert!(rt.block_on(contains.score(&ctx)).pass);
///
/// let lev = similarity("Paris, Franc", Algorithm::Levenshtein).path("answer").named("closeness");
/// let s = rt.block_on(lev.score(&ctx));
/// assert_eq!(s.name, "closeness");
/// assert!((s.value - 12.0 / 13.0).abs() < 1e-12);
/// ```
pub fn similarity(expected: impl Into<Expected>, algorithm: Algorithm) -> Similarity {
    Similarity {
        name: "similarity".into(),
        expected: expected.into(),
        algorithm,
        min: 0.8,
        path: None,
        case_sensitive: true,
    }
}

/// See [`similarity`].
#[derive(Debug, Clone)]
pub struct Similarity {
    name: String,
    expected: Expected,
    algorithm: Algorithm,
    min: f64,
    path: Option<String>,
    case_sensitive: bool,
}

impl Similarity {
    /// Pass at or above `min` (default 0.8).
    pub fn min(mut self, min: f64) -> Self {
        self.min = min;
        self
    }

    /// Compare the value at `path` of the output (dot/bracket path).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Compare case-sensitively (default) or not (both texts lowercased;
    /// `semantic` always sends the texts as they are).
    pub fn case_sensitive(mut self, yes: bool) -> Self {
        self.case_sensitive = yes;
        self
    }

    /// Score under another name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    fn expected_text(&self, input: Option<&Value>) -> Result<String, String> {
        match &self.expected {
            Expected::Text(t) => Ok(t.clone()),
            Expected::Input(p) => {
                let input = input.ok_or("no case input to read the expected text from")?;
                let v = resolve(input, p)?
                    .ok_or_else(|| format!("the case input has nothing at `{p}`"))?;
                value_text(Some(v)).ok_or_else(|| format!("the case input's `{p}` is null"))
            }
        }
    }

    fn output_text(&self, output: Option<&Value>) -> Result<String, String> {
        let output = output.ok_or("the run produced no output")?;
        let v = match &self.path {
            None => output,
            Some(p) => {
                resolve(output, p)?.ok_or_else(|| format!("the output has nothing at `{p}`"))?
            }
        };
        value_text(Some(v)).ok_or_else(|| "the output is null".to_string())
    }
}

fn resolve<'v>(value: &'v Value, path: &str) -> Result<Option<&'v Value>, String> {
    if path.is_empty() {
        return Ok(Some(value));
    }
    let p = Path::parse(path).map_err(|e| format!("invalid path `{path}`: {e}"))?;
    Ok(p.resolve(value))
}

/// The Levenshtein distance between `a` and `b`, over characters.
pub fn levenshtein_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.is_empty() {
        return b.len();
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// `1 - distance / max(len)` in characters; 1 for two empty texts.
pub fn normalized_levenshtein(a: &str, b: &str) -> f64 {
    let longest = a.chars().count().max(b.chars().count());
    if longest == 0 {
        return 1.0;
    }
    1.0 - levenshtein_distance(a, b) as f64 / longest as f64
}

/// Cosine of the word-count vectors of `a` and `b` (lowercased alphanumeric
/// words); 1 for two texts without words, 0 when only one has words.
pub fn token_cosine(a: &str, b: &str) -> f64 {
    let count = |t: &str| {
        let mut m: HashMap<String, f64> = HashMap::new();
        for w in words(t) {
            *m.entry(w).or_default() += 1.0;
        }
        m
    };
    let (ca, cb) = (count(a), count(b));
    match (ca.is_empty(), cb.is_empty()) {
        (true, true) => return 1.0,
        (true, false) | (false, true) => return 0.0,
        _ => {}
    }
    let dot: f64 = ca
        .iter()
        .filter_map(|(w, x)| cb.get(w).map(|y| x * y))
        .sum();
    let norm = |m: &HashMap<String, f64>| m.values().map(|v| v * v).sum::<f64>().sqrt();
    (dot / (norm(&ca) * norm(&cb))).clamp(0.0, 1.0)
}

#[async_trait]
impl<S: Sync> Scorer<S> for Similarity {
    fn name(&self) -> &str {
        &self.name
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        let texts = self
            .output_text(ctx.output)
            .and_then(|o| Ok((o, self.expected_text(ctx.input)?)));
        let (output, expected) = match texts {
            Ok(t) => t,
            Err(why) => return Score::failed(self.name.clone(), why),
        };
        let fold = |s: &str| {
            if self.case_sensitive {
                s.to_string()
            } else {
                s.to_lowercase()
            }
        };
        let (o, e) = (fold(&output), fold(&expected));
        let value = match &self.algorithm {
            Algorithm::Exact => f64::from(u8::from(o == e)),
            Algorithm::Contains => f64::from(u8::from(o.contains(&e))),
            Algorithm::Levenshtein => normalized_levenshtein(&o, &e),
            Algorithm::Cosine => token_cosine(&o, &e),
            Algorithm::Semantic(embedder) => {
                let context = CallContext {
                    recording_id: ctx
                        .recording_id(&format!("scorer-{}", self.name), 0)
                        .map(|id| id.to_string()),
                    ..CallContext::default()
                };
                match embedder
                    .embed(&[output.clone(), expected.clone()], &context)
                    .await
                {
                    Ok(v) if v.len() == 2 => cosine_similarity(&v[0], &v[1]).max(0.0),
                    Ok(v) => {
                        return Score::failed(
                            self.name.clone(),
                            format!("the embedder returned {} vectors for 2 texts", v.len()),
                        );
                    }
                    Err(e) => {
                        return Score::failed(
                            self.name.clone(),
                            format!("embedding with {} failed: {e}", embedder.model()),
                        );
                    }
                }
            }
        };
        Score {
            name: self.name.clone(),
            pass: value >= self.min,
            value,
            unit: None,
            detail: Some(format!(
                "{} similarity {:.3} (min {}) to {:?}",
                self.algorithm.name(),
                value,
                self.min,
                cut(&expected, 80)
            )),
            borderline: false,
        }
    }
}

/// At most `n` characters of `s`, with `…` when cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(n).collect();
        out.push('…');
        out
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn levenshtein_distance_counts_the_edits_between_two_strings() {
        assert_eq!(
            crate::scorer::similarity::levenshtein_distance("kitten", "sitting"),
            3
        );
        assert_eq!(
            crate::scorer::similarity::levenshtein_distance("", "abc"),
            3
        );
    }

    #[test]
    fn normalized_levenshtein_is_one_minus_the_distance_over_the_longer_length() {
        use crate::scorer::similarity::normalized_levenshtein;
        assert_eq!(normalized_levenshtein("", ""), 1.0);
        assert_eq!(normalized_levenshtein("abc", ""), 0.0);
        assert!((normalized_levenshtein("kitten", "sitting") - (1.0 - 3.0 / 7.0)).abs() < 1e-12);
    }

    #[test]
    fn token_cosine_ignores_case_and_punctuation_and_counts_shared_words() {
        use crate::scorer::similarity::token_cosine;
        assert!((token_cosine("the cat sat", "The cat sat.") - 1.0).abs() < 1e-12);
        assert_eq!(token_cosine("red apple", "blue sky"), 0.0);
        assert!((token_cosine("a b", "a c") - 0.5).abs() < 1e-12);
    }
}
