//! kill -9 of the runner while the CLI's answer is streaming through the gateway: the
//! attempt is reported interrupted and run again, the dead attempt's token no longer
//! works anywhere, and usage is recorded once, for the attempt that finished.

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Fault, Turn};
use gatehouse_gateway::ProviderKind;
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_tests::{Backend, Gatehouse, TestDb, relay_binary};
use serde_json::json;
use std::sync::Arc;

use crate::{ANSWER, CONTENT, HELLO, REAL_KEY, installed, job, model_provider, request, tokens};

gatehouse_tests::on_both_backends!(a_runner_killed_mid_stream_leaves_a_dead_token_and_one_usage);

/// The token of the CLI that is running now, read from its environment (the test runs as
/// the runner's user, outside the sandbox's namespaces).
fn running_token() -> Option<String> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let token = environ
            .split(|b| *b == 0)
            .filter_map(|var| std::str::from_utf8(var).ok())
            .find_map(|var| var.strip_prefix("ANTHROPIC_API_KEY=gh-gw-"));
        if let Some(token) = token {
            return Some(format!("gh-gw-{token}"));
        }
    }
    None
}

/// Sends a minimal Messages request with `token` to the gateway's Unix socket under
/// `data`; the status it answers.
async fn status_with(data: &std::path::Path, token: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = data.join("sockets/runner/gateway.sock");
    let mut stream = tokio::net::UnixStream::connect(&socket)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", socket.display()));
    let body = r#"{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}"#;
    let request = format!(
        "POST /model/v1/messages HTTP/1.1\r\nhost: gateway\r\nx-api-key: {token}\r\n\
         anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"))
}

async fn a_runner_killed_mid_stream_leaves_a_dead_token_and_one_usage(backend: Backend) {
    let Some(clis) = installed::clis() else {
        return;
    };
    let turns = vec![
        Turn::tool(
            "Bash",
            json!({"command": job(), "description": "Write hello.txt"}),
        )
        .tokens(tokens(500, 20, 0, 0)),
        Turn::text(ANSWER).tokens(tokens(30, 7, 0, 0)),
    ];
    let fake = FakeProvider::start(REAL_KEY, turns).await;
    // The first answer stops after its first events, long enough to kill the runner.
    fake.push_fault(Fault::Pause {
        after: 2,
        pause: Duration::from_secs(30),
    });
    let bin = clis.claude.parent().unwrap().to_owned();
    let role = Role {
        provider: Some("model".into()),
        model: Some("claude-sonnet-4-5".into()),
        env: BTreeMap::from([
            ("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())),
            ("RUNNER_PID".into(), std::process::id().to_string()),
        ]),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = model_provider(&fake, ProviderKind::Anthropic);
    let configure = move |options: &mut gatehouse_runner::RunnerOptions| {
        options.roles = BTreeMap::from([("coder".to_owned(), role.clone())]);
        options.providers = vec![provider.clone()];
        options.relay = Some(relay_binary());
    };
    let first = Gatehouse::builder_on(TestDb::new(backend).await, tempfile::tempdir().unwrap())
        .sop("hello", HELLO)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .lease(Duration::from_secs(2))
        .runner(configure.clone())
        .start()
        .await;
    let run = request(&first, "hello").await;
    // The CLI is waiting on the paused stream.
    first
        .until("the first request", || {
            (!fake.requests().is_empty()).then_some(())
        })
        .await;
    let dead = first.until("the running CLI's token", running_token).await;
    let (db, data) = first.crash();

    let second = Gatehouse::builder_on(db, data)
        .sop("hello", HELLO)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .lease(Duration::from_secs(2))
        .runner(configure)
        .start()
        .await;
    let finished = second.wait_run(run, "succeeded").await;
    assert_eq!(
        second.artifact(run, "keep", 1, "hello.txt"),
        CONTENT,
        "{finished:#}"
    );

    // The dead attempt's token is refused by the gateway that replaced its own.
    assert_eq!(status_with(second.data.path(), &dead).await, 401);

    // Usage once: the attempt that finished, with the whole script's figures.
    let usage = second.db.store.usage_of_run(run).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert!(usage[0].attempt >= 2, "{usage:?}");
    assert_eq!(
        (usage[0].input_tokens, usage[0].output_tokens),
        (530, 27),
        "{usage:?}"
    );
    second.stop().await;
}
