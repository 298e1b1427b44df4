//! Structured logs: human-readable by default, JSON for log collectors; and, when
//! configured, the same spans exported to an OpenTelemetry collector.

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::telemetry::Telemetry;

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
/// chatter and the MCP library's per-session lines at `warn`. The GitHub client's own
/// line per failed request is off unless the filter names `octocrab`: Gatehouse says
/// when GitHub is unreachable itself, once per outage. With `telemetry`, the spans that
/// pass the filter are also exported.
pub fn init(format: LogFormat, telemetry: Option<&Telemetry>) {
    let asked = std::env::var("GATEHOUSE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_default();
    let mut filter = EnvFilter::try_from_env("GATEHOUSE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info,async_nats=warn,rmcp=warn"));
    if !asked.contains("octocrab")
        && let Ok(quiet) = "octocrab=off".parse()
    {
        filter = filter.add_directive(quiet);
    }
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match format {
        LogFormat::Pretty => lines.boxed(),
        LogFormat::Json => lines
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        .with(telemetry.map(Telemetry::layer))
        .init();
}
