//! Structured logs: human-readable by default, JSON for log collectors.

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum LogFormat {
    /// Human-readable, coloured on a terminal.
    #[default]
    Pretty,
    /// One JSON object per line, with span fields, for log collectors.
    Json,
}

/// Installs the global subscriber. The level comes from `GATEHOUSE_LOG` (or `RUST_LOG`),
/// in `tracing` filter syntax; the default is `info`, with the NATS client's connection
/// chatter at `warn`.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_env("GATEHOUSE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info,async_nats=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Pretty => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init(),
    }
}
