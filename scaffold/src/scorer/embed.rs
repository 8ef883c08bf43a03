//! Embeddings for semantic similarity: the [`Embedder`] capability, its
//! OpenAI implementation and a scripted one for tests.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::provider::openai::OpenAi;
use crate::provider::{CallContext, ProviderError};

/// A model that turns texts into vectors.
///
/// Calls carry a [`CallContext`] like completions do, so the recorder keys
/// them by recording id and plays them back in CI.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The embeddings model.
    fn model(&self) -> &str;

    /// One vector per input, in order.
    async fn embed(
        &self,
        inputs: &[String],
        context: &CallContext,
    ) -> Result<Vec<Vec<f32>>, ProviderError>;
}

/// `POST {base_url}/embeddings` with the provider's model (an embeddings
/// model such as `text-embedding-3-small`).
#[async_trait]
impl Embedder for OpenAi {
    fn model(&self) -> &str {
        crate::provider::Provider::model(self)
    }

    async fn embed(
        &self,
        inputs: &[String],
        context: &CallContext,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        self.embeddings_with_context(inputs, context).await
    }
}

/// Cosine similarity of two vectors, in -1..=1; 0 when either is all zeros
/// or their lengths differ.
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
}

/// One call a [`ScriptedEmbedder`] received.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedEmbedCall {
    /// The texts.
    pub inputs: Vec<String>,
    /// The call's context (its recording id).
    pub context: CallContext,
}

/// An [`Embedder`] for tests: texts given a vector with
/// [`vector`](Self::vector) get it; any other text gets a deterministic
/// hashed bag of words (lowercased alphanumeric words into
/// [`dimensions`](Self::dimensions) buckets), so texts sharing words are
/// similar and texts sharing none are orthogonal (up to hash collisions).
#[derive(Debug)]
pub struct ScriptedEmbedder {
    model: String,
    vectors: HashMap<String, Vec<f32>>,
    dimensions: usize,
    failure: Option<String>,
    calls: Mutex<Vec<ScriptedEmbedCall>>,
}

impl ScriptedEmbedder {
    /// An embedder named `model` with 256 hashed dimensions.
    pub fn new(model: impl Into<String>) -> Self {
        ScriptedEmbedder {
            model: model.into(),
            vectors: HashMap::new(),
            dimensions: 256,
            failure: None,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Embed `text` as `vector`.
    pub fn vector(mut self, text: impl Into<String>, vector: Vec<f32>) -> Self {
        self.vectors.insert(text.into(), vector);
        self
    }

    /// The size of hashed vectors (at least 1).
    pub fn dimensions(mut self, n: usize) -> Self {
        self.dimensions = n.max(1);
        self
    }

    /// Fail every call with `message`.
    pub fn failing(mut self, message: impl Into<String>) -> Self {
        self.failure = Some(message.into());
        self
    }

    /// The calls received so far.
    pub fn calls(&self) -> Vec<ScriptedEmbedCall> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn hashed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dimensions];
        for word in words(text) {
            // FNV-1a: stable across runs and platforms.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in word.as_bytes() {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            v[(h % self.dimensions as u64) as usize] += 1.0;
        }
        v
    }
}

/// Lowercased runs of alphanumeric characters.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

#[async_trait]
impl Embedder for ScriptedEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(
        &self,
        inputs: &[String],
        context: &CallContext,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(ScriptedEmbedCall {
                inputs: inputs.to_vec(),
                context: context.clone(),
            });
        }
        if let Some(message) = &self.failure {
            return Err(ProviderError::Scripted(message.clone()));
        }
        Ok(inputs
            .iter()
            .map(|t| {
                self.vectors
                    .get(t)
                    .cloned()
                    .unwrap_or_else(|| self.hashed(t))
            })
            .collect())
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn cosine_similarity_runs_from_minus_one_to_one_and_a_zero_vector_scores_zero() {
        use crate::scorer::embed::cosine_similarity;
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[2.0, 0.0]), 1.0);
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[-2.0, 0.0]), -1.0);
        assert_eq!(cosine_similarity(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn a_scripted_embedder_returns_its_vectors_in_one_call() {
        use crate::provider::CallContext;
        use crate::scorer::{Embedder, ScriptedEmbedder, embed::cosine_similarity};
        let e = ScriptedEmbedder::new("test-embed")
            .vector("cat", vec![1.0, 0.0])
            .vector("kitten", vec![0.9, 0.1]);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let v = rt
            .block_on(e.embed(&["cat".into(), "kitten".into()], &CallContext::default()))
            .unwrap();
        assert!(cosine_similarity(&v[0], &v[1]) > 0.9);
        assert_eq!(e.calls().len(), 1);
    }
}
