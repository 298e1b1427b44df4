//! A role's `permissions` with the real OpenCode (`opencode-ai`, pinned in
//! `deploy/sandbox/agent-clis.env`) on the host: the command line Gatehouse writes (its
//! plugin in the home's `~/.config/opencode/plugins/`) under `sh -c`, the shim
//! `gatehouse-acp` built by Cargo as `GATEHOUSE_ACP`, and the stand-in runner of
//! `hooked.rs`. The fake Anthropic provider scripts the calls.
//!
//! The CLI comes from `AGENT_CLIS_DIR` (`node_modules/.bin/opencode`); without it at the
//! pinned version the tests say so and pass, unless `AGENT_CLI_TESTS=required`.

use std::path::Path;

use gatehouse_agent::{Executor, ModelApi, Permissions, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::json;

use crate::hooked::{Hook, REASON, Runner, TOKEN};
use crate::run::Output;
use crate::{DONE, Run, files, installed, workdir};

/// A role of `executor` with a policy (the stand-in decides; the policy makes the
/// command line install the plugin) and the gateway's model.
fn role(executor: Executor) -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash"]})).expect("permissions");
    Role {
        permissions: Some(permissions),
        model: Some("claude-sonnet-4-5".to_owned()),
        ..Role::new(executor)
    }
}

/// Runs `executor`'s command line with `cli` on `turns`, the shim's variables as `hook`
/// says and then `extra`.
pub(super) async fn run_role(
    cli: &Path,
    executor: Executor,
    hook: Hook<'_>,
    extra: &[(&str, &str)],
    turns: Vec<Turn>,
) -> (Output, tempfile::TempDir, FakeProvider) {
    let role = role(executor);
    let mut env = hook.variables();
    env.extend(
        extra
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    );
    let run = Run {
        env,
        ..Run::new(cli, &role, Some(ModelApi::Anthropic))
    };
    run.run(turns, workdir()).await
}

pub(super) fn bash(command: &str) -> Turn {
    Turn::tool("bash", json!({"command": command, "description": "run it"}))
}

/// The tool results the model got, in order: (is_error, content).
pub(super) fn results(fake: &FakeProvider) -> Vec<(bool, String)> {
    super::tool_results(fake)
        .into_iter()
        .map(|(_, error, content)| (error, content))
        .collect()
}

/// The stand-in denies one command and allows the other and a write: the denied one
/// never runs and the model reads why; the hook was asked with Claude Code's names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_asks_gatehouse_before_every_tool_call() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let runner = Runner::default();
    let url = runner.start().await;
    let turns = vec![
        bash("touch denied.txt"),
        bash("touch allowed.txt"),
        Turn::tool(
            "write",
            json!({"filePath": "written.txt", "content": "from the model"}),
        ),
        Turn::text(DONE),
    ];
    let hook = Hook::asking(&url);
    let (output, work, fake) = run_role(&clis.opencode, Executor::Opencode, hook, &[], turns).await;
    assert!(output.status.success(), "{}", output.describe());
    files(&work, &output, &["allowed.txt"], &["denied.txt"]);
    assert_eq!(
        std::fs::read_to_string(work.path().join("written.txt"))
            .ok()
            .as_deref(),
        Some("from the model")
    );
    let asked = runner.asked();
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert_eq!(asked[0]["tool"], "Bash");
    assert_eq!(asked[0]["input"]["command"], "touch denied.txt");
    assert_eq!(asked[1]["input"]["command"], "touch allowed.txt");
    assert_eq!(asked[2]["tool"], "Write");
    assert!(
        asked[2]["input"]["file_path"]
            .as_str()
            .is_some_and(|path| path.ends_with("written.txt")),
        "{asked:#?}"
    );
    assert!(
        runner
            .tokens()
            .iter()
            .all(|token| token.as_deref() == Some(&format!("Bearer {TOKEN}"))),
    );
    let results = results(&fake);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(
        results[0].0 && results[0].1.contains(REASON),
        "{results:#?}"
    );
    assert!(!results[1].0 && !results[2].0, "{results:#?}");
}

/// `program` (`executor`) with the shim's variables as `hook` says runs no command: its
/// one call is refused and the model reads `why`.
pub(crate) async fn runs_nothing(program: &Path, executor: Executor, hook: Hook<'_>, why: &str) {
    let turns = vec![bash("touch nothing.txt"), Turn::text(DONE)];
    let (output, work, fake) = run_role(program, executor, hook, &[], turns).await;
    assert!(output.status.success(), "{}", output.describe());
    files(&work, &output, &[], &["nothing.txt"]);
    let results = results(&fake);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].0 && results[0].1.contains(why),
        "{why}: {results:#?}"
    );
}

/// No runner to ask (no `GATEHOUSE_TOOLS_URL`): the shim denies every call, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tools_url_opencode_runs_nothing() {
    let Some(clis) = installed::clis() else {
        return;
    };
    runs_nothing(
        &clis.opencode,
        Executor::Opencode,
        Hook::NO_URL,
        "GATEHOUSE_TOOLS_URL",
    )
    .await;
}

/// No shim at all (no `GATEHOUSE_ACP`): the hook command fails and the plugin denies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_shim_opencode_runs_nothing() {
    let Some(clis) = installed::clis() else {
        return;
    };
    runs_nothing(
        &clis.opencode,
        Executor::Opencode,
        Hook::default(),
        "no gatehouse-acp",
    )
    .await;
}

/// A plugin OpenCode does not find (its configuration folder is elsewhere) leaves it no
/// tool at all: the configuration denies every tool until the plugin loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_plugin_opencode_has_no_tools() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let runner = Runner::default();
    let url = runner.start().await;
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let elsewhere = elsewhere.path().display().to_string();
    let turns = vec![bash("touch nothing.txt"), Turn::text(DONE)];
    let extra = [("XDG_CONFIG_HOME", elsewhere.as_str())];
    let hook = Hook::asking(&url);
    let (output, work, fake) =
        run_role(&clis.opencode, Executor::Opencode, hook, &extra, turns).await;
    files(&work, &output, &[], &["nothing.txt"]);
    assert!(runner.asked().is_empty());
    let requests = fake.requests();
    assert!(!requests.is_empty(), "{}", output.describe());
    for request in requests {
        let tools = request.body["tools"].as_array().map_or(0, Vec::len);
        assert_eq!(tools, 0, "a tool was offered: {}", request.body["tools"]);
    }
}
