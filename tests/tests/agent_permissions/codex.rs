//! A role's `permissions` with the real Codex CLI (the pinned version) through its
//! `PreToolUse` hook: the command line [`gatehouse_agent::invocation`] writes, under
//! `sh -c`, against the fake Responses API scripting `exec_command` calls that create files,
//! with `GATEHOUSE_ACP` the shim built from this workspace and `GATEHOUSE_TOOLS_URL` the
//! stand-in runner of `hooked.rs`.
//!
//! - A denied command never runs and the model reads the runner's reason; an allowed one
//!   runs; the shim asked with Claude Code's name and input (`Bash`, `command`).
//! - Without a tools URL, or without the shim, every call is denied and none runs.

use gatehouse_agent::Executor;
use gatehouse_fake_providers::Turn;
use serde_json::json;

use crate::hooked::{Hook, ShellCli};
use crate::run::Output;
use crate::{DONE, installed};

/// A model Codex knows, whose shell tool is `exec_command` (`{"cmd": …}`).
const MODEL: &str = "gpt-5.5";

fn exec(command: &str) -> Turn {
    Turn::tool(
        "exec_command",
        json!({"cmd": command, "yield_time_ms": 2000}),
    )
}

const CODEX: ShellCli = ShellCli {
    executor: Executor::Codex,
    model: MODEL,
    shell: exec,
    blocked: "blocked by PreToolUse hook",
    blocked_word: "blocked",
};

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
    let output = CODEX.runs_what_the_runner_allows(&clis.codex).await;
    assert_eq!(reply(&output), DONE, "{}", output.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_runner_or_a_shim_every_call_is_denied() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let no_shim = Hook {
        acp: false,
        url: Some("http://127.0.0.1:9"),
    };
    // Nothing listens on the discard port.
    let unreachable = Hook::asking("http://127.0.0.1:9");
    CODEX
        .runs_nothing_without(
            &clis.codex,
            &[
                (Hook::NO_URL, "GATEHOUSE_TOOLS_URL"),
                (no_shim, "no gatehouse-acp"),
                (unreachable, "unreachable"),
            ],
        )
        .await;
}
