//! A role's `permissions` through each other CLI's pre-tool hook or plugin in the agents
//! image, as [`super::claude_code_asks_before_a_push_and_a_denied_push_never_runs`] does for
//! Claude Code: the hook runs the shim the runner mounts (`gatehouse-acp hook`), which puts
//! an `ask` to a person; see [`super::asks_before_a_push`].

use gatehouse_agent::Executor;
use gatehouse_fake_providers::Turn;
use gatehouse_gateway::ProviderKind;
use serde_json::json;

use super::{PUSH, Push, asks_before_a_push};

/// Codex's push is an `exec_command` call; its `PreToolUse` hook blocks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn codex_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push(Push {
        executor: Executor::Codex,
        model: "gpt-5.5",
        kind: ProviderKind::OpenAi,
        call: Turn::tool("exec_command", json!({"cmd": PUSH})),
        blocked: Some("blocked by PreToolUse hook"),
    })
    .await;
}

/// Copilot CLI's push is a `bash` call; its `preToolUse` hook denies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copilot_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push(Push {
        executor: Executor::Copilot,
        model: "gpt-5",
        kind: ProviderKind::OpenAi,
        call: Turn::tool("bash", json!({"command": PUSH, "description": "Push"})),
        blocked: Some("Denied by preToolUse hook"),
    })
    .await;
}

/// Gemini CLI's push is a `run_shell_command` call; its `BeforeTool` hook blocks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gemini_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push(Push {
        executor: Executor::Gemini,
        model: "gemini-2.5-pro",
        kind: ProviderKind::Gemini,
        call: Turn::tool(
            "run_shell_command",
            json!({"command": PUSH, "description": "Push"}),
        ),
        blocked: Some("Tool execution blocked"),
    })
    .await;
}

/// OpenCode's push is its `bash` tool, which the plugin its command line writes asks about.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opencode_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push(opencode_family(Executor::Opencode)).await;
}

/// Kilo, OpenCode's fork, with the same plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kilo_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push(opencode_family(Executor::Kilo)).await;
}

/// OpenCode's or Kilo's push: a `bash` call, on the Anthropic API.
fn opencode_family(executor: Executor) -> Push {
    Push {
        executor,
        model: "claude-sonnet-4-5",
        kind: ProviderKind::Anthropic,
        call: Turn::tool("bash", json!({"command": PUSH, "description": "Push"})),
        blocked: None,
    }
}
