//! A streamed model answer through the gateway against the same answer fetched directly
//! from the fake provider, interleaved in the same process so noise hits both alike: time
//! to the first event and to the end of the stream, p50 and p99, and what the gateway adds.
//!
//! `cargo bench -p gatehouse-gateway --bench stream`. `BENCH_ROUNDS` (default 500) sets the
//! requests of each kind. The figures are printed, and written as JSON to the file
//! `GATEHOUSE_BENCH_JSON` names, when set.

use std::time::{Duration, Instant};

use bytes::Bytes;
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Gateway, GatewayConfig, GrantSpec, Provider, ProviderKind};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use secrecy::{ExposeSecret, SecretString};
use url::Url;

const KEY: &str = "sk-bench-provider-key";

/// Time to the first data frame and to the end of one streamed answer.
async fn fetch(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    key: &str,
    body: &Bytes,
) -> (Duration, Duration) {
    let request = hyper::Request::post(url)
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(Full::new(body.clone()))
        .expect("request");
    let started = Instant::now();
    let response = client.request(request).await.expect("answer");
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut first = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.expect("frame");
        if first.is_none() && frame.data_ref().is_some_and(|d| !d.is_empty()) {
            first = Some(started.elapsed());
        }
    }
    (first.unwrap_or_default(), started.elapsed())
}

fn micros(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let answer = "a streamed answer of a few dozen words, ".repeat(8);
    let fake = FakeProvider::start(KEY, vec![Turn::text(answer)]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let gateway_url = format!("http://{}", listener.local_addr().expect("address"));
    let provider = Provider {
        name: "anthropic".to_owned(),
        kind: ProviderKind::Anthropic,
        base_url: Url::parse(fake.url()).expect("url"),
        key: SecretString::from(KEY),
    };
    let config = GatewayConfig::new(Url::parse(&gateway_url).expect("url"));
    let gateway = Gateway::new(config, vec![provider]).expect("gateway");
    let serving = gateway.clone();
    tokio::spawn(async move { serving.serve(listener, std::future::pending()).await });
    let grant = gateway
        .grant(GrantSpec {
            label: "bench".to_owned(),
            provider: "anthropic".to_owned(),
            models: None,
            budget: None,
            sink: None,
        })
        .expect("grant");
    let token = grant.token().expose_secret().to_owned();

    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client = Client::builder(TokioExecutor::new()).build(connector);
    let body = Bytes::from(
        serde_json::json!({"model": "claude-bench", "stream": true, "max_tokens": 512,
            "messages": [{"role": "user", "content": "hi"}]})
        .to_string(),
    );
    let direct_url = format!("{}/v1/messages", fake.url());
    let through_url = format!("{gateway_url}/anthropic/v1/messages");
    // Warm both paths' connection pools.
    for _ in 0..20 {
        fetch(&client, &direct_url, KEY, &body).await;
        fetch(&client, &through_url, &token, &body).await;
    }
    let (mut direct_first, mut direct_total) = (histogram(), histogram());
    let (mut via_first, mut via_total) = (histogram(), histogram());
    for _ in 0..rounds {
        let (first, total) = fetch(&client, &direct_url, KEY, &body).await;
        direct_first.saturating_record(first.as_micros() as u64);
        direct_total.saturating_record(total.as_micros() as u64);
        let (first, total) = fetch(&client, &through_url, &token, &body).await;
        via_first.saturating_record(first.as_micros() as u64);
        via_total.saturating_record(total.as_micros() as u64);
    }

    println!("a streamed answer, {rounds} requests each way (µs):");
    for (name, first, total) in [
        ("direct from the fake", &direct_first, &direct_total),
        ("through the gateway", &via_first, &via_total),
    ] {
        println!(
            "  {name:<22} first event p50 {:>7.0} p99 {:>7.0}   whole stream p50 {:>7.0} p99 {:>7.0}",
            micros(first, 0.5),
            micros(first, 0.99),
            micros(total, 0.5),
            micros(total, 0.99)
        );
    }
    let added_first = micros(&via_first, 0.5) - micros(&direct_first, 0.5);
    let added_total = micros(&via_total, 0.5) - micros(&direct_total, 0.5);
    println!(
        "  added by the gateway at p50: first event {added_first:.0} µs, whole stream {added_total:.0} µs"
    );
    if let Ok(path) = std::env::var("GATEHOUSE_BENCH_JSON") {
        let figures = serde_json::json!({
            "bench": "gateway_stream",
            "rounds": rounds,
            "direct_first_p50_us": micros(&direct_first, 0.5),
            "direct_first_p99_us": micros(&direct_first, 0.99),
            "direct_total_p50_us": micros(&direct_total, 0.5),
            "direct_total_p99_us": micros(&direct_total, 0.99),
            "gateway_first_p50_us": micros(&via_first, 0.5),
            "gateway_first_p99_us": micros(&via_first, 0.99),
            "gateway_total_p50_us": micros(&via_total, 0.5),
            "gateway_total_p99_us": micros(&via_total, 0.99),
            "added_first_p50_us": added_first,
            "added_total_p50_us": added_total,
        });
        std::fs::write(&path, format!("{figures:#}\n")).expect("writing the figures");
    }
}
