//! What the hooked CLIs' suites share: the shim built from this workspace, and a tiny HTTP
//! server standing in for the runner's `/permission` that records each question and denies
//! commands naming `denied`, allowing the rest.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};

/// The attempt's token the stand-in requires.
pub const TOKEN: &str = "tools-token-hooked-93b2";
/// What the stand-in runner tells the model when it denies.
pub const REASON: &str = "the test's runner denied commands naming denied";

/// The shim, built by Cargo into this test's target directory.
pub fn shim() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--locked",
                    "-p",
                    "gatehouse-acp",
                    "--bin",
                    "gatehouse-acp",
                ])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building gatehouse-acp failed");
            let exe = std::env::current_exe().expect("the test's path");
            exe.parent()
                .and_then(|deps| deps.parent())
                .expect("target/debug")
                .join("gatehouse-acp")
        })
        .clone()
}

pub type Asked = Arc<Mutex<Vec<Value>>>;

/// The runner's `/permission`, standing in: checks the token, records `{"tool","input"}`,
/// denies a command naming `denied`.
async fn permission(
    State(asked): State<Asked>,
    headers: HeaderMap,
    Json(question): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let bearer = format!("Bearer {TOKEN}");
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(bearer.as_str()) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "token"})));
    }
    let denied = question["input"]["command"]
        .as_str()
        .is_some_and(|command| command.contains("denied"));
    asked.lock().expect("asked").push(question);
    let answer = if denied {
        json!({"decision": "deny", "reason": REASON, "by": "test"})
    } else {
        json!({"decision": "allow", "reason": "", "by": "test"})
    };
    (StatusCode::OK, Json(answer))
}

/// Serves the stand-in on a free loopback port; its URL and what it was asked.
pub async fn runner() -> (String, Asked) {
    let asked = Asked::default();
    let app = axum::Router::new()
        .route("/permission", post(permission))
        .with_state(asked.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, asked)
}
