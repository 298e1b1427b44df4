//! The real agent CLIs from npm — Claude Code and Codex, at the versions pinned in
//! `deploy/sandbox/agent-clis.env` — against the fake model providers, directly and through
//! the model gateway, as host processes (no sandbox yet).
//!
//! Directly, each CLI does a small job with the fake's script (a tool call that writes
//! `hello.txt`, then a final answer): this proves the fakes speak the Anthropic Messages
//! and OpenAI Responses streams well enough for the real clients. Through the gateway, the
//! CLI's environment is the grant's (`Grant::environment`) plus `HOME` and the like; the
//! job still works, the fake sees only the real key, the key is in neither the CLI's
//! environment nor any file it left, and the gateway's metered usage equals the fake's
//! figures summed over the requests (and what the CLI itself reports).
//!
//! The CLIs are installed by `tests/agent-clis/install.sh` into `target/agent-clis` (or
//! where `AGENT_CLIS_DIR` says). Without them the tests say so and pass, unless
//! `AGENT_CLI_TESTS=required` (CI, `.ci/run`), where that is a failure.

#[path = "agent_clis/claude.rs"]
mod claude;
#[path = "agent_clis/codex.rs"]
mod codex;
#[path = "agent_clis/gateway.rs"]
mod gateway;
#[path = "agent_clis/installed.rs"]
mod installed;
#[path = "agent_clis/job.rs"]
mod job;
#[path = "agent_clis/leaks.rs"]
mod leaks;
#[path = "agent_clis/run.rs"]
mod run;

use std::path::Path;

use gatehouse_fake_providers::{FakeProvider, Recorded, Tokens, Turn};
use gatehouse_gateway::ProviderKind;
use serde_json::Value;
use tempfile::TempDir;

use crate::gateway::{REAL_KEY, var};
use crate::job::{ANSWER, CONTENT, FILE, PROMPT};
use crate::run::Output;

/// The key of the direct runs, where the CLI holds the fake's key itself.
const DIRECT_KEY: &str = "sk-test-direct-key-5e8a";

/// A run's directories: the CLI's `HOME` (and Codex's `CODEX_HOME` inside it) and the
/// working directory the job writes in.
struct Dirs {
    home: TempDir,
    work: TempDir,
}

impl Dirs {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().expect("home"),
            work: tempfile::tempdir().expect("work"),
        }
    }

    fn codex_home(&self) -> std::path::PathBuf {
        let dir = self.home.path().join(".codex");
        std::fs::create_dir_all(&dir).expect("CODEX_HOME");
        dir
    }
}

fn pairs(vars: &[(&str, &str)]) -> Vec<(String, String)> {
    vars.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The file the job wrote.
fn assert_file_written(work: &Path, output: &Output) {
    let written = std::fs::read_to_string(work.join(FILE))
        .unwrap_or_else(|e| panic!("{FILE} was not written ({e}): {}", output.describe()));
    assert_eq!(written, CONTENT);
}

/// Claude Code did the job: the file, a `Write` tool use, and its stream-json ending with a
/// successful result carrying the answer and the fake's figures summed.
fn assert_claude_did_the_job(output: &Output, work: &Path, turns: &[Turn]) {
    assert!(
        output.status.success(),
        "claude failed: {}",
        output.describe()
    );
    assert_file_written(work, output);
    let events = output.events();
    let wrote = events.iter().any(|e| {
        e["type"] == "assistant"
            && e["message"]["content"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|b| b["type"] == "tool_use" && b["name"] == "Write")
            })
    });
    assert!(wrote, "no Write tool use: {}", output.describe());
    let result = events.last().expect("stream-json events");
    assert_eq!(result["type"], "result", "{}", output.describe());
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], ANSWER);
    assert_eq!(result["num_turns"], 2);
    let sum = Tokens::total(turns);
    let usage = &result["usage"];
    assert_eq!(usage["input_tokens"], sum.input);
    assert_eq!(usage["output_tokens"], sum.output);
    assert_eq!(usage["cache_read_input_tokens"], sum.cache_read);
    assert_eq!(usage["cache_creation_input_tokens"], sum.cache_write);
}

/// The fake saw Claude Code's two streamed Messages requests with `key`, the second
/// carrying the result of the tool call.
fn assert_claude_requests(requests: &[Recorded], key: &str) {
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/v1/messages?beta=true"; 2], "{requests:#?}");
    for request in requests {
        assert_eq!(request.status, 200);
        assert_eq!(request.header("x-api-key"), Some(key));
        assert_eq!(request.body["stream"], true);
    }
    let last = &requests[1].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null);
    let answered = last["content"].as_array().is_some_and(|blocks| {
        blocks
            .iter()
            .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_fake00000001")
    });
    assert!(answered, "no tool result in {last}");
}

/// Codex did the job: the file, the command it ran, the answer as its last agent message
/// and its turn's usage equal to the fake's figures summed (OpenAI's input counts the
/// cached part).
fn assert_codex_did_the_job(output: &Output, work: &Path, turns: &[Turn]) {
    assert!(
        output.status.success(),
        "codex failed: {}",
        output.describe()
    );
    assert_file_written(work, output);
    let events = output.events();
    let completed = |kind: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == kind)
            .map(|e| &e["item"])
            .collect()
    };
    let commands = completed("command_execution");
    assert_eq!(commands.len(), 1, "{}", output.describe());
    assert_eq!(commands[0]["exit_code"], 0);
    let messages = completed("agent_message");
    assert_eq!(
        messages.last().map(|m| &m["text"]),
        Some(&Value::from(ANSWER)),
        "{}",
        output.describe()
    );
    let turn = events
        .iter()
        .rfind(|e| e["type"] == "turn.completed")
        .unwrap_or_else(|| panic!("no turn.completed: {}", output.describe()));
    let sum = Tokens::total(turns);
    let usage = &turn["usage"];
    assert_eq!(usage["input_tokens"], sum.input + sum.cache_read);
    assert_eq!(usage["cached_input_tokens"], sum.cache_read);
    assert_eq!(usage["output_tokens"], sum.output);
    assert_eq!(usage["reasoning_output_tokens"], sum.reasoning);
}

/// The fake saw Codex's two streamed Responses requests with `key`, the second carrying
/// the output of the function call.
fn assert_codex_requests(requests: &[Recorded], key: &str) {
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/v1/responses"; 2], "{requests:#?}");
    let bearer = format!("Bearer {key}");
    for request in requests {
        assert_eq!(request.status, 200);
        assert_eq!(request.header("authorization"), Some(bearer.as_str()));
        assert_eq!(request.body["stream"], true);
        assert_eq!(request.body["model"], codex::MODEL);
    }
    let answered = requests[1].body["input"].as_array().is_some_and(|items| {
        items
            .iter()
            .any(|i| i["type"] == "function_call_output" && i["call_id"] == "call_fake00000001")
    });
    assert!(answered, "no function call output in the second request");
}

/// The real key is in no value of `environment` and in no file under `dirs`.
fn assert_key_absent(environment: &[(String, String)], dirs: &Dirs) {
    for (name, value) in environment {
        assert!(!value.contains(REAL_KEY), "the real key is in {name}");
    }
    let (home, work) = (dirs.home.path(), dirs.work.path());
    assert!(
        leaks::count_files(home) > 0,
        "the CLI left no state to search"
    );
    let leaked = leaks::files_containing(&[home, work], REAL_KEY);
    assert!(leaked.is_empty(), "the real key is in {leaked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_writes_a_file_against_the_fake_anthropic_provider() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let dirs = Dirs::new();
    let turns = job::claude_script(dirs.work.path());
    let fake = FakeProvider::start(DIRECT_KEY, turns.clone()).await;
    let provider = pairs(&[
        ("ANTHROPIC_BASE_URL", fake.url()),
        ("ANTHROPIC_API_KEY", DIRECT_KEY),
    ]);
    let environment = claude::environment(dirs.home.path(), &provider);
    let output = claude::claude(&clis.claude, PROMPT, &environment, dirs.work.path()).await;
    assert_claude_did_the_job(&output, dirs.work.path(), &turns);
    assert_claude_requests(&fake.requests(), DIRECT_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_works_through_the_gateway_without_the_key() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let dirs = Dirs::new();
    let turns = job::claude_script(dirs.work.path());
    let fake = FakeProvider::start(REAL_KEY, turns.clone()).await;
    let fronted = gateway::front("anthropic", ProviderKind::Anthropic, fake.url()).await;
    let environment = claude::environment(dirs.home.path(), &fronted.grant.environment());
    assert!(var(&environment, "ANTHROPIC_BASE_URL").ends_with("/anthropic"));
    let output = claude::claude(&clis.claude, PROMPT, &environment, dirs.work.path()).await;
    assert_claude_did_the_job(&output, dirs.work.path(), &turns);
    assert_claude_requests(&fake.requests(), REAL_KEY);
    assert_key_absent(&environment, &dirs);
    assert_eq!(fronted.grant.usage(), job::metered(&turns));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_writes_a_file_against_the_fake_responses_provider() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let dirs = Dirs::new();
    let turns = job::codex_script();
    let fake = FakeProvider::start(DIRECT_KEY, turns.clone()).await;
    let provider = pairs(&[
        ("OPENAI_BASE_URL", &format!("{}/v1", fake.url())),
        ("OPENAI_API_KEY", DIRECT_KEY),
    ]);
    let environment = codex::environment(dirs.home.path(), &dirs.codex_home(), &provider);
    let output = codex::codex(
        &clis.codex,
        PROMPT,
        var(&environment, "OPENAI_BASE_URL"),
        "OPENAI_API_KEY",
        &environment,
        dirs.work.path(),
    )
    .await;
    assert_codex_did_the_job(&output, dirs.work.path(), &turns);
    assert_codex_requests(&fake.requests(), DIRECT_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_works_through_the_gateway_without_the_key() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let dirs = Dirs::new();
    let turns = job::codex_script();
    let fake = FakeProvider::start(REAL_KEY, turns.clone()).await;
    let base = format!("{}/v1", fake.url());
    let fronted = gateway::front("openai", ProviderKind::OpenAi, &base).await;
    let environment = codex::environment(
        dirs.home.path(),
        &dirs.codex_home(),
        &fronted.grant.environment(),
    );
    let output = codex::codex(
        &clis.codex,
        PROMPT,
        var(&environment, "OPENAI_BASE_URL"),
        "OPENAI_API_KEY",
        &environment,
        dirs.work.path(),
    )
    .await;
    assert_codex_did_the_job(&output, dirs.work.path(), &turns);
    assert_codex_requests(&fake.requests(), REAL_KEY);
    assert_key_absent(&environment, &dirs);
    assert_eq!(fronted.grant.usage(), job::metered(&turns));
}
