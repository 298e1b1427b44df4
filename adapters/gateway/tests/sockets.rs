//! The gateway on a Unix socket, as a Docker sandbox reaches it, and its shutdown.

mod scene;

use std::time::Duration;

use bytes::Bytes;
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Gateway, GatewayConfig, GrantSpec};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use secrecy::ExposeSecret;
use serde_json::json;
use url::Url;

use scene::{KEY, providers};

#[tokio::test]
async fn a_request_through_a_unix_socket_streams_back() {
    let fake = FakeProvider::start(KEY, vec![Turn::text("done over a socket")]).await;
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("gateway.sock");
    let listener = tokio::net::UnixListener::bind(&path).expect("bind");
    let config = GatewayConfig::new(Url::parse("http://gateway.invalid").expect("url"));
    let gateway = Gateway::new(config, providers(fake.url(), KEY)).expect("gateway");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = gateway.clone();
    let served = tokio::spawn(async move {
        serving
            .serve(listener, async {
                let _ = stopped.await;
            })
            .await
    });

    let grant = gateway
        .grant(GrantSpec {
            label: "attempt-unix".to_owned(),
            provider: "anthropic".to_owned(),
            models: None,
            budget: None,
            sink: None,
        })
        .expect("grant");
    let env = grant.environment();
    assert!(env.contains(&(
        "ANTHROPIC_BASE_URL".to_owned(),
        "http://gateway.invalid/anthropic".to_owned()
    )));

    let stream = tokio::net::UnixStream::connect(&path)
        .await
        .expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let body = json!({"model": "claude-test", "stream": true, "max_tokens": 8, "messages": []});
    let request = hyper::Request::post("/anthropic/v1/messages")
        .header("host", "gateway")
        .header("x-api-key", grant.token().expose_secret())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let response = sender.send_request(request).await.expect("answer");
    assert_eq!(response.status(), 200);
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text: String = gatehouse_fake_providers::sse::parse(&body)
        .iter()
        .filter_map(|e| e.json())
        .filter_map(|e| e["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "done over a socket");
    assert_eq!(fake.requests()[0].header("x-api-key"), Some(KEY));

    drop(sender);
    stop.send(()).expect("stop");
    tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("serve returns after shutdown")
        .expect("task");
}
