//! What Gatehouse adds to a conversation turn of each executor's real CLI, and what the
//! ACP shim adds to an agent against the same CLI driven headless — measured in one run.
//!
//! For each executor, in the agents image (`deploy/sandbox/build-images.sh --with-agents`)
//! through the gateway, in front of a fake provider answering at once:
//! `GATEHOUSE_BENCH_TURNS` conversations (default 3), each a first turn answered in a line.
//! A turn's record has the attempt's time and the CLI's own (`duration_ms`, `cli_ms`, the
//! time its process ran); the overhead is the difference — preparing the workspace, the
//! sandbox's start and end, the trace, saving the home — reported per executor, p50 over
//! the turns.
//! The ACP rows run the same CLIs as the native ones through `gatehouse-acp`, so the ratio
//! of their CLI times is what ACP (the shim and the agent's ACP mode) costs against the
//! CLI started bare, headless.
//!
//! `cargo bench -p gatehouse-tests --bench executors` (Docker, the agents image, the static
//! relay and shim). Figures are printed and written as JSON to `GATEHOUSE_BENCH_JSON`.

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_tests::Gatehouse;
use gatehouse_tests::agents_image::{
    CHANNEL, OPENCODE_CONFIG, agents_docker, assistant_in_agents_image, conversations,
};
use gatehouse_tests::fake_slack::BOT_USER;
use gatehouse_tests::gatehouse::chat::ANA;
use gatehouse_tests::latencies::write_figures;
use secrecy::SecretString;
use serde_json::{Value, json};

const KEY: &str = "sk-bench-executors-key";
const ANSWER: &str = "Noted.";

/// One row: its name, the role, the API its provider speaks.
struct Case {
    name: &'static str,
    role: Role,
    kind: ProviderKind,
}

fn case(name: &'static str, executor: Executor, kind: ProviderKind, model: &str) -> Case {
    Case {
        name,
        role: Role {
            model: Some(model.into()),
            ..Role::new(executor)
        },
        kind,
    }
}

fn cases() -> Vec<Case> {
    let mut opencode_acp = case(
        "acp: opencode acp",
        Executor::Acp,
        ProviderKind::Anthropic,
        "claude-sonnet-4-5",
    );
    opencode_acp.role.command = vec!["opencode".into(), "acp".into(), "--pure".into()];
    opencode_acp.role.env = BTreeMap::from([
        ("OPENCODE_CONFIG_CONTENT".into(), OPENCODE_CONFIG.into()),
        ("OPENCODE_DISABLE_AUTOUPDATE".into(), "true".into()),
        ("OPENCODE_DISABLE_MODELS_FETCH".into(), "true".into()),
    ]);
    let mut claude_acp = case(
        "acp: claude-agent-acp",
        Executor::Acp,
        ProviderKind::Anthropic,
        "claude-sonnet-4-5",
    );
    claude_acp.role.command = vec!["claude-agent-acp".into()];
    claude_acp.role.args = vec!["--mode".into(), "bypassPermissions".into()];
    claude_acp.role.env = BTreeMap::from([(
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
        "1".into(),
    )]);
    vec![
        case(
            "claude-code",
            Executor::ClaudeCode,
            ProviderKind::Anthropic,
            "claude-sonnet-4-5",
        ),
        case(
            "codex",
            Executor::Codex,
            ProviderKind::OpenAi,
            "gpt-5-codex",
        ),
        case(
            "gemini",
            Executor::Gemini,
            ProviderKind::Gemini,
            "gemini-2.5-pro",
        ),
        case("copilot", Executor::Copilot, ProviderKind::OpenAi, "gpt-5"),
        case(
            "opencode",
            Executor::Opencode,
            ProviderKind::Anthropic,
            "claude-sonnet-4-5",
        ),
        case(
            "pi",
            Executor::Pi,
            ProviderKind::Anthropic,
            "claude-sonnet-4-5",
        ),
        case(
            "kilo",
            Executor::Kilo,
            ProviderKind::Anthropic,
            "claude-sonnet-4-5",
        ),
        case(
            "aider",
            Executor::Aider,
            ProviderKind::OpenAi,
            "house-model",
        ),
        opencode_acp,
        claude_acp,
    ]
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(bench());
}

async fn bench() {
    let turns: usize = std::env::var("GATEHOUSE_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let image = agents_docker("bench-executors").await.map(drop);
    if let Err(why) = image {
        println!("skipped: {why}");
        write_figures(&json!({ "bench": "executors", "skipped": why }));
        return;
    }
    println!(
        "a conversation turn, {turns} per executor (p50 ms: attempt, the CLI's own, overhead):"
    );
    let mut rows = BTreeMap::new();
    for case in cases() {
        let (attempt, cli) = turns_of(&case, turns).await;
        let (attempt, cli) = (median(attempt), median(cli));
        let overhead = attempt - cli;
        println!(
            "  {:<24} attempt {attempt:>7.0}  cli {cli:>7.0}  overhead {overhead:>6.0} ({:.0}% of the CLI's)",
            case.name,
            100.0 * overhead / cli.max(1.0)
        );
        rows.insert(
            case.name,
            json!({"attempt_ms": attempt, "cli_ms": cli, "overhead_ms": overhead,
                   "overhead_ratio": overhead / cli.max(1.0)}),
        );
    }
    let ratio = |acp: &str, bare: &str| {
        rows[acp]["cli_ms"].as_f64().unwrap_or(0.0)
            / rows[bare]["cli_ms"].as_f64().unwrap_or(1.0).max(1.0)
    };
    let acp = json!({
        "opencode_acp_to_opencode_run": ratio("acp: opencode acp", "opencode"),
        "claude_agent_acp_to_claude_code": ratio("acp: claude-agent-acp", "claude-code"),
    });
    println!("ACP against the CLI started bare (p50 CLI time ratio): {acp}");
    write_figures(&json!({
        "bench": "executors",
        "turns": turns,
        "executors": rows,
        "acp_ratio": acp,
    }));
}

/// The attempt and CLI times, in milliseconds, of `turns` turns of `case`'s conversation.
async fn turns_of(case: &Case, turns: usize) -> (Vec<f64>, Vec<f64>) {
    let fake = FakeProvider::start(KEY, vec![Turn::text(ANSWER)]).await;
    let data = tempfile::tempdir().unwrap();
    let docker = agents_docker(&data.path().display().to_string())
        .await
        .expect("the agents image");
    let role = Role {
        provider: Some("model".into()),
        ..case.role.clone()
    };
    let provider = Provider {
        name: "model".into(),
        kind: case.kind,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: SecretString::from(KEY),
    };
    let gh = assistant_in_agents_image(data, docker, role, provider).await;
    // Each turn is a conversation's first: a thread of its own.
    for n in 0..turns {
        let thread = gh
            .slack_mention(&format!("Ev{n}"), CHANNEL, ANA, "Say noted.")
            .await;
        replied(&gh, &thread, case.name).await;
    }
    let attempts = first_attempts(&gh).await;
    gh.stop().await;
    let times = |key: &str| {
        attempts
            .iter()
            .map(|a| a[key].as_f64().unwrap_or_else(|| panic!("{key}: {a:#}")))
            .collect()
    };
    (times("duration_ms"), times("cli_ms"))
}

/// Waits until the bot has answered in `thread`.
async fn replied(gh: &Gatehouse, thread: &str, name: &str) {
    for _ in 0..3000 {
        let answers = gh
            .slack
            .messages(CHANNEL)
            .into_iter()
            .filter(|m| {
                m.user == BOT_USER
                    && m.thread_ts.as_deref() == Some(thread)
                    && m.text.contains(ANSWER)
            })
            .count();
        if answers > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{name}: no answer in {thread}: {:#}",
        first_attempts(gh).await.len()
    );
}

/// The first attempt of every conversation's first turn.
async fn first_attempts(gh: &Gatehouse) -> Vec<Value> {
    conversations(gh)
        .await
        .into_iter()
        .map(|detail| detail["turns"][0]["attempts"][0].clone())
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
