//! A role's `permissions` with the real Codex CLI (the pinned version) through its
//! `PreToolUse` hook: the command line [`gatehouse_agent::invocation`] writes, under
//! `sh -c`, against the fake Responses API scripting `exec_command` calls that create files,
//! with `GATEHOUSE_ACP` the shim built from this workspace and `GATEHOUSE_TOOLS_URL` the
//! stand-in runner of `hooked.rs`.
//!
//! - A denied command never runs and the model reads the runner's reason; an allowed one
//!   runs; the shim asked with Claude Code's name and input (`Bash`, `command`).
//! - Without a tools URL, or without the shim, every call is denied and none runs.

use std::path::Path;

use gatehouse_agent::{Executor, ModelApi, Permissions, Role, Tools, invocation};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::json;

use crate::hooked::{REASON, TOKEN, runner, shim};
use crate::installed;
use crate::run::{self, Output, base_environment};

const KEY: &str = "sk-test-codex-hook-5e1a";
/// A model Codex knows, whose shell tool is `exec_command` (`{"cmd": …}`).
const MODEL: &str = "gpt-5.5";
const DONE: &str = "Done with the commands.";

fn exec(command: &str) -> Turn {
    Turn::tool(
        "exec_command",
        json!({"cmd": command, "yield_time_ms": 2000}),
    )
}

fn role() -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash(git push*)"]})).expect("permissions");
    Role {
        model: Some(MODEL.to_owned()),
        provider: Some("model".to_owned()),
        permissions: Some(permissions),
        ..Role::new(Executor::Codex)
    }
}

/// Runs the role's command line on `turns` in a fresh home and working directory, with
/// `hook` (name, value) variables added for the shim.
async fn run_codex(
    codex: &Path,
    turns: Vec<Turn>,
    hook: &[(&str, String)],
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
        Some(ModelApi::OpenAi),
        &Tools::none(),
        &prompt.display().to_string(),
        None,
    );
    let mut environment = base_environment(home.path());
    let bin = codex.parent().expect("bin").display().to_string();
    environment[0].1 = format!("{bin}:{}", environment[0].1);
    environment.extend(role.cli_environment());
    environment.push(("OPENAI_BASE_URL".to_owned(), format!("{}/v1", fake.url())));
    environment.push(("OPENAI_API_KEY".to_owned(), KEY.to_owned()));
    environment.extend(hook.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    let args = ["-c".to_owned(), line];
    let output = run::run(Path::new("/bin/sh"), &args, &environment, work.path()).await;
    (output, work, fake)
}

/// The outputs Codex sent back to the model, by call id.
fn call_outputs(fake: &FakeProvider) -> Vec<(String, String)> {
    let requests = fake.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| {
            (
                item["call_id"].as_str().unwrap_or_default().to_owned(),
                item["output"].to_string(),
            )
        })
        .collect()
}

/// The agent's final message, from `codex exec --json`.
fn reply(output: &Output) -> String {
    output
        .events()
        .iter()
        .filter(|event| event["item"]["type"] == "agent_message")
        .filter_map(|event| event["item"]["text"].as_str())
        .next_back()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_what_the_runner_allows_and_never_what_it_denies() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let (url, asked) = runner().await;
    let hook = [
        ("GATEHOUSE_ACP", shim().display().to_string()),
        ("GATEHOUSE_TOOLS_URL", url),
        ("GATEHOUSE_TOOLS_TOKEN", TOKEN.to_owned()),
    ];
    let turns = vec![
        exec("touch denied.txt"),
        exec("touch allowed.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_codex(&clis.codex, turns, &hook).await;
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
    let asked = asked.lock().expect("asked").clone();
    assert_eq!(
        asked,
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
        outputs[0].1.contains("blocked by PreToolUse hook") && outputs[0].1.contains(REASON),
        "the model is told why: {outputs:#?}"
    );
    assert!(!outputs[1].1.contains("blocked"), "{outputs:#?}");
    assert_eq!(reply(&output), DONE, "{}", output.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_runner_or_a_shim_every_call_is_denied() {
    let Some(clis) = installed::clis() else {
        return;
    };
    for (hook, why) in [
        (
            vec![("GATEHOUSE_ACP", shim().display().to_string())],
            "GATEHOUSE_TOOLS_URL",
        ),
        (
            vec![
                ("GATEHOUSE_TOOLS_URL", "http://127.0.0.1:9".to_owned()),
                ("GATEHOUSE_TOOLS_TOKEN", TOKEN.to_owned()),
            ],
            "no gatehouse-acp",
        ),
        (
            vec![
                ("GATEHOUSE_ACP", shim().display().to_string()),
                // Nothing listens on the discard port.
                ("GATEHOUSE_TOOLS_URL", "http://127.0.0.1:9".to_owned()),
                ("GATEHOUSE_TOOLS_TOKEN", TOKEN.to_owned()),
            ],
            "unreachable",
        ),
    ] {
        let turns = vec![exec("touch free.txt"), Turn::text(DONE)];
        let (output, work, fake) = run_codex(&clis.codex, turns, &hook).await;
        assert!(output.status.success(), "{}", output.describe());
        assert!(
            !work.path().join("free.txt").exists(),
            "{why}: {}",
            output.describe()
        );
        let outputs = call_outputs(&fake);
        assert_eq!(outputs.len(), 1, "{outputs:#?}");
        assert!(
            outputs[0].1.contains("blocked by PreToolUse hook") && outputs[0].1.contains(why),
            "{why}: {outputs:#?}"
        );
    }
}
