//! What the hooked CLIs' suites share: the shim built from this workspace, the variables
//! that hand it to a run, and a tiny HTTP server standing in for the runner's
//! `/permission` that records each question and denies commands naming `denied`,
//! allowing the rest.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use gatehouse_agent::{Executor, ModelApi, Permissions, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::{Value, json};

use crate::run::Output;
use crate::{DONE, Run, files, workdir};

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

/// A CLI on the Responses API (Codex, Copilot CLI) whose hook these tests drive, its model
/// scripted to run shell commands, under a role asking about `git push`.
pub struct ShellCli {
    pub executor: Executor,
    pub model: &'static str,
    /// The model's call of the CLI's shell tool running a command.
    pub shell: fn(&str) -> Turn,
    /// What the CLI tells the model about a call its hook refused
    /// (`blocked by PreToolUse hook`).
    pub blocked: &'static str,
    /// The word of [`ShellCli::blocked`] an allowed call's output never holds.
    pub blocked_word: &'static str,
}

impl ShellCli {
    /// Runs the role's command line with `program` on `turns`, the shim's variables as
    /// `hook` says.
    pub async fn run(
        &self,
        program: &Path,
        turns: Vec<Turn>,
        hook: Hook<'_>,
    ) -> (Output, tempfile::TempDir, FakeProvider) {
        let permissions: Permissions =
            serde_json::from_value(json!({"ask": ["Bash(git push*)"]})).expect("permissions");
        let role = Role {
            model: Some(self.model.to_owned()),
            provider: Some("model".to_owned()),
            permissions: Some(permissions),
            ..Role::new(self.executor)
        };
        let run = Run {
            env: hook.variables(),
            ..Run::new(program, &role, Some(ModelApi::OpenAi))
        };
        run.run(turns, workdir()).await
    }

    /// The stand-in runner denies one command and allows the next: the denied one never
    /// runs and the model reads why, the allowed one runs, and the shim asked about each
    /// as Claude Code's `Bash`. The CLI's output, for checks of its own.
    pub async fn runs_what_the_runner_allows(&self, program: &Path) -> Output {
        let runner = Runner::default();
        let url = runner.start().await;
        let turns = vec![
            (self.shell)("touch denied.txt"),
            (self.shell)("touch allowed.txt"),
            Turn::text(DONE),
        ];
        let (output, work, fake) = self.run(program, turns, Hook::asking(&url)).await;
        assert!(output.status.success(), "{}", output.describe());
        files(&work, &output, &["allowed.txt"], &["denied.txt"]);
        assert_eq!(
            runner.asked(),
            [
                json!({"tool": "Bash", "input": {"command": "touch denied.txt"}}),
                json!({"tool": "Bash", "input": {"command": "touch allowed.txt"}}),
            ],
            "{}",
            output.describe()
        );
        let outputs = call_outputs(&fake);
        assert_eq!(outputs.len(), 2, "{outputs:#?}");
        assert!(
            outputs[0].contains(self.blocked) && outputs[0].contains(REASON),
            "the model is told why: {outputs:#?}"
        );
        assert!(!outputs[1].contains(self.blocked_word), "{outputs:#?}");
        output
    }

    /// With each `(hook, why)` — no tools URL, no shim, no runner — the call is refused
    /// and does not run, the model reading `why`.
    pub async fn runs_nothing_without(&self, program: &Path, cases: &[(Hook<'_>, &str)]) {
        for &(hook, why) in cases {
            let turns = vec![(self.shell)("touch free.txt"), Turn::text(DONE)];
            let (output, work, fake) = self.run(program, turns, hook).await;
            assert!(output.status.success(), "{}", output.describe());
            assert!(
                !work.path().join("free.txt").exists(),
                "{why}: {}",
                output.describe()
            );
            let outputs = call_outputs(&fake);
            assert_eq!(outputs.len(), 1, "{outputs:#?}");
            assert!(
                outputs[0].contains(self.blocked) && outputs[0].contains(why),
                "{why}: {outputs:#?}"
            );
        }
    }
}
