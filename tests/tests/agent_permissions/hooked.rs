//! What the hooked CLIs' suites share: the shim built from this workspace, the variables
//! that hand it to a run, and a tiny HTTP server standing in for the runner's
//! `/permission` that records each question and denies commands naming `denied`,
//! allowing the rest.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use gatehouse_fake_providers::FakeProvider;
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

/// Which of the shim's variables a run gets.
#[derive(Clone, Copy, Default)]
pub struct Hook<'a> {
    /// `GATEHOUSE_ACP`: the shim.
    pub acp: bool,
    /// `GATEHOUSE_TOOLS_URL`, with [`TOKEN`] as `GATEHOUSE_TOOLS_TOKEN`.
    pub url: Option<&'a str>,
}

impl<'a> Hook<'a> {
    /// The shim with no runner to ask (no `GATEHOUSE_TOOLS_URL`).
    pub const NO_URL: Self = Self {
        acp: true,
        url: None,
    };

    /// The shim asking the runner at `url`, as Gatehouse runs a hooked CLI.
    pub fn asking(url: &'a str) -> Self {
        Self {
            acp: true,
            url: Some(url),
        }
    }

    /// The variables, as (name, value).
    pub fn variables(self) -> Vec<(String, String)> {
        let mut variables = Vec::new();
        if self.acp {
            variables.push(("GATEHOUSE_ACP".to_owned(), shim().display().to_string()));
        }
        if let Some(url) = self.url {
            variables.push(("GATEHOUSE_TOOLS_URL".to_owned(), url.to_owned()));
            variables.push(("GATEHOUSE_TOOLS_TOKEN".to_owned(), TOKEN.to_owned()));
        }
        variables
    }
}

/// One request to the stand-in: its `Authorization` header and its body.
type Asked = (Option<String>, Value);

/// The runner's `/permission`, standing in; it keeps every question it was asked.
#[derive(Clone, Default)]
pub struct Runner {
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl Runner {
    /// Serves the stand-in on a free loopback port; its URL.
    pub async fn start(&self) -> String {
        let app = axum::Router::new()
            .route("/permission", post(permission))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// The questions' bodies (`{"tool", "input"}`), in order.
    pub fn asked(&self) -> Vec<Value> {
        let asked = self.asked.lock().expect("asked");
        asked.iter().map(|(_, body)| body.clone()).collect()
    }

    /// The questions' `Authorization` headers, in order.
    pub fn tokens(&self) -> Vec<Option<String>> {
        let asked = self.asked.lock().expect("asked");
        asked.iter().map(|(token, _)| token.clone()).collect()
    }
}

/// Records the question, then refuses it without [`TOKEN`], denies a command naming
/// `denied` with [`REASON`], and allows the rest.
async fn permission(
    State(runner): State<Runner>,
    headers: HeaderMap,
    Json(question): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let token = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let authorized = token.as_deref() == Some(format!("Bearer {TOKEN}").as_str());
    let denied = question["input"]["command"]
        .as_str()
        .is_some_and(|command| command.contains("denied"));
    runner.asked.lock().expect("asked").push((token, question));
    if !authorized {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "token"})));
    }
    let answer = if denied {
        json!({"decision": "deny", "reason": REASON, "by": "test"})
    } else {
        json!({"decision": "allow", "reason": "", "by": "test"})
    };
    (StatusCode::OK, Json(answer))
}

/// The outputs a CLI on the Responses API (Codex, Copilot CLI) sent back to the model in
/// its last request, in order.
pub fn call_outputs(fake: &FakeProvider) -> Vec<String> {
    let requests = fake.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].to_string())
        .collect()
}
