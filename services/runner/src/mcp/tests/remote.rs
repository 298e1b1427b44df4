//! Remote `[mcp.NAME]` servers forwarded with their secret, for attached attempts only.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;

/// A remote MCP server stand-in: answers every request with the Authorization header it
/// got, so a test sees which credentials arrived.
async fn remote_server() -> url::Url {
    use axum::http::HeaderMap;
    let app = axum::Router::new().fallback(|headers: HeaderMap| async move {
        let seen = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned();
        axum::Json(json!({"jsonrpc": "2.0", "id": 1, "result": {"authorization": seen}}))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let at = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    url::Url::parse(&format!("http://{at}/mcp")).expect("url")
}

#[tokio::test]
async fn a_remote_server_is_reached_with_its_secret_only_by_attempts_it_is_attached_to() {
    use secrecy::SecretString;
    let wiki = gatehouse_gateway::RemoteMcp::new(
        "wiki",
        remote_server().await,
        vec![(
            "authorization".to_owned(),
            SecretString::from("Bearer wiki-secret"),
        )],
    )
    .expect("remote");
    let desk = Desk::new(std::collections::BTreeMap::from([(
        "wiki".to_owned(),
        Arc::new(wiki),
    )]));
    let bench = Bench::with_desk(desk).await;
    let attached = bench.attempt_with(1, Duration::from_secs(1), vec!["wiki".to_owned()]);
    let url = bench.url.replace(GATEHOUSE_PATH, "/mcp/wiki");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let answer: Value = bench
        .http
        .post(&url)
        .bearer_auth(attached.token())
        .json(&body)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    // The secret is the runner's; the attempt's own token never leaves.
    assert_eq!(answer["result"]["authorization"], "Bearer wiki-secret");

    let other = bench.attempt(1, Duration::from_secs(1));
    let refused = bench
        .http
        .post(&url)
        .bearer_auth(other.token())
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), 404);
    assert!(
        refused
            .text()
            .await
            .expect("body")
            .contains("attached: none")
    );
    let unknown = bench
        .http
        .post(bench.url.replace(GATEHOUSE_PATH, "/mcp/nope"))
        .bearer_auth(attached.token())
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(unknown.status(), 404);
}
