//! A role's `permissions` with the real Copilot CLI (the pinned version) through its
//! `preToolUse` hook: the command line [`gatehouse_agent::invocation`] writes (the hook's
//! `settings.json`, then `copilot --allow-all …` on the gateway's OpenAI variables), under
//! `sh -c`, against the fake Responses API scripting `bash` calls that create files, with
//! the shim and the stand-in runner of `hooked.rs`.
//!
//! - A denied command never runs and the model reads the runner's reason; an allowed one
//!   runs; the shim asked with Claude Code's name and input (`Bash`, `command`).
//! - Without a tools URL, or without the shim, every call is denied and none runs.

use gatehouse_agent::Executor;
use gatehouse_fake_providers::Turn;
use serde_json::json;

use crate::hooked::{Hook, ShellCli};
use crate::installed;

const MODEL: &str = "gpt-5";

fn bash(command: &str) -> Turn {
    Turn::tool("bash", json!({"command": command, "description": "run it"}))
}

const COPILOT: ShellCli = ShellCli {
    executor: Executor::Copilot,
    model: MODEL,
    shell: bash,
    blocked: "Denied by preToolUse hook",
    blocked_word: "Denied",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_runs_what_the_runner_allows_and_never_what_it_denies() {
    let Some(clis) = installed::clis() else {
        return;
    };
    COPILOT.runs_what_the_runner_allows(&clis.copilot).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_runner_or_a_shim_copilot_runs_nothing() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let no_shim = Hook {
        acp: false,
        url: Some("http://127.0.0.1:9"),
    };
    COPILOT
        .runs_nothing_without(
            &clis.copilot,
            &[
                (Hook::NO_URL, "GATEHOUSE_TOOLS_URL"),
                (no_shim, "Denied by preToolUse hook"),
            ],
        )
        .await;
}
