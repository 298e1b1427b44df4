//! A role's `permissions` with the real Copilot CLI (the pinned version) through its
//! `preToolUse` hook: the command line [`gatehouse_agent::invocation`] writes (the hook's
//! `settings.json`, then `copilot --allow-all …` on the gateway's OpenAI variables), under
//! `sh -c`, against the fake Responses API scripting `bash` calls that create files, with
//! the shim and the stand-in runner of `hooked.rs`.
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

const MODEL: &str = "gpt-5";

fn bash(command: &str) -> Turn {
    Turn::tool("bash", json!({"command": command, "description": "run it"}))
}

fn role() -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash(git push*)"]})).expect("permissions");
    Role {
        model: Some(MODEL.to_owned()),
        provider: Some("model".to_owned()),
        permissions: Some(permissions),
        ..Role::new(Executor::Copilot)
    }
}

/// Runs the role's command line with `copilot` on `turns`, the shim's variables as `hook`
/// says.
async fn run_copilot(
    copilot: &Path,
    turns: Vec<Turn>,
    hook: Hook<'_>,
) -> (Output, tempfile::TempDir, FakeProvider) {
    let role = role();
    let run = Run {
        env: hook.variables(),
        ..Run::new(copilot, &role, Some(ModelApi::OpenAi))
    };
    run.run(turns, workdir()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_runs_what_the_runner_allows_and_never_what_it_denies() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let runner = Runner::default();
    let url = runner.start().await;
    let turns = vec![
        bash("touch denied.txt"),
        bash("touch allowed.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_copilot(&clis.copilot, turns, Hook::asking(&url)).await;
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
        outputs[0].contains("Denied by preToolUse hook") && outputs[0].contains(REASON),
        "the model is told why: {outputs:#?}"
    );
    assert!(!outputs[1].contains("Denied"), "{outputs:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_runner_or_a_shim_copilot_runs_nothing() {
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
            "Denied by preToolUse hook",
        ),
    ] {
        let turns = vec![bash("touch free.txt"), Turn::text(DONE)];
        let (output, work, fake) = run_copilot(&clis.copilot, turns, hook).await;
        assert!(output.status.success(), "{}", output.describe());
        assert!(
            !work.path().join("free.txt").exists(),
            "{why}: {}",
            output.describe()
        );
        let outputs = call_outputs(&fake);
        assert_eq!(outputs.len(), 1, "{outputs:#?}");
        assert!(
            outputs[0].contains("Denied by preToolUse hook") && outputs[0].contains(why),
            "{why}: {outputs:#?}"
        );
    }
}
