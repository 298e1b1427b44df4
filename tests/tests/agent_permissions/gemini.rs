//! A role's `permissions` with the real Gemini CLI (the version pinned in
//! `deploy/sandbox/agent-clis.env`, `@google/gemini-cli` under `AGENT_CLIS_DIR`) against
//! the fake Gemini API, run as Gatehouse runs it: the command line
//! [`gatehouse_agent::invocation`] writes, under `sh -c`. Its `BeforeTool` hook runs the
//! real shim (`GATEHOUSE_ACP`, `target/debug/gatehouse-acp`, built by the test if missing)
//! which asks a tiny `/permission` server here, standing in for the runner: it allows the
//! commands that touch `allowed*`, denies the rest, and records what it was asked.
//!
//! Skipped, saying so, without the CLI (unless `AGENT_CLI_TESTS=required`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use gatehouse_agent::{Executor, ModelApi, Permissions, Role, Tools, invocation};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::{Value, json};

use crate::run::{Output, base_environment};

const KEY: &str = "gemini-test-permissions-5e1f";
const TOKEN: &str = "attempt-token-gemini-hook";
const DONE: &str = "Done with the commands.";
const MODEL: &str = "gemini-2.5-pro";

/// The Gemini CLI at its pinned version, or `None` (the test skipped) when it is not
/// installed, unless `AGENT_CLI_TESTS=required`.
fn gemini() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository");
    let pins = std::fs::read_to_string(root.join("deploy/sandbox/agent-clis.env")).expect("pins");
    let want = pins
        .lines()
        .find_map(|line| line.strip_prefix("GEMINI_CLI_VERSION="))
        .expect("GEMINI_CLI_VERSION is pinned")
        .trim()
        .to_owned();
    let dir = std::env::var_os("AGENT_CLIS_DIR")
        .map_or_else(|| root.join("target/agent-clis"), PathBuf::from);
    let manifest = dir.join("node_modules/@google/gemini-cli/package.json");
    let have = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if have.as_deref() == Some(want.as_str()) {
        return Some(dir.join("node_modules/.bin/gemini"));
    }
    let why = format!(
        "@google/gemini-cli@{want} is not installed under {} (found {have:?})",
        dir.display()
    );
    assert!(
        std::env::var("AGENT_CLI_TESTS").as_deref() != Ok("required"),
        "AGENT_CLI_TESTS=required but {why}"
    );
    eprintln!("skipped: {why}");
    None
}

/// `gatehouse-acp` beside this test's own binary (`target/debug/`), built once.
fn shim() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "-p", "gatehouse-acp"])
                .status()
                .expect("cargo build");
            assert!(status.success(), "cargo build -p gatehouse-acp");
            let test = std::env::current_exe().expect("the test binary");
            // target/debug/deps/agent_permissions-… → target/debug/gatehouse-acp
            let debug = test.parent().and_then(Path::parent).expect("target/debug");
            debug.join("gatehouse-acp")
        })
        .clone()
}

/// The runner's `/permission`, as far as the hook sees it: allow a call whose command
/// touches `allowed`, deny others with a reason; every question is kept.
#[derive(Clone, Default)]
struct Decider {
    asked: Arc<Mutex<Vec<Value>>>,
}

impl Decider {
    async fn start(&self) -> SocketAddr {
        async fn permission(
            State(decider): State<Decider>,
            headers: HeaderMap,
            Json(body): Json<Value>,
        ) -> Json<Value> {
            let authorized = headers.get("authorization").and_then(|v| v.to_str().ok())
                == Some(&format!("Bearer {TOKEN}"));
            decider
                .asked
                .lock()
                .expect("asked")
                .push(json!({"body": body, "authorized": authorized}));
            let command = body["input"]["command"].as_str().unwrap_or_default();
            let allow = authorized && body["tool"] == "Bash" && command.contains("allowed");
            Json(json!({
                "decision": if allow { "allow" } else { "deny" },
                "reason": if allow { "allowed by the test" } else { "the test's policy denies this command" },
                "by": "policy",
            }))
        }
        let app = Router::new()
            .route("/permission", post(permission))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        address
    }

    fn asked(&self) -> Vec<Value> {
        self.asked.lock().expect("asked").clone()
    }
}

fn shell(command: &str) -> Turn {
    Turn::tool(
        "run_shell_command",
        json!({"command": command, "description": "run it"}),
    )
}

fn role() -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash"]})).expect("permissions");
    Role {
        permissions: Some(permissions),
        model: Some(MODEL.to_owned()),
        ..Role::new(Executor::Gemini)
    }
}

/// Runs the role's command line on `turns` in a fresh home and working directory, the
/// hook's variables being `hook_env`.
async fn run_role(
    gemini: &Path,
    turns: Vec<Turn>,
    hook_env: Vec<(String, String)>,
) -> (Output, tempfile::TempDir, FakeProvider) {
    let role = role();
    assert_eq!(role.check(), Ok(()));
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let fake = FakeProvider::start(KEY, turns).await;
    fake.answer_side_requests_with_text();
    let prompt = home.path().join("prompt.md");
    std::fs::write(&prompt, "Run the commands.").expect("prompt");
    let line = invocation(
        &role,
        Some(ModelApi::Gemini),
        &Tools::none(),
        &prompt.display().to_string(),
        None,
    );
    let mut environment = base_environment(home.path());
    let bin = gemini.parent().expect("bin").display().to_string();
    environment[0].1 = format!("{bin}:{}", environment[0].1);
    environment.extend(role.cli_environment());
    environment.push(("GOOGLE_GEMINI_BASE_URL".to_owned(), fake.url().to_owned()));
    environment.push(("GEMINI_API_KEY".to_owned(), KEY.to_owned()));
    environment.extend(hook_env);
    let args = ["-c".to_owned(), line];
    let output = crate::run::run(Path::new("/bin/sh"), &args, &environment, work.path()).await;
    (output, work, fake)
}

/// The function responses Gemini CLI sent back to the model, in order.
fn responses(fake: &FakeProvider) -> Vec<String> {
    let requests = fake.requests();
    let Some(last) = requests
        .iter()
        .rev()
        .find(|r| r.body["contents"].is_array() && r.body["tools"].is_array())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for content in last.body["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            if let Some(response) = part.get("functionResponse") {
                out.push(response["response"].to_string());
            }
        }
    }
    out
}

fn hook_env(shim: &Path, url: Option<SocketAddr>) -> Vec<(String, String)> {
    let mut env = vec![
        ("GATEHOUSE_ACP".to_owned(), shim.display().to_string()),
        ("GATEHOUSE_TOOLS_TOKEN".to_owned(), TOKEN.to_owned()),
    ];
    if let Some(url) = url {
        env.push(("GATEHOUSE_TOOLS_URL".to_owned(), format!("http://{url}")));
    }
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_runs_what_the_hook_allows_and_never_what_it_denies() {
    let Some(gemini) = gemini() else {
        return;
    };
    let decider = Decider::default();
    let address = decider.start().await;
    let turns = vec![
        shell("touch denied.txt"),
        shell("touch allowed.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_role(&gemini, turns, hook_env(&shim(), Some(address))).await;
    assert!(output.status.success(), "{}", output.describe());
    assert!(
        !work.path().join("denied.txt").exists(),
        "{}",
        output.describe()
    );
    assert!(
        work.path().join("allowed.txt").exists(),
        "{}",
        output.describe()
    );
    let asked = decider.asked();
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert_eq!(asked[0]["authorized"], true);
    assert_eq!(asked[0]["body"]["tool"], "Bash");
    assert_eq!(asked[0]["body"]["input"]["command"], "touch denied.txt");
    assert_eq!(asked[1]["body"]["input"]["command"], "touch allowed.txt");
    let responses = responses(&fake);
    assert_eq!(responses.len(), 2, "{responses:#?}");
    assert!(
        responses[0].contains("the test's policy denies this command"),
        "the model is told why: {responses:#?}"
    );
    assert!(!responses[1].contains("denies"), "{responses:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tools_url_every_call_is_denied() {
    let Some(gemini) = gemini() else {
        return;
    };
    let turns = vec![shell("touch allowed.txt"), Turn::text(DONE)];
    let (output, work, fake) = run_role(&gemini, turns, hook_env(&shim(), None)).await;
    assert!(output.status.success(), "{}", output.describe());
    assert!(
        !work.path().join("allowed.txt").exists(),
        "{}",
        output.describe()
    );
    let responses = responses(&fake);
    assert_eq!(responses.len(), 1, "{responses:#?}");
    assert!(
        responses[0].contains("GATEHOUSE_TOOLS_URL"),
        "{responses:#?}"
    );
}

/// No shim at all (`GATEHOUSE_ACP` unset): the hook's command fails, and the call, which
/// Gemini CLI would run on a failed hook, is denied by the wrapper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_shim_every_call_is_denied() {
    let Some(gemini) = gemini() else {
        return;
    };
    let turns = vec![shell("touch allowed.txt"), Turn::text(DONE)];
    let (output, work, fake) = run_role(&gemini, turns, Vec::new()).await;
    assert!(output.status.success(), "{}", output.describe());
    assert!(
        !work.path().join("allowed.txt").exists(),
        "{}",
        output.describe()
    );
    let responses = responses(&fake);
    assert!(
        responses.len() == 1 && responses[0].contains("gave no answer"),
        "{responses:#?}"
    );
}

/// A working folder whose `.gemini/settings.json` turns hooks off is refused before the
/// CLI starts: nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_switches_hooks_off_is_refused() {
    let Some(gemini) = gemini() else {
        return;
    };
    let role = role();
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    std::fs::create_dir(work.path().join(".gemini")).expect(".gemini");
    std::fs::write(
        work.path().join(".gemini/settings.json"),
        r#"{"hooksConfig": {"enabled": false}}"#,
    )
    .expect("settings");
    let fake = FakeProvider::start(KEY, vec![shell("touch allowed.txt"), Turn::text(DONE)]).await;
    let prompt = home.path().join("prompt.md");
    std::fs::write(&prompt, "Run the commands.").expect("prompt");
    let line = invocation(
        &role,
        Some(ModelApi::Gemini),
        &Tools::none(),
        &prompt.display().to_string(),
        None,
    );
    let mut environment = base_environment(home.path());
    let bin = gemini.parent().expect("bin").display().to_string();
    environment[0].1 = format!("{bin}:{}", environment[0].1);
    environment.push(("GOOGLE_GEMINI_BASE_URL".to_owned(), fake.url().to_owned()));
    environment.push(("GEMINI_API_KEY".to_owned(), KEY.to_owned()));
    environment.push(("GEMINI_CLI_TRUST_WORKSPACE".to_owned(), "true".to_owned()));
    let args = ["-c".to_owned(), line];
    let output = crate::run::run(Path::new("/bin/sh"), &args, &environment, work.path()).await;
    assert_eq!(output.status.code(), Some(3), "{}", output.describe());
    assert!(
        output.stderr.contains("hooksConfig"),
        "{}",
        output.describe()
    );
    assert!(fake.requests().is_empty());
    assert!(!work.path().join("allowed.txt").exists());
}
