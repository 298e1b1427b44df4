//! An attempt's model usage as the gateway metered it, by model: the figures its costs and
//! reports use, rather than what the CLI chose to print.

use std::collections::BTreeMap;
use std::sync::Mutex;

use gatehouse_agent::ModelUsage;
use gatehouse_gateway::{Metered, UsageSink};

/// Sums each request the gateway forwarded for one attempt.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    by_model: Mutex<BTreeMap<String, ModelUsage>>,
}

impl UsageSink for Meter {
    fn record(&self, metered: &Metered) {
        let usage = &metered.usage;
        let model = usage.model.clone().unwrap_or_else(|| "unknown".to_owned());
        let Ok(mut by_model) = self.by_model.lock() else {
            return;
        };
        let sum = by_model.entry(model.clone()).or_insert_with(|| ModelUsage {
            model,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        });
        sum.input_tokens += usage.input;
        sum.output_tokens += usage.output;
        sum.cache_read_tokens += usage.cache_read;
        sum.cache_write_tokens += usage.cache_write;
    }
}

impl Meter {
    /// The usage so far, one entry per model, by model name.
    pub(crate) fn usage(&self) -> Vec<ModelUsage> {
        self.by_model
            .lock()
            .map(|by_model| by_model.values().cloned().collect())
            .unwrap_or_default()
    }
}
