//! A role's `permissions` with the real Kilo (`@kilocode/cli`, pinned in
//! `deploy/sandbox/agent-clis.env`) on the host, as [`super::opencode`] runs OpenCode: the
//! same plugin in `~/.config/kilo/plugins/`, asking `gatehouse-acp hook kilo`.

use gatehouse_agent::Executor;
use gatehouse_fake_providers::Turn;
use serde_json::json;

use super::opencode::{bash, results, run_role, runs_nothing};
use crate::hooked::{Hook, REASON, Runner};
use crate::{DONE, files, installed};

/// A denied command never runs and the model reads why; an allowed one and a background
/// process Kilo starts (its own tool, read as `Bash`) are asked about and run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_asks_gatehouse_before_every_tool_call() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let runner = Runner::default();
    let url = runner.start().await;
    let turns = vec![
        bash("touch denied.txt"),
        bash("touch allowed.txt"),
        Turn::tool(
            "background_process",
            json!({"action": "start", "command": "touch denied-in-background.txt", "description": "bg"}),
        ),
        Turn::text(DONE),
    ];
    let hook = Hook::asking(&url);
    let (output, work, fake) = run_role(&clis.kilo, Executor::Kilo, hook, &[], turns).await;
    assert!(output.status.success(), "{}", output.describe());
    files(
        &work,
        &output,
        &["allowed.txt"],
        &["denied.txt", "denied-in-background.txt"],
    );
    let asked = runner.asked();
    let calls: Vec<(&str, &str)> = asked
        .iter()
        .map(|body| {
            (
                body["tool"].as_str().unwrap_or_default(),
                body["input"]["command"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("Bash", "touch denied.txt"),
            ("Bash", "touch allowed.txt"),
            ("Bash", "touch denied-in-background.txt"),
        ]
    );
    let results = results(&fake);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(
        results[0].0 && results[0].1.contains(REASON),
        "{results:#?}"
    );
    assert!(!results[1].0, "{results:#?}");
    assert!(
        results[2].0 && results[2].1.contains(REASON),
        "{results:#?}"
    );
}

/// No runner to ask: every call is denied, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tools_url_kilo_runs_nothing() {
    let Some(clis) = installed::clis() else {
        return;
    };
    runs_nothing(
        &clis.kilo,
        Executor::Kilo,
        Hook::NO_URL,
        "GATEHOUSE_TOOLS_URL",
    )
    .await;
}
