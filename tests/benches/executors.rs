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
use std::sync::Arc;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_ingest::Scope;
use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Profile, SandboxKind, Sandboxes};
use gatehouse_scheduler::AssistantSettings;
use gatehouse_tests::fake_slack::BOT_USER;
use gatehouse_tests::gatehouse::chat::{self, ANA};
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse, TestDb, relay_binary};
use secrecy::SecretString;
use serde_json::{Value, json};

const KEY: &str = "sk-bench-executors-key";
const IMAGE: &str = "gatehouse-sandbox:agents";
const PROJECTS: &str = r#"
[[projects]]
name = "api"
repositories = [{ repo = "acme/api" }]
channels = ["slack:C0API"]
converse = ["ana"]
"#;
const CHANNEL: &str = "C0API";
const ANSWER: &str = "Noted.";

/// An OpenCode configuration whose one provider is the gateway.
const OPENCODE_CONFIG: &str = r#"{"autoupdate":false,"share":"disabled","model":"gatehouse/claude-sonnet-4-5","provider":{"gatehouse":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"{env:ANTHROPIC_BASE_URL}/v1","apiKey":"{env:ANTHROPIC_API_KEY}"},"models":{"claude-sonnet-4-5":{}}}}}"#;

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
    let image = match DockerSandbox::connect("bench-executors").await {
        Ok(docker) => docker.check_image(IMAGE).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(why) = image {
        println!("skipped: {why} (deploy/sandbox/build-images.sh --with-agents)");
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
    let docker = DockerSandbox::connect(&data.path().display().to_string())
        .await
        .expect("Docker");
    let profile = Profile {
        kind: SandboxKind::Docker,
        image: Some(IMAGE.into()),
        user: Some("1000:1000".into()),
        memory: Some("2GiB".parse().unwrap()),
        ..Profile::default()
    };
    let role = Role {
        provider: Some("model".into()),
        sandbox: Some("agents".into()),
        ..case.role.clone()
    };
    let provider = Provider {
        name: "model".into(),
        kind: case.kind,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: SecretString::from(KEY),
    };
    let gh = Gatehouse::builder_on(TestDb::new(Backend::Sqlite).await, data)
        .people(chat::people())
        .chat()
        .projects(PROJECTS)
        .sandbox(Arc::new(Sandboxes::new(
            ProcessSandbox::default(),
            Ok(docker),
        )))
        .runner(move |options| {
            options.roles = BTreeMap::from([("assistant".to_owned(), role)]);
            options.profiles.insert("agents".into(), profile);
            options.providers = vec![provider];
            options.relay = Some(relay_binary());
            options.acp = Some(relay_binary().with_file_name("gatehouse-acp"));
        })
        .assistant(AssistantSettings::new("assistant"))
        .start()
        .await;
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
    let token = gh.stored_token("ana", &Scope::ALL, None).await;
    let list = gh.api_as(&token).get("/conversations").await.is(200);
    let mut attempts = Vec::new();
    for conversation in list.as_array().into_iter().flatten() {
        let id = conversation["id"].as_str().expect("an id");
        let detail = gh
            .api_as(&token)
            .get(&format!("/conversations/{id}"))
            .await
            .is(200);
        attempts.push(detail["turns"][0]["attempts"][0].clone());
    }
    attempts
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
