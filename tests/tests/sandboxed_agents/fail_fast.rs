//! Issue 38 item 8, with the real CLIs: a provider that answers every request 503 fails the
//! node within seconds (the role's retries bounded, not the CLI's minutes of back-off), the
//! retries are shown as they happen ("model API unreachable, retry 1/2") and the failure
//! names the provider's error and the retries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Fault, Turn};
use gatehouse_gateway::ProviderKind;
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_tests::{Backend, Gatehouse, TestDb, relay_binary};

use super::{REAL_KEY, installed, model_provider, request};

/// The retries each role allows.
const RETRIES: u32 = 2;
/// Far less than the minutes the CLIs' own defaults take against a dead provider.
const WITHIN: Duration = Duration::from_secs(60);

const ONE_AGENT: &str = r#"
name: one
nodes:
  code: { kind: agent, role: coder, prompt: "Create hello.txt with a greeting." }
"#;

pub(crate) async fn claude_code_gives_up_soon_and_says_why(backend: Backend) {
    gives_up_soon(
        backend,
        Executor::ClaudeCode,
        ProviderKind::Anthropic,
        "claude-sonnet-4-5",
    )
    .await;
}

pub(crate) async fn codex_gives_up_soon_and_says_why(backend: Backend) {
    gives_up_soon(
        backend,
        Executor::Codex,
        ProviderKind::OpenAi,
        "gpt-5-codex",
    )
    .await;
}

async fn gives_up_soon(backend: Backend, executor: Executor, kind: ProviderKind, model: &str) {
    let Some(clis) = installed::clis() else {
        return;
    };
    let fake = FakeProvider::start(REAL_KEY, vec![Turn::text("never sent")]).await;
    for _ in 0..100 {
        fake.push_fault(Fault::Status(503));
    }
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let program = match executor {
        Executor::Codex => &clis.codex,
        _ => &clis.claude,
    };
    let bin = program.parent().unwrap().to_owned();
    let role = Role {
        provider: Some("model".into()),
        model: Some(model.into()),
        max_retries: Some(RETRIES),
        env: BTreeMap::from([
            ("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())),
            ("HOME".into(), home.display().to_string()),
        ]),
        ..Role::new(executor)
    };
    let provider = model_provider(&fake, kind);
    let stack = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sop("one", ONE_AGENT)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("coder".to_owned(), role)]);
            options.providers = vec![provider];
            // Where namespaces work the process sandbox has no route out but the relay.
            options.relay = Some(relay_binary());
        })
        .start()
        .await;

    let began = Instant::now();
    let run = request(&stack, "one").await;
    let finished = stack.wait_run(run, "failed").await;
    let took = began.elapsed();
    assert!(
        took < WITHIN,
        "failed after {took:?}, not within {WITHIN:?}"
    );

    let attempts = stack.db.store.attempts(run).await.unwrap();
    let logs = stack.db.store.logs(run, 0, 10_000).await.unwrap();
    let shown: Vec<&String> = logs.iter().map(|l| &l.line).collect();
    // The requests the CLI made: its first and its bounded retries, no more (Codex
    // retries each stream's requests too: at most (1 + retries)², 9 here).
    let asked = fake.requests().len();
    let bound = (1 + RETRIES as usize).pow(2);
    assert!(
        asked >= 2 && asked <= bound,
        "{asked} requests reached the provider with {RETRIES} retries allowed"
    );

    let reason = attempts
        .iter()
        .find(|a| a.node == "code")
        .and_then(|a| a.error.clone())
        .unwrap_or_default();
    assert!(
        reason.contains("503"),
        "the provider's error is named: {reason} {finished:#}"
    );
    assert!(
        reason.contains("retries of the model request")
            || reason.contains("retry of the model request"),
        "the retries are named: {reason}"
    );
    assert!(!reason.contains(REAL_KEY), "no key in the reason");

    // The retries were shown while they happened.
    assert!(
        logs.iter().any(|l| l
            .line
            .starts_with("[gatehouse] model API unreachable, retry 1/")),
        "a retry is noted in the log: {shown:#?}"
    );
    // And reported as the node's progress (a `node.progress` through the outbox).
    let dump = stack.db.dump().await;
    // The payload as the backend keeps it: SQLite's blob as written, Postgres's bytea in hex.
    let needle = br#""message":"model API unreachable, retry 1/"#;
    let hex: String = needle.iter().map(|b| format!("{b:02x}")).collect();
    assert!(
        super::contains(&dump, needle) || super::contains(&dump, hex.as_bytes()),
        "a node.progress names the retry"
    );
    stack.stop().await;
}
