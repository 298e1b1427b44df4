//! Optional export of spans to an OpenTelemetry collector over OTLP/HTTP (protobuf).
//!
//! Off unless `telemetry.otlp_endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector:
//! then no exporter is built and no export thread runs. When on, the `request`, `webhook`,
//! `delivery` and `event` spans are exported in the trace their `trace_id` field names (the
//! ingest service and the bus make the W3C traceparent they carry the span's parent), so a
//! collector shows a run's work in every service as one trace.

use std::time::Duration;

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use serde::{Deserialize, Deserializer, Serialize};
use tokio::runtime::Handle;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;

/// The general OTLP endpoint variable: the collector's base URL, used when the
/// configuration names none.
const OTLP_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The traces-only OTLP endpoint variable: the full URL, used as it is.
const OTLP_TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The standard variable for the service name, used when the configuration names none.
const SERVICE_NAME_ENV: &str = "OTEL_SERVICE_NAME";
/// How long one export may take; OpenTelemetry's default.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// `[telemetry]`: where spans are exported to, if anywhere. Kept apart from `[server]`
/// because it is optional plumbing that most deployments leave off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Base URL of an OTLP/HTTP collector (`http://collector:4318`); spans are posted to
    /// its `/v1/traces`. Empty: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, and without either nothing is exported.
    pub otlp_endpoint: String,
    /// `service.name` of the exported spans. Empty: `OTEL_SERVICE_NAME`, else `gatehouse`
    /// for `up` and `gatehouse-<service>` for `serve <service>`.
    pub service_name: String,
    /// Share of traces exported, from 0.0 to 1.0. Decided by trace id, so every service
    /// keeps or drops the same traces whole.
    #[serde(deserialize_with = "sample_ratio")]
    pub sample_ratio: f64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: String::new(),
            service_name: String::new(),
            sample_ratio: 1.0,
        }
    }
}

fn sample_ratio<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let ratio = f64::deserialize(deserializer)?;
    if (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(serde::de::Error::custom(format!(
            "sample_ratio {ratio} is not between 0.0 and 1.0"
        )))
    }
}

/// A running span exporter. It holds the tracer provider, whose batch processor sends spans
/// from a thread of its own; [`Telemetry::shutdown`] sends what is left at exit.
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    endpoint: String,
    service_name: String,
}

impl Telemetry {
    /// Starts exporting when the configuration or the environment names a collector;
    /// `None` (and nothing started) otherwise. `default_service` names the process when
    /// neither does; `runtime` carries the export requests.
    pub fn start(
        config: &TelemetryConfig,
        default_service: &str,
        runtime: Handle,
    ) -> anyhow::Result<Option<Self>> {
        Self::start_with_env(config, default_service, runtime, |name| {
            std::env::var(name).ok()
        })
    }

    fn start_with_env(
        config: &TelemetryConfig,
        default_service: &str,
        runtime: Handle,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Option<Self>> {
        let Some(endpoint) = traces_endpoint(config, &env) else {
            return Ok(None);
        };
        let service_name = [
            config.service_name.clone(),
            env(SERVICE_NAME_ENV).unwrap_or_default(),
        ]
        .into_iter()
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| default_service.to_owned());
        let client = RuntimeClient {
            client: reqwest::Client::builder()
                .timeout(EXPORT_TIMEOUT)
                .build()
                .context("building the HTTP client for OTLP export")?,
            runtime,
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .with_context(|| format!("setting up OTLP export to {endpoint}"))?;
        // By trace id alone (not the parent's sampled flag, which our traceparents always
        // set), so every service decides alike for a trace.
        let sampler = if config.sample_ratio >= 1.0 {
            Sampler::AlwaysOn
        } else {
            Sampler::TraceIdRatioBased(config.sample_ratio)
        };
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(sampler)
            .with_resource(
                Resource::builder()
                    .with_service_name(service_name.clone())
                    .build(),
            )
            .build();
        Ok(Some(Self {
            provider,
            endpoint,
            service_name,
        }))
    }

    /// Where spans go (the full `/v1/traces` URL), for the start-up log line.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `service.name` the spans carry, for the start-up log line.
    pub fn service_name(&self) -> &str {
        &self.service_name
    }

    /// The `tracing` layer that turns Gatehouse's spans into exported spans. Only spans of
    /// Gatehouse's own crates are exported (not those of the HTTP client that does the
    /// exporting, which would feed back); events become span events.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("gatehouse"))
            // A span is built when it closes (or gets a child), not when first entered: the
            // `webhook` span learns its trace (from the delivery id in the body) only after
            // it was entered, and can still take it as its parent then.
            .with_context_activation(false)
            .with_filter(filter_fn(|meta| {
                !meta.is_span() || meta.target().starts_with("gatehouse")
            }))
    }

    /// Sends the spans not yet exported and stops the export thread, waiting at most 5 s
    /// (the SDK's bound) so an unreachable collector cannot hold up the exit. Call it while
    /// the runtime given to [`Telemetry::start`] still runs, and not from one of its tasks:
    /// the last export is carried by that runtime while this waits for it.
    pub fn shutdown(self) {
        if let Err(err) = self.provider.shutdown() {
            tracing::warn!(error = %err, endpoint = %self.endpoint, "the last spans may not have been exported");
        }
    }
}

/// The URL spans are posted to: the configured collector's `/v1/traces`, else the
/// standard environment variables', else none (export off).
fn traces_endpoint(
    config: &TelemetryConfig,
    env: &impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let signal_path = |base: &str| format!("{}/v1/traces", base.trim_end_matches('/'));
    let non_empty = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
    if !config.otlp_endpoint.trim().is_empty() {
        Some(signal_path(config.otlp_endpoint.trim()))
    } else if let Some(url) = non_empty(env(OTLP_TRACES_ENDPOINT_ENV)) {
        Some(url.trim().to_owned())
    } else {
        non_empty(env(OTLP_ENDPOINT_ENV)).map(|base| signal_path(base.trim()))
    }
}

/// Sends OTLP requests with reqwest (the client the binary already has, TLS by rustls on
/// ring) on the Tokio runtime. The SDK's batch processor exports from a thread of its own,
/// where an async client finds no runtime; the request is spawned onto `runtime` instead.
#[derive(Debug)]
struct RuntimeClient {
    client: reqwest::Client,
    runtime: Handle,
}

#[async_trait::async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let exchange = async move {
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut answer = Response::new(response.bytes().await?);
            *answer.status_mut() = status;
            *answer.headers_mut() = headers;
            Ok::<_, reqwest::Error>(answer)
        };
        Ok(self.runtime.spawn(exchange).await??)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn endpoint(
        otlp_endpoint: &str,
        vars: &'static [(&'static str, &'static str)],
    ) -> Option<String> {
        let config = TelemetryConfig {
            otlp_endpoint: otlp_endpoint.into(),
            ..TelemetryConfig::default()
        };
        traces_endpoint(&config, &env(vars))
    }

    #[tokio::test]
    async fn without_an_endpoint_no_exporter_is_installed() {
        let started = Telemetry::start_with_env(
            &TelemetryConfig::default(),
            "gatehouse",
            Handle::current(),
            env(&[
                ("OTEL_SERVICE_NAME", "ignored"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", " "),
            ]),
        )
        .unwrap();
        assert!(started.is_none(), "{started:?}");
    }

    #[tokio::test]
    async fn an_endpoint_installs_an_exporter_named_for_the_process() {
        let config = TelemetryConfig {
            otlp_endpoint: "http://127.0.0.1:4318/".into(),
            ..TelemetryConfig::default()
        };
        let telemetry =
            Telemetry::start_with_env(&config, "gatehouse-runner", Handle::current(), env(&[]))
                .unwrap()
                .expect("an exporter");
        assert_eq!(telemetry.endpoint(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(telemetry.service_name(), "gatehouse-runner");
        // Nothing to send; shutting down must not wait on the runtime this test blocks.
        tokio::task::spawn_blocking(move || telemetry.shutdown())
            .await
            .unwrap();

        let named = TelemetryConfig {
            service_name: "gh-staging".into(),
            ..config.clone()
        };
        let from_env = env(&[("OTEL_SERVICE_NAME", "from-env")]);
        let t = Telemetry::start_with_env(&config, "gatehouse", Handle::current(), &from_env)
            .unwrap()
            .unwrap();
        assert_eq!(t.service_name(), "from-env");
        tokio::task::spawn_blocking(move || t.shutdown())
            .await
            .unwrap();
        let t = Telemetry::start_with_env(&named, "gatehouse", Handle::current(), from_env)
            .unwrap()
            .unwrap();
        assert_eq!(t.service_name(), "gh-staging");
        tokio::task::spawn_blocking(move || t.shutdown())
            .await
            .unwrap();
    }

    #[test]
    fn the_configuration_wins_over_the_standard_variables() {
        assert_eq!(endpoint("", &[]), None);
        assert_eq!(
            endpoint(
                "",
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")]
            ),
            Some("http://collector:4318/v1/traces".into())
        );
        assert_eq!(
            endpoint(
                "",
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                    (
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                        "http://traces:4318/custom"
                    ),
                ]
            ),
            Some("http://traces:4318/custom".into())
        );
        assert_eq!(
            endpoint(
                "https://otel.example.com/",
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")]
            ),
            Some("https://otel.example.com/v1/traces".into())
        );
    }

    #[test]
    // figment's Jail fixes the closure's error type.
    #[allow(clippy::result_large_err)]
    fn the_section_is_optional_and_checked() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("gatehouse.toml", "")?;
            let config = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(config.telemetry, TelemetryConfig::default());

            jail.create_file(
                "gatehouse.toml",
                "[telemetry]\notlp_endpoint = \"http://collector:4318\"\nsample_ratio = 1\n",
            )?;
            jail.set_env("GATEHOUSE_TELEMETRY__SERVICE_NAME", "gh-eu");
            let config = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(config.telemetry.otlp_endpoint, "http://collector:4318");
            assert_eq!(config.telemetry.service_name, "gh-eu");
            assert_eq!(config.telemetry.sample_ratio, 1.0);

            jail.create_file("gatehouse.toml", "[telemetry]\nsample_ratio = 1.5\n")?;
            let err = Config::load(None).unwrap_err().to_string();
            assert!(
                err.contains("sample_ratio 1.5 is not between 0.0 and 1.0"),
                "{err}"
            );
            jail.create_file("gatehouse.toml", "[telemetry]\nendpoint = \"x\"\n")?;
            let err = Config::load(None).unwrap_err().to_string();
            assert!(err.contains("endpoint"), "{err}");
            Ok(())
        });
    }
}
