//! Model prices, for the cost of a call.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Usage;

/// Price of a model in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPrice {
    /// Dollars per million input tokens.
    pub input_per_mtok: f64,
    /// Dollars per million output tokens.
    pub output_per_mtok: f64,
}

impl ModelPrice {
    /// A price from dollars per million input and output tokens.
    pub const fn per_mtok(input: f64, output: f64) -> Self {
        ModelPrice {
            input_per_mtok: input,
            output_per_mtok: output,
        }
    }

    /// The cost of `usage` at this price.
    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// Published list prices (USD per million tokens, standard tier, November 2026).
const BUILTIN: &[(&str, ModelPrice)] = &[
    // OpenAI
    ("gpt-5", ModelPrice::per_mtok(1.25, 10.0)),
    ("gpt-5-mini", ModelPrice::per_mtok(0.25, 2.0)),
    ("gpt-5-nano", ModelPrice::per_mtok(0.05, 0.40)),
    ("gpt-4.1", ModelPrice::per_mtok(2.0, 8.0)),
    ("gpt-4.1-mini", ModelPrice::per_mtok(0.40, 1.60)),
    ("gpt-4.1-nano", ModelPrice::per_mtok(0.10, 0.40)),
    ("gpt-4o", ModelPrice::per_mtok(2.50, 10.0)),
    ("gpt-4o-mini", ModelPrice::per_mtok(0.15, 0.60)),
    ("o3", ModelPrice::per_mtok(2.0, 8.0)),
    ("o3-mini", ModelPrice::per_mtok(1.10, 4.40)),
    ("o4-mini", ModelPrice::per_mtok(1.10, 4.40)),
    ("text-embedding-3-small", ModelPrice::per_mtok(0.02, 0.0)),
    ("text-embedding-3-large", ModelPrice::per_mtok(0.13, 0.0)),
    // Anthropic
    ("claude-opus-4-5", ModelPrice::per_mtok(5.0, 25.0)),
    ("claude-opus-4-1", ModelPrice::per_mtok(15.0, 75.0)),
    ("claude-opus-4", ModelPrice::per_mtok(15.0, 75.0)),
    ("claude-sonnet-4-5", ModelPrice::per_mtok(3.0, 15.0)),
    ("claude-sonnet-4", ModelPrice::per_mtok(3.0, 15.0)),
    ("claude-3-7-sonnet", ModelPrice::per_mtok(3.0, 15.0)),
    ("claude-haiku-4-5", ModelPrice::per_mtok(1.0, 5.0)),
    ("claude-3-5-haiku", ModelPrice::per_mtok(0.80, 4.0)),
];

/// A pricing table: model name → price.
///
/// Lookups use the longest table entry that is a prefix of the model name,
/// so dated names (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`) find
/// their family's price.
///
/// ```
/// use scaffold::provider::{ModelPrice, Pricing, Usage};
/// let pricing = Pricing::builtin().with_model("my-local-model", ModelPrice::per_mtok(0.0, 0.0));
/// let usage = Usage { input_tokens: 1_000_000, output_tokens: 0 };
/// assert_eq!(pricing.cost("gpt-4o-2024-08-06", usage), Some(2.5));
/// assert_eq!(pricing.cost("my-local-model", usage), Some(0.0));
/// assert_eq!(pricing.cost("unknown", usage), None);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    models: BTreeMap<String, ModelPrice>,
}

impl Default for Pricing {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Pricing {
    /// The built-in table of current OpenAI and Anthropic models.
    pub fn builtin() -> Self {
        Pricing {
            models: BUILTIN
                .iter()
                .map(|(name, price)| (name.to_string(), *price))
                .collect(),
        }
    }

    /// An empty table.
    pub fn empty() -> Self {
        Pricing {
            models: BTreeMap::new(),
        }
    }

    /// Add or override one model's price.
    pub fn with_model(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.models.insert(model.into(), price);
        self
    }

    /// The price of `model`, by exact name or longest prefix.
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        if let Some(price) = self.models.get(model) {
            return Some(*price);
        }
        self.models
            .iter()
            .filter(|(name, _)| {
                model.starts_with(name.as_str())
                    && matches!(model.as_bytes().get(name.len()), Some(b'-' | b'@' | b':'))
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| *price)
    }

    /// The cost in USD of `usage` on `model`, if the model is priced.
    pub fn cost(&self, model: &str, usage: Usage) -> Option<f64> {
        self.price(model).map(|p| p.cost(usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        let p = Pricing::builtin();
        assert_eq!(p.price("gpt-4o-mini-2024-07-18"), p.price("gpt-4o-mini"));
        assert_ne!(p.price("gpt-4o-mini"), p.price("gpt-4o"));
        assert_eq!(
            p.price("claude-sonnet-4-5-20250929"),
            Some(ModelPrice::per_mtok(3.0, 15.0))
        );
        // A prefix must end at a separator: `o3` does not price `o3x`.
        assert_eq!(p.price("o3x"), None);
    }
}
