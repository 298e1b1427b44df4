//! Latencies for the benchmarks: a histogram of microseconds, recorded from whatever the
//! bench has at hand (two timestamps, an `Instant`, a `Duration`, a figure the store kept),
//! read back in milliseconds. Each bench prints its own table; the JSON a figure goes to
//! `$GATEHOUSE_BENCH_JSON` as is the same everywhere.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use hdrhistogram::Histogram;
use serde_json::{Value, json};

/// Samples of one figure, to the microsecond.
pub struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    pub fn new() -> Self {
        Self(Histogram::new(3).expect("histogram"))
    }

    /// From `from` to `to`, which may not come before it.
    pub fn between(&mut self, from: DateTime<Utc>, to: DateTime<Utc>) {
        let micros = (to - from).num_microseconds().unwrap_or(i64::MAX);
        assert!(micros >= 0, "an end before its start: {from} → {to}");
        self.micros(micros);
    }

    /// From `since` until now.
    pub fn elapsed(&mut self, since: Instant) {
        self.took(since.elapsed());
    }

    pub fn took(&mut self, took: Duration) {
        self.micros(i64::try_from(took.as_micros()).unwrap_or(i64::MAX));
    }

    /// A sample in microseconds (at least one, so the histogram keeps it).
    pub fn micros(&mut self, micros: i64) {
        self.0.record(micros.max(1) as u64).expect("record");
    }

    /// A sample in milliseconds.
    pub fn ms(&mut self, ms: i64) {
        self.micros(ms.saturating_mul(1000));
    }

    /// The `q` quantile, in milliseconds.
    pub fn quantile(&self, q: f64) -> f64 {
        self.0.value_at_quantile(q) as f64 / 1000.0
    }

    pub fn p50(&self) -> f64 {
        self.quantile(0.5)
    }

    pub fn p99(&self) -> f64 {
        self.quantile(0.99)
    }

    /// The largest sample, in milliseconds.
    pub fn max(&self) -> f64 {
        self.0.max() as f64 / 1000.0
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// Samples at or above `ms` milliseconds.
    pub fn at_least(&self, ms: u64) -> u64 {
        self.0
            .iter_recorded()
            .filter(|v| v.value_iterated_to() >= ms * 1000)
            .map(|v| v.count_at_value())
            .sum()
    }

    /// `{"p50", "p99", "n"}`, milliseconds to the microsecond.
    pub fn json(&self) -> Value {
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        json!({ "p50": round(self.p50()), "p99": round(self.p99()), "n": self.count() })
    }
}

/// Writes a bench's `figures` to the file `GATEHOUSE_BENCH_JSON` names, when set.
pub fn write_figures(figures: &Value) {
    if let Ok(path) = std::env::var("GATEHOUSE_BENCH_JSON") {
        std::fs::write(&path, format!("{figures:#}\n")).expect("writing the figures");
    }
}
