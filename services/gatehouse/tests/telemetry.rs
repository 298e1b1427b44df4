//! OTLP export from the real `gatehouse up`: a fake collector on loopback receives the spans
//! (OTLP/HTTP, protobuf), and the API request and the handling of its events arrive in the
//! trace the caller's `traceparent` named, and a webhook delivery and its processing in
//! the trace of the delivery, all sent when the process shuts down.

mod harness;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// The requests a fake collector received, decoded.
type Received = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

/// `POST /v1/traces`, as a collector answers it: protobuf in, protobuf out.
async fn traces(
    State(received): State<Received>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t == "application/x-protobuf");
    let Some(request) = protobuf
        .then(|| ExportTraceServiceRequest::decode(body))
        .and_then(Result::ok)
    else {
        return (StatusCode::BAD_REQUEST, HeaderMap::new(), Vec::new());
    };
    received.lock().unwrap().push(request);
    let mut answer = HeaderMap::new();
    answer.insert(
        header::CONTENT_TYPE,
        "application/x-protobuf".parse().unwrap(),
    );
    (
        StatusCode::OK,
        answer,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

/// The spans received, each with its resource's `service.name`.
fn spans(received: &Received) -> Vec<(String, Span)> {
    let mut all = Vec::new();
    for request in received.lock().unwrap().iter() {
        for resource_spans in &request.resource_spans {
            let service = resource_spans
                .resource
                .as_ref()
                .and_then(|r| string(&r.attributes, "service.name"))
                .unwrap_or_default();
            for scope in &resource_spans.scope_spans {
                all.extend(scope.spans.iter().map(|s| (service.clone(), s.clone())));
            }
        }
    }
    all
}

fn string(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .and_then(|v| match v {
            any_value::Value::StringValue(s) => Some(s.clone()),
            _ => None,
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn spans_reach_the_collector_in_the_callers_trace() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let received = Received::default();
    let collector = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let collector_url = format!("http://{}", collector.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .with_state(received.clone());
    runtime.spawn(async move { axum::serve(collector, app).await });

    let mut up = harness::Up::builder()
        .sops(&[("tick", "name: tick\nnodes:\n  t: { kind: script, run: \"true\" }\n")])
        .config(&format!(
            "[server]\nsop_dirs = [\"sops\"]\n[github]\nwebhook_secrets = [\"s3cret\"]\nrepositories = [\"Codertocat/*\"]\n[telemetry]\notlp_endpoint = \"{collector_url}\"\n"
        ))
        // Spans at `info` pass the filter; the export waits for shutdown unless 512 spans
        // pile up, so what arrives was sent by the flush at exit.
        .env("GATEHOUSE_LOG", "info")
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .env_remove("RUST_LOG")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stderr_to("gatehouse.log")
        .start();
    let server = up.url();

    let http = reqwest::Client::new();
    let get = |path: String| {
        let http = http.clone();
        runtime.block_on(async move {
            let response = http.get(path).send().await.ok()?;
            Some((response.status(), response.text().await.ok()?))
        })
    };
    let token = up.admin_token();

    // The caller's own trace and span: the request must continue them.
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let caller_span = "00f067aa0ba902b7";
    let run: serde_json::Value = runtime.block_on(async {
        http.post(format!("{server}/api/v1/runs"))
            .bearer_auth(token.trim())
            .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
            .json(&serde_json::json!({ "sop": "tick", "params": {} }))
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let succeeded = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        let shown = runtime.block_on(async {
            http.get(format!("{server}/api/v1/runs/{run_id}"))
                .bearer_auth(token.trim())
                .send()
                .await
                .ok()?
                .json::<serde_json::Value>()
                .await
                .ok()
        });
        shown.is_some_and(|s| s["status"] == "succeeded")
    });
    assert!(succeeded, "run {run_id} did not succeed: {}", up.log());

    // A webhook learns its trace from the delivery id after its span was entered.
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/github/issues.labeled.json"
    ))
    .unwrap();
    let signature = harness::http::github_signature(b"s3cret", &body);
    let accepted = runtime.block_on(async {
        http.post(format!("{server}/webhooks/github"))
            .header("X-GitHub-Event", "issues")
            .header("X-GitHub-Delivery", "delivery-otlp-1")
            .header("X-Hub-Signature-256", signature)
            .body(body)
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(accepted.as_u16(), 202, "{}", up.log());
    // Processing happens after the answer; it records the requirement.
    let processed = (0..400).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        get(format!("{server}/metrics")).is_some_and(|(_, metrics)| {
            metrics.contains("gatehouse_events_published_total{type=\"requirement.created\"}")
        })
    });
    assert!(processed, "the delivery was not processed: {}", up.log());
    assert!(
        spans(&received).is_empty(),
        "spans were exported before shutdown; the test could not tell the flush at exit apart"
    );

    let status = up.terminate(Duration::from_secs(15));
    assert!(status.success(), "{status}: {}", up.log());
    let spans = spans(&received);
    let ours: Vec<&(String, Span)> = spans
        .iter()
        .filter(|(_, s)| hex(&s.trace_id) == trace_id)
        .collect();
    let names: Vec<&str> = ours.iter().map(|(_, s)| s.name.as_str()).collect();

    let request = ours
        .iter()
        .map(|(_, s)| s)
        .find(|s| s.name == "request")
        .unwrap_or_else(|| {
            panic!(
                "no request span in trace {trace_id} (its spans: {names:?}) among {} spans: {}",
                spans.len(),
                up.log()
            )
        });
    assert_eq!(
        hex(&request.parent_span_id),
        caller_span,
        "the caller's span is the parent"
    );
    assert_eq!(
        string(&request.attributes, "trace_id").as_deref(),
        Some(trace_id.as_str())
    );
    assert_eq!(
        string(&request.attributes, "method").as_deref(),
        Some("POST")
    );

    // The events the request emitted were handled, through the bus, in the same trace.
    let event = ours
        .iter()
        .map(|(_, s)| s)
        .find(|s| {
            s.name == "event" && string(&s.attributes, "run_id").as_deref() == Some(run_id.as_str())
        })
        .unwrap_or_else(|| panic!("no event span of run {run_id} in trace {trace_id}: {names:?}"));
    assert_eq!(
        string(&event.attributes, "trace_id").as_deref(),
        Some(trace_id.as_str())
    );

    // The webhook span and the delivery's processing: in the trace their `trace_id` names.
    let webhook = spans
        .iter()
        .map(|(_, s)| s)
        .find(|s| s.name == "webhook")
        .unwrap_or_else(|| panic!("no webhook span among {} spans", spans.len()));
    let delivery_trace = string(&webhook.attributes, "trace_id").expect("a trace_id field");
    assert_eq!(hex(&webhook.trace_id), delivery_trace);
    assert_eq!(
        string(&webhook.attributes, "delivery").as_deref(),
        Some("delivery-otlp-1")
    );
    assert!(
        spans
            .iter()
            .any(|(_, s)| s.name == "delivery" && hex(&s.trace_id) == delivery_trace),
        "no delivery span in the webhook's trace {delivery_trace}"
    );

    assert!(
        spans.iter().all(|(service, _)| service == "gatehouse"),
        "service.name is `gatehouse` for `up`: {:?}",
        spans.iter().map(|(s, _)| s).collect::<Vec<_>>()
    );
}
