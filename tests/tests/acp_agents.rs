//! Executor `acp` end to end on the process sandbox: the real runner hands an attempt the
//! gatehouse-acp shim (`[runner] acp`), whose command line runs it on the scripted ACP agent
//! of adapters/acp/tests/fake/agent.rs; the trace's tool call, the reply and the usage come
//! back through the protocol. Without the shim the node fails saying how to build it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use gatehouse_agent::{Executor, Role};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};

const ASKING: &str = r#"
name: asking
nodes:
  ask: { kind: agent, role: acp, prompt: "Create hello.txt." }
"#;

on_both_backends!(
    an_acp_agent_runs_through_the_shim,
    an_acp_role_without_the_shim_fails_saying_how_to_build_it,
);

/// The shim and the scripted agent, built by Cargo (quick when up to date) into the target
/// directory this test runs from.
fn binaries() -> (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "--locked", "-p", "gatehouse-acp", "--bins"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building gatehouse-acp failed");
            // target/debug/deps/<this test> → target/debug
            let exe = std::env::current_exe().expect("the test's path");
            let dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/debug");
            (dir.join("gatehouse-acp"), dir.join("fake-acp-agent"))
        })
        .clone()
}

async fn stack(backend: Backend, shim: Option<PathBuf>, agent: PathBuf) -> Gatehouse {
    let data = tempfile::tempdir().unwrap();
    let role = Role {
        model: Some("fake-model".into()),
        system_prompt: Some("Be brief.".into()),
        command: vec![agent.display().to_string(), "permission".into()],
        env: BTreeMap::from([("PATH".into(), "/usr/bin:/bin".into())]),
        ..Role::new(Executor::Acp)
    };
    Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sops(&[("asking", ASKING)])
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("acp".to_owned(), role)]);
            options.acp = shim;
        })
        .start()
        .await
}

async fn an_acp_agent_runs_through_the_shim(backend: Backend) {
    let (shim, agent) = binaries();
    let stack = stack(backend, Some(shim), agent).await;
    let run = stack.request("asking").await;
    stack.wait_run(run, "succeeded").await;

    let calls = stack.db.store.tool_calls(run).await.unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (
            calls[0].tool.as_str(),
            calls[0].summary.as_str(),
            calls[0].failed
        ),
        ("edit", "Write hello.txt", false)
    );
    assert!(calls[0].duration_ms.is_some());
    let usage = stack.db.store.usage_of_run(run).await.unwrap();
    assert_eq!(
        usage
            .iter()
            .map(|u| (u.model.as_str(), u.input_tokens, u.output_tokens))
            .collect::<Vec<_>>(),
        [("fake-model", 12, 3)]
    );
    stack.stop().await;
}

async fn an_acp_role_without_the_shim_fails_saying_how_to_build_it(backend: Backend) {
    let (_, agent) = binaries();
    let stack = stack(backend, None, agent).await;
    let run = stack.request("asking").await;
    stack.wait_run(run, "failed").await;
    let attempts = stack.db.store.attempts(run).await.unwrap();
    let error = attempts[0].error.clone().unwrap_or_default();
    assert!(
        error.starts_with("executor \"acp\", and `permissions` on a CLI that asks through a hook, need the gatehouse-acp binary on the runner"),
        "{error}"
    );
    stack.stop().await;
}
