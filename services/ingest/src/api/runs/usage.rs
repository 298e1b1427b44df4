//! What a run's agents used and cost, as runs show it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a run's agents used and cost.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct UsageView {
    /// One line per agent attempt and model.
    pub attempts: Vec<AttemptUsage>,
    /// This run's sum.
    pub run: UsageTotal,
    /// The sum over every run of the run's requirement (when it has one).
    pub requirement: Option<UsageTotal>,
}

/// One agent attempt's use of one model.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AttemptUsage {
    /// Node.
    pub node: String,
    /// Attempt.
    pub attempt: i32,
    /// Model, as the CLI named it.
    pub model: String,
    /// Input tokens, not counting cache reads.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: i64,
    /// USD, from the configured price table; absent when the model has no price.
    pub cost_usd: Option<f64>,
}

/// A sum of usage.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageTotal {
    /// Input tokens, not counting cache reads.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: i64,
    /// USD of the priced models.
    pub cost_usd: f64,
    /// Models used without a price: their tokens are counted, their cost is not.
    pub unpriced_models: Vec<String>,
}

impl UsageTotal {
    /// The sum of `rows`.
    pub fn of(rows: &[gatehouse_store::UsageRow]) -> Self {
        Self::sum(rows.iter().map(|row| {
            let tokens = [
                row.input_tokens,
                row.output_tokens,
                row.cache_read_tokens,
                row.cache_write_tokens,
            ];
            (row.model.as_str(), tokens, row.cost_usd)
        }))
    }

    /// The sum of conversation turns' usage.
    pub fn of_turns<'a>(rows: impl IntoIterator<Item = &'a gatehouse_store::TurnUsageRow>) -> Self {
        Self::sum(rows.into_iter().map(|row| {
            let tokens = [
                row.input_tokens,
                row.output_tokens,
                row.cache_read_tokens,
                row.cache_write_tokens,
            ];
            (row.model.as_str(), tokens, row.cost_usd)
        }))
    }

    fn sum<'a>(rows: impl IntoIterator<Item = (&'a str, [i64; 4], Option<f64>)>) -> Self {
        let mut total = Self::default();
        for (model, tokens, cost_usd) in rows {
            total.add(model, tokens, cost_usd);
        }
        total
    }

    /// Adds one model's `[input, output, cache read, cache write]` tokens and cost.
    pub fn add(&mut self, model: &str, tokens: [i64; 4], cost_usd: Option<f64>) {
        let [input, output, cache_read, cache_write] = tokens;
        self.input_tokens += input;
        self.output_tokens += output;
        self.cache_read_tokens += cache_read;
        self.cache_write_tokens += cache_write;
        match cost_usd {
            Some(cost) => self.cost_usd += cost,
            None if !self.unpriced_models.iter().any(|m| m == model) => {
                self.unpriced_models.push(model.to_owned())
            }
            None => {}
        }
    }
}
