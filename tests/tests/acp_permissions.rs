//! A role's `permissions` through the real runner, on the process sandbox: the `acp`
//! executor's command line writes the policy and starts the gatehouse-acp shim on it, the
//! scripted ACP agent (adapters/acp/tests/fake/agent.rs) asks to write `hello.txt`, the
//! policy denies it, and the decision is in the run's stored trace beside the call.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use gatehouse_agent::{Executor, Permissions, Role};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};

const ASKING: &str = r#"
name: asking
nodes:
  ask: { kind: agent, role: acp, prompt: "Create hello.txt." }
"#;

on_both_backends!(a_denied_request_is_decided_by_the_roles_policy_and_traced);

/// The shim and the scripted agent, built by Cargo into this test's target directory.
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
            let exe = std::env::current_exe().expect("the test's path");
            let dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/debug");
            (dir.join("gatehouse-acp"), dir.join("fake-acp-agent"))
        })
        .clone()
}

async fn a_denied_request_is_decided_by_the_roles_policy_and_traced(backend: Backend) {
    let (shim, agent) = binaries();
    let permissions: Permissions = serde_json::from_value(serde_json::json!({
        "allow": ["Read"],
        "deny": ["Edit"],
    }))
    .expect("permissions");
    let role = Role {
        model: Some("fake-model".into()),
        command: vec![agent.display().to_string(), "permission".into()],
        env: BTreeMap::from([("PATH".into(), "/usr/bin:/bin".into())]),
        permissions: Some(permissions),
        ..Role::new(Executor::Acp)
    };
    assert_eq!(role.check(), Ok(()));
    let data = tempfile::tempdir().expect("data");
    let stack = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sops(&[("asking", ASKING)])
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("acp".to_owned(), role)]);
            options.acp = Some(shim);
        })
        .start()
        .await;
    let run = stack.request("asking").await;
    stack.wait_run(run, "succeeded").await;

    let calls = stack.db.store.tool_calls(run).await.expect("calls");
    let seen: Vec<(&str, &str, bool)> = calls
        .iter()
        .map(|c| (c.tool.as_str(), c.summary.as_str(), c.failed))
        .collect();
    assert_eq!(
        seen,
        [
            ("edit", "Write hello.txt", false),
            ("permission", "deny Edit Write hello.txt (rule Edit)", true),
        ],
        "{calls:#?}"
    );
    stack.stop().await;
}
