//! Agent nodes with the real CLIs from npm (Claude Code and Codex at the pinned versions),
//! run by the real runner, their model reached only through the runner's gateway: the
//! role names a provider, the sandbox gets the gateway's address and a token of its
//! attempt, and the provider's key stays with the runner. Each CLI does its job against a
//! fake provider speaking the real stream (a tool call that writes `hello.txt`, then an
//! answer); the node succeeds, its tool trace and the gateway's metered usage are recorded,
//! and the key is found nowhere: not in the database, the data directory or the output.
//!
//! The CLIs come from `tests/agent-clis/install.sh`; without them the tests say so and
//! pass, unless `AGENT_CLI_TESTS=required` (CI).

#[path = "sandboxed_agents/asking.rs"]
mod asking;
#[path = "sandboxed_agents/crash.rs"]
mod crash;
#[path = "sandboxed_agents/docker.rs"]
mod docker;
#[path = "sandboxed_agents/doctor.rs"]
mod doctor;
#[path = "sandboxed_agents/fail_fast.rs"]
mod fail_fast;
#[path = "agent_clis/installed.rs"]
mod installed;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use gatehouse_agent::{Executor, Role};
use gatehouse_events::{Event, RunRequested};
use gatehouse_fake_providers::{FakeProvider, Tokens, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_tests::{Backend, Gatehouse, TestDb, actor, on_both_backends, relay_binary};
use secrecy::SecretString;
use serde_json::json;
use uuid::Uuid;

/// The provider's key: held by the runner's gateway, required by the fake, seen by no CLI.
pub(crate) const REAL_KEY: &str = "sk-test-REAL-runner-held-key-3c9e1a7b5d";
pub(crate) const CONTENT: &str = "hello from the fake provider";
pub(crate) const ANSWER: &str = "I created hello.txt.";

/// An agent node writes `hello.txt` in the workspace; a script node keeps it as an
/// artifact.
pub(crate) const HELLO: &str = r#"
name: hello
nodes:
  code: { kind: agent, role: coder, prompt: "Create hello.txt with a greeting." }
  keep:
    kind: script
    needs: [code]
    run: "cp hello.txt runner.txt $GATEHOUSE_ARTIFACTS/"
    artifacts: [hello.txt, runner.txt]
"#;

on_both_backends!(
    claude_code_reaches_its_model_only_through_the_gateway,
    codex_reaches_its_model_only_through_the_gateway,
);

/// What the CLI's tool runs: writes the file, and tries to read the runner's environment
/// (the runner is this test process), which a sandbox's processes must not see.
pub(crate) fn job() -> String {
    // The key split in two, so that the command recorded in the trace does not hold it.
    let (head, tail) = REAL_KEY.split_at(10);
    format!(
        "printf '{CONTENT}' > hello.txt; \
         if cat /proc/$RUNNER_PID/environ > /dev/null 2>&1; then echo readable; \
         else echo unreadable; fi > runner.txt; \
         grep -l -a '{head}''{tail}' /proc/[0-9]*/environ >> runner.txt 2>/dev/null; true"
    )
}

use fail_fast::{claude_code_gives_up_soon_and_says_why, codex_gives_up_soon_and_says_why};
on_both_backends!(
    claude_code_gives_up_soon_and_says_why,
    codex_gives_up_soon_and_says_why,
);

/// One CLI's part: its executor, the API its provider speaks, its model and the fake's
/// script (a tool call writing the file in the working directory, the workspace; then the
/// answer, each turn with figures of its own).
struct Cli {
    executor: Executor,
    kind: ProviderKind,
    model: &'static str,
    turns: Vec<Turn>,
    /// The tool call as the trace names it.
    traced_as: &'static str,
}

pub(crate) fn tokens(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: 0,
    }
}

async fn claude_code_reaches_its_model_only_through_the_gateway(backend: Backend) {
    let command = job();
    let cli = Cli {
        executor: Executor::ClaudeCode,
        kind: ProviderKind::Anthropic,
        model: "claude-sonnet-4-5",
        traced_as: "Bash",
        turns: vec![
            Turn::tool(
                "Bash",
                json!({"command": command, "description": "Write hello.txt"}),
            )
            .tokens(tokens(1200, 45, 3000, 800)),
            Turn::text(ANSWER).tokens(tokens(60, 12, 4000, 0)),
        ],
    };
    through_the_gateway(backend, cli).await;
}

/// Codex's `exec_command` function; the Responses API reports no cache writes.
async fn codex_reaches_its_model_only_through_the_gateway(backend: Backend) {
    let command = job();
    let cli = Cli {
        executor: Executor::Codex,
        kind: ProviderKind::OpenAi,
        model: "gpt-5-codex",
        traced_as: "command_execution",
        turns: vec![
            Turn::tool("exec_command", json!({"cmd": command})).tokens(tokens(900, 40, 2000, 0)),
            Turn::text(ANSWER).tokens(tokens(50, 10, 2900, 0)),
        ],
    };
    through_the_gateway(backend, cli).await;
}

async fn through_the_gateway(backend: Backend, cli: Cli) {
    let Some(clis) = installed::clis() else {
        return;
    };
    let total = Tokens::total(&cli.turns);
    let traced_as = cli.traced_as;
    let fake = FakeProvider::start(REAL_KEY, cli.turns).await;
    let data = tempfile::tempdir().unwrap();
    let program = match cli.executor {
        Executor::Codex => &clis.codex,
        _ => &clis.claude,
    };
    let bin = program.parent().unwrap().to_owned();
    let role = Role {
        provider: Some("model".into()),
        model: Some(cli.model.into()),
        models: vec![cli.model.into()],
        env: BTreeMap::from([
            ("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())),
            ("RUNNER_PID".into(), std::process::id().to_string()),
        ]),
        ..Role::new(cli.executor)
    };
    let provider = model_provider(&fake, cli.kind);
    let stack = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sop("hello", HELLO)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("coder".to_owned(), role)]);
            options.providers = vec![provider];
            options.relay = Some(relay_binary());
        })
        .start()
        .await;

    let run = request(&stack, "hello").await;
    let finished = stack.wait_run(run, "succeeded").await;
    assert_eq!(
        stack.artifact(run, "keep", 1, "hello.txt"),
        CONTENT,
        "{finished:#}"
    );

    // The agent's processes could not read the runner's environment, nor find the key in
    // any process's.
    assert_eq!(
        stack.artifact(run, "keep", 1, "runner.txt").trim(),
        "unreadable"
    );

    // The CLI kept its state (sessions, settings) in a home of its own, outside the
    // workspace, removed after the attempt: nothing of it is checkpointed or delivered.
    let run_dir = stack.data.path().join(format!("runs/{run}"));
    for state in [".claude", ".claude.json", ".codex"] {
        assert!(
            !run_dir.join("workspace").join(state).exists(),
            "{state} is in the workspace"
        );
    }
    assert!(
        !run_dir.join("homes/code/1").exists(),
        "the attempt's home is removed"
    );

    // The fake saw the real key on every request (it refuses anything else), and the
    // gateway's figures are what it sent.
    assert_eq!(fake.requests().len(), 2, "one request per scripted turn");
    let usage = stack.db.store.usage_of_run(run).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    let metered = &usage[0];
    assert_eq!(metered.node, "code");
    assert_eq!(
        (
            metered.input_tokens,
            metered.output_tokens,
            metered.cache_read_tokens,
            metered.cache_write_tokens
        ),
        (
            total.input as i64,
            total.output as i64,
            total.cache_read as i64,
            total.cache_write as i64
        ),
        "the gateway's figures are recorded"
    );
    let tools = stack.db.store.tool_calls(run).await.unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t.tool == traced_as && t.summary.contains("hello.txt")),
        "the trace holds the CLI's tool call: {tools:?}"
    );

    // The key is nowhere the run left anything.
    let dump = stack.db.dump().await;
    assert!(
        !contains(&dump, REAL_KEY.as_bytes()),
        "the key is in the database"
    );
    assert_key_nowhere_under(stack.data.path());
    stack.stop().await;
}

/// Whether `needle` occurs in `haystack`.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// No file under `dir` (the runner's data directory: workspaces, artifacts, the CLI's home,
/// logs) holds the key.
pub(crate) fn assert_key_nowhere_under(dir: &Path) {
    let mut stack = vec![dir.to_owned()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files += 1;
                let bytes = std::fs::read(entry.path()).unwrap_or_default();
                assert!(
                    !contains(&bytes, REAL_KEY.as_bytes()),
                    "the key is in {}",
                    entry.path().display()
                );
            }
        }
    }
    assert!(files > 0, "nothing under {}", dir.display());
}

/// Starts a run of `sop` for bob.
pub(crate) async fn request(stack: &Gatehouse, sop: &str) -> Uuid {
    let run = Uuid::now_v7();
    stack
        .emit(Event::RunRequested(RunRequested {
            run_id: run,
            sop: sop.into(),
            params: BTreeMap::new(),
            requirement_id: None,
            requested_by: actor("bob"),
            schedule: None,
            parent: None,
            workspace: None,
        }))
        .await;
    run
}

/// The provider `model` the runner's gateway fronts: the fake, speaking `kind`, with the
/// real key.
pub(crate) fn model_provider(fake: &FakeProvider, kind: ProviderKind) -> Provider {
    Provider {
        name: "model".into(),
        kind,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: SecretString::from(REAL_KEY),
    }
}
