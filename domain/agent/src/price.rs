//! Prices: what an attempt's tokens cost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::usage::ModelUsage;

/// `[pricing."<model>"]` in the configuration: USD per million tokens of each kind. Gatehouse
/// bills from these rather than from what a CLI says it cost, so one table prices every
/// executor the same way.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens that were neither read from nor written to a prompt cache.
    pub input: f64,
    /// Output tokens (reasoning included).
    pub output: f64,
    /// Input tokens read from a prompt cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input tokens written to a prompt cache.
    #[serde(default)]
    pub cache_write: f64,
}

/// Prices by model name, as the configuration's `[pricing]` table holds them.
pub type PriceTable = BTreeMap<String, Price>;

const PER_MILLION: f64 = 1_000_000.0;

/// The cost in USD of one model's usage; `None` when the table has no price for the model.
///
/// The model is looked up by its exact name, then without a trailing `-YYYYMMDD` snapshot
/// date, because Claude Code reports dated ids (`claude-sonnet-4-5-20250929`) where a
/// price table is naturally keyed by the model (`claude-sonnet-4-5`). Nothing looser is
/// tried: a price that only resembles the model's could be wrong, and an unpriced model
/// shows up as such.
pub fn cost(usage: &ModelUsage, prices: &PriceTable) -> Option<f64> {
    let price = prices
        .get(&usage.model)
        .or_else(|| prices.get(without_snapshot_date(&usage.model)?))?;
    let tokens = |count: u64, usd_per_million: f64| count as f64 * usd_per_million;
    Some(
        (tokens(usage.input_tokens, price.input)
            + tokens(usage.output_tokens, price.output)
            + tokens(usage.cache_read_tokens, price.cache_read)
            + tokens(usage.cache_write_tokens, price.cache_write))
            / PER_MILLION,
    )
}

/// `claude-opus-4-5-20251101` → `claude-opus-4-5`; `None` when there is no date suffix.
fn without_snapshot_date(model: &str) -> Option<&str> {
    let (base, date) = model.rsplit_once('-')?;
    (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) && !base.is_empty())
        .then_some(base)
}

#[cfg(test)]
mod tests {
    use super::without_snapshot_date;

    #[test]
    fn strips_only_an_eight_digit_date() {
        assert_eq!(
            without_snapshot_date("claude-opus-4-5-20251101"),
            Some("claude-opus-4-5")
        );
        assert_eq!(without_snapshot_date("claude-opus-4-5"), None);
        assert_eq!(without_snapshot_date("gpt-5-codex"), None);
        assert_eq!(without_snapshot_date("model-2025110"), None);
        assert_eq!(without_snapshot_date("-20251101"), None);
    }
}
