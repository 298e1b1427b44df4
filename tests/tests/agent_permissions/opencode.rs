//! A role's `permissions` with the real OpenCode (`opencode-ai`, pinned in
//! `deploy/sandbox/agent-clis.env`) on the host: the command line Gatehouse writes (its
//! plugin in the home's `~/.config/opencode/plugins/`) under `sh -c`, the shim
//! `gatehouse-acp` built by Cargo as `GATEHOUSE_ACP`, and a tiny HTTP server standing in
//! for the runner's `/permission`, which denies a command containing `denied` and allows
//! the rest, recording what it was asked. The fake Anthropic provider scripts the calls.
//!
//! The CLI comes from `AGENT_CLIS_DIR` (`node_modules/.bin/opencode`); without it at the
//! pinned version the tests say so and pass, unless `AGENT_CLI_TESTS=required`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use gatehouse_agent::{Executor, ModelApi, Permissions, Role, Tools, invocation};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::{Value, json};

use crate::run::{Output, base_environment};

/// The token the stand-in runner expects.
const TOKEN: &str = "tools-token-opencode-5e1a";
/// What the stand-in runner says when it denies.
pub(super) const NO: &str = "a person said no to this command";

/// A CLI of the OpenCode family at its pinned version: `node_modules/.bin/<program>`
/// under `AGENT_CLIS_DIR`, with `package` at the version `pin` names.
pub(super) fn installed(program: &str, package: &str, pin: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf();
    let dir = std::env::var_os("AGENT_CLIS_DIR")
        .map_or_else(|| root.join("target/agent-clis"), PathBuf::from);
    let pins = std::fs::read_to_string(root.join("deploy/sandbox/agent-clis.env")).expect("pins");
    let want = pins
        .lines()
        .find_map(|line| line.strip_prefix(pin)?.strip_prefix('='))
        .expect("pinned")
        .trim()
        .to_owned();
    let manifest = dir.join("node_modules").join(package).join("package.json");
    let have = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if have.as_deref() == Some(want.as_str()) {
        return Some(dir.join("node_modules/.bin").join(program));
    }
    let why = format!(
        "{package}@{want} is not installed under {} (found {have:?})",
        dir.display()
    );
    assert!(
        std::env::var("AGENT_CLI_TESTS").as_deref() != Ok("required"),
        "AGENT_CLI_TESTS=required but {why}"
    );
    eprintln!("skipped: {why}");
    None
}

/// The shim, built by Cargo into this test's target directory.
pub(super) fn shim() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "--locked", "-p", "gatehouse-acp", "--bins"])
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

/// One request to the stand-in: its `Authorization` header and its body.
type Asked = (Option<String>, Value);

/// The runner's `/permission`, standing in: what it was asked (with the bearer token).
#[derive(Clone, Default)]
pub(super) struct Decider {
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl Decider {
    /// Serves on a free loopback port; returns its URL.
    pub(super) async fn start(&self) -> String {
        let app = axum::Router::new()
            .route("/permission", post(decide))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    pub(super) fn asked(&self) -> Vec<Value> {
        let asked = self.asked.lock().expect("asked");
        asked.iter().map(|(_, body)| body.clone()).collect()
    }

    pub(super) fn tokens(&self) -> Vec<Option<String>> {
        let asked = self.asked.lock().expect("asked");
        asked.iter().map(|(token, _)| token.clone()).collect()
    }
}

async fn decide(
    State(decider): State<Decider>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    let token = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let denied = body["input"]["command"]
        .as_str()
        .is_some_and(|command| command.contains("denied"));
    decider
        .asked
        .lock()
        .expect("asked")
        .push((token, body.clone()));
    Json(match denied {
        true => json!({"decision": "deny", "reason": NO, "by": "ana"}),
        false => json!({"decision": "allow", "reason": "", "by": "policy"}),
    })
}

/// A role of `executor` with a policy (the stand-in decides; the policy makes the
/// command line install the plugin) and the gateway's model.
pub(super) fn role(executor: Executor) -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash"]})).expect("permissions");
    Role {
        permissions: Some(permissions),
        model: Some("claude-sonnet-4-5".to_owned()),
        ..Role::new(executor)
    }
}

/// Which of the shim's variables a run gets.
pub(super) struct Shim<'a> {
    pub(super) acp: Option<&'a Path>,
    pub(super) tools_url: Option<&'a str>,
    /// More variables, last.
    pub(super) extra: &'a [(&'a str, &'a str)],
}

/// Runs `role`'s command line with `cli` on the PATH, on `turns`, in a fresh home and
/// working directory.
pub(super) async fn run_role(
    cli: &Path,
    role: &Role,
    shim: Shim<'_>,
    turns: Vec<Turn>,
) -> (Output, tempfile::TempDir, FakeProvider) {
    assert_eq!(role.check(), Ok(()));
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let fake = FakeProvider::start(super::KEY, turns).await;
    fake.answer_side_requests_with_text();
    let prompt = home.path().join("prompt.md");
    std::fs::write(&prompt, "Run the commands.").expect("prompt");
    let line = invocation(
        role,
        Some(ModelApi::Anthropic),
        &Tools::none(),
        &prompt.display().to_string(),
        None,
    );
    let mut environment = base_environment(home.path());
    let bin = cli.parent().expect("bin").display().to_string();
    environment[0].1 = format!("{bin}:{}", environment[0].1);
    environment.extend(role.cli_environment());
    environment.push(("ANTHROPIC_BASE_URL".to_owned(), fake.url().to_owned()));
    environment.push(("ANTHROPIC_API_KEY".to_owned(), super::KEY.to_owned()));
    if let Some(acp) = shim.acp {
        environment.push(("GATEHOUSE_ACP".to_owned(), acp.display().to_string()));
    }
    if let Some(url) = shim.tools_url {
        environment.push(("GATEHOUSE_TOOLS_URL".to_owned(), url.to_owned()));
        environment.push(("GATEHOUSE_TOOLS_TOKEN".to_owned(), TOKEN.to_owned()));
    }
    environment.extend(
        shim.extra
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    );
    let args = ["-c".to_owned(), line];
    let output = crate::run::run(Path::new("/bin/sh"), &args, &environment, work.path()).await;
    (output, work, fake)
}

pub(super) fn bash(command: &str) -> Turn {
    Turn::tool("bash", json!({"command": command, "description": "run it"}))
}

/// The tool results the model got, in order: (is_error, content).
pub(super) fn results(fake: &FakeProvider) -> Vec<(bool, String)> {
    super::tool_results(fake)
        .into_iter()
        .map(|(_, error, content)| (error, content))
        .collect()
}

fn opencode() -> Option<PathBuf> {
    installed("opencode", "opencode-ai", "OPENCODE_VERSION")
}

/// The stand-in denies one command and allows the other and a write: the denied one
/// never runs and the model reads why; the hook was asked with Claude Code's names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_asks_gatehouse_before_every_tool_call() {
    let Some(cli) = opencode() else {
        return;
    };
    let decider = Decider::default();
    let url = decider.start().await;
    let acp = shim();
    let turns = vec![
        bash("touch denied.txt"),
        bash("touch allowed.txt"),
        Turn::tool(
            "write",
            json!({"filePath": "written.txt", "content": "from the model"}),
        ),
        Turn::text(super::DONE),
    ];
    let shim = Shim {
        acp: Some(&acp),
        tools_url: Some(&url),
        extra: &[],
    };
    let (output, work, fake) = run_role(&cli, &role(Executor::Opencode), shim, turns).await;
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
    assert_eq!(
        std::fs::read_to_string(work.path().join("written.txt"))
            .ok()
            .as_deref(),
        Some("from the model")
    );
    let asked = decider.asked();
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert_eq!(asked[0]["tool"], "Bash");
    assert_eq!(asked[0]["input"]["command"], "touch denied.txt");
    assert_eq!(asked[1]["input"]["command"], "touch allowed.txt");
    assert_eq!(asked[2]["tool"], "Write");
    assert!(
        asked[2]["input"]["file_path"]
            .as_str()
            .is_some_and(|path| path.ends_with("written.txt")),
        "{asked:#?}"
    );
    assert!(
        decider
            .tokens()
            .iter()
            .all(|token| token.as_deref() == Some(&format!("Bearer {TOKEN}"))),
    );
    let results = results(&fake);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(results[0].0 && results[0].1.contains(NO), "{results:#?}");
    assert!(!results[1].0 && !results[2].0, "{results:#?}");
}

/// No runner to ask (no `GATEHOUSE_TOOLS_URL`): the shim denies every call, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tools_url_opencode_runs_nothing() {
    let Some(cli) = opencode() else {
        return;
    };
    let acp = shim();
    let turns = vec![bash("touch nothing.txt"), Turn::text(super::DONE)];
    let shim = Shim {
        acp: Some(&acp),
        tools_url: None,
        extra: &[],
    };
    let (output, work, fake) = run_role(&cli, &role(Executor::Opencode), shim, turns).await;
    assert!(output.status.success(), "{}", output.describe());
    assert!(
        !work.path().join("nothing.txt").exists(),
        "{}",
        output.describe()
    );
    let results = results(&fake);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].0 && results[0].1.contains("GATEHOUSE_TOOLS_URL"),
        "{results:#?}"
    );
}

/// No shim at all (no `GATEHOUSE_ACP`): the hook command fails and the plugin denies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_shim_opencode_runs_nothing() {
    let Some(cli) = opencode() else {
        return;
    };
    let turns = vec![bash("touch nothing.txt"), Turn::text(super::DONE)];
    let shim = Shim {
        acp: None,
        tools_url: None,
        extra: &[],
    };
    let (output, work, fake) = run_role(&cli, &role(Executor::Opencode), shim, turns).await;
    assert!(output.status.success(), "{}", output.describe());
    assert!(
        !work.path().join("nothing.txt").exists(),
        "{}",
        output.describe()
    );
    let results = results(&fake);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].0 && results[0].1.contains("no gatehouse-acp"),
        "{results:#?}"
    );
}

/// A plugin OpenCode does not find (its configuration folder is elsewhere) leaves it no
/// tool at all: the configuration denies every tool until the plugin loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_plugin_opencode_has_no_tools() {
    let Some(cli) = opencode() else {
        return;
    };
    let decider = Decider::default();
    let url = decider.start().await;
    let acp = shim();
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let elsewhere = elsewhere.path().display().to_string();
    let turns = vec![bash("touch nothing.txt"), Turn::text(super::DONE)];
    let shim = Shim {
        acp: Some(&acp),
        tools_url: Some(&url),
        extra: &[("XDG_CONFIG_HOME", &elsewhere)],
    };
    let (output, work, fake) = run_role(&cli, &role(Executor::Opencode), shim, turns).await;
    assert!(
        !work.path().join("nothing.txt").exists(),
        "{}",
        output.describe()
    );
    assert!(decider.asked().is_empty());
    let requests = fake.requests();
    assert!(!requests.is_empty(), "{}", output.describe());
    for request in requests {
        let tools = request.body["tools"].as_array().map_or(0, Vec::len);
        assert_eq!(tools, 0, "a tool was offered: {}", request.body["tools"]);
    }
}
