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

use gatehouse_agent::{Executor, ModelApi, Permissions, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::json;

use crate::hooked::{Hook, REASON, Runner, call_outputs};
use crate::run::Output;
use crate::{DONE, Run, files, installed, workdir};

/// A model Codex knows, whose shell tool is `exec_command` (`{"cmd": …}`).
const MODEL: &str = "gpt-5.5";

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

/// Runs the role's command line with `codex` on `turns`, the shim's variables as `hook`
/// says.
async fn run_codex(
    codex: &Path,
    turns: Vec<Turn>,
    hook: Hook<'_>,
) -> (Output, tempfile::TempDir, FakeProvider) {
    let role = role();
    let run = Run {
        env: hook.variables(),
        ..Run::new(codex, &role, Some(ModelApi::OpenAi))
    };
    run.run(turns, workdir()).await
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
    let runner = Runner::default();
    let url = runner.start().await;
    let turns = vec![
        exec("touch denied.txt"),
        exec("touch allowed.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_codex(&clis.codex, turns, Hook::asking(&url)).await;
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
        outputs[0].contains("blocked by PreToolUse hook") && outputs[0].contains(REASON),
        "the model is told why: {outputs:#?}"
    );
    assert!(!outputs[1].contains("blocked"), "{outputs:#?}");
    assert_eq!(reply(&output), DONE, "{}", output.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_runner_or_a_shim_every_call_is_denied() {
    let Some(clis) = installed::clis() else {
        return;
    };
    for (hook, why) in [
        (Hook::NO_URL, "GATEHOUSE_TOOLS_URL"),
        (
            Hook {
                acp: false,
                url: Some("http://127.0.0.1:9"),
            },
            "no gatehouse-acp",
        ),
        (
            // Nothing listens on the discard port.
            Hook::asking("http://127.0.0.1:9"),
            "unreachable",
        ),
    ] {
        let turns = vec![exec("touch free.txt"), Turn::text(DONE)];
        let (output, work, fake) = run_codex(&clis.codex, turns, hook).await;
        assert!(output.status.success(), "{}", output.describe());
        assert!(
            !work.path().join("free.txt").exists(),
            "{why}: {}",
            output.describe()
        );
        let outputs = call_outputs(&fake);
        assert_eq!(outputs.len(), 1, "{outputs:#?}");
        assert!(
            outputs[0].contains("blocked by PreToolUse hook") && outputs[0].contains(why),
            "{why}: {outputs:#?}"
        );
    }
}
