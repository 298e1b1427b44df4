//! A role's `permissions` with the real Gemini CLI (the version pinned in
//! `deploy/sandbox/agent-clis.env`, `@google/gemini-cli` under `AGENT_CLIS_DIR`) against
//! the fake Gemini API, run as Gatehouse runs it: the command line
//! [`gatehouse_agent::invocation`] writes, under `sh -c`. Its `BeforeTool` hook runs the
//! real shim (`GATEHOUSE_ACP`, built from this workspace) which asks the stand-in runner of
//! `hooked.rs`.
//!
//! Skipped, saying so, without the CLI (unless `AGENT_CLI_TESTS=required`).

use std::path::Path;

use gatehouse_agent::{Executor, ModelApi, Permissions, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::json;

use crate::hooked::{Hook, REASON, Runner, TOKEN};
use crate::run::Output;
use crate::{DONE, Run, files, installed, workdir};

const MODEL: &str = "gemini-2.5-pro";

fn shell(command: &str) -> Turn {
    Turn::tool(
        "run_shell_command",
        json!({"command": command, "description": "run it"}),
    )
}

fn role() -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash"]})).expect("permissions");
    Role {
        permissions: Some(permissions),
        model: Some(MODEL.to_owned()),
        ..Role::new(Executor::Gemini)
    }
}

/// Runs the role's command line with `gemini` on `turns`, the shim's variables as `hook`
/// says.
async fn run_gemini(
    gemini: &Path,
    turns: Vec<Turn>,
    hook: Hook<'_>,
) -> (Output, tempfile::TempDir, FakeProvider) {
    let role = role();
    let run = Run {
        env: hook.variables(),
        ..Run::new(gemini, &role, Some(ModelApi::Gemini))
    };
    run.run(turns, workdir()).await
}

/// The function responses Gemini CLI sent back to the model, in order.
fn responses(fake: &FakeProvider) -> Vec<String> {
    let requests = fake.requests();
    let Some(last) = requests
        .iter()
        .rev()
        .find(|r| r.body["contents"].is_array() && r.body["tools"].is_array())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for content in last.body["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            if let Some(response) = part.get("functionResponse") {
                out.push(response["response"].to_string());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_runs_what_the_hook_allows_and_never_what_it_denies() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let runner = Runner::default();
    let url = runner.start().await;
    let turns = vec![
        shell("touch denied.txt"),
        shell("touch allowed.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_gemini(&clis.gemini, turns, Hook::asking(&url)).await;
    assert!(output.status.success(), "{}", output.describe());
    files(&work, &output, &["allowed.txt"], &["denied.txt"]);
    let asked = runner.asked();
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert_eq!(runner.tokens()[0], Some(format!("Bearer {TOKEN}")));
    assert_eq!(asked[0]["tool"], "Bash");
    assert_eq!(asked[0]["input"]["command"], "touch denied.txt");
    assert_eq!(asked[1]["input"]["command"], "touch allowed.txt");
    let responses = responses(&fake);
    assert_eq!(responses.len(), 2, "{responses:#?}");
    assert!(
        responses[0].contains(REASON),
        "the model is told why: {responses:#?}"
    );
    assert!(!responses[1].contains(REASON), "{responses:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tools_url_every_call_is_denied() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let turns = vec![shell("touch allowed.txt"), Turn::text(DONE)];
    let (output, work, fake) = run_gemini(&clis.gemini, turns, Hook::NO_URL).await;
    assert!(output.status.success(), "{}", output.describe());
    files(&work, &output, &[], &["allowed.txt"]);
    let responses = responses(&fake);
    assert_eq!(responses.len(), 1, "{responses:#?}");
    assert!(
        responses[0].contains("GATEHOUSE_TOOLS_URL"),
        "{responses:#?}"
    );
}

/// No shim at all (`GATEHOUSE_ACP` unset): the hook's command fails, and the call, which
/// Gemini CLI would run on a failed hook, is denied by the wrapper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_shim_every_call_is_denied() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let turns = vec![shell("touch allowed.txt"), Turn::text(DONE)];
    let (output, work, fake) = run_gemini(&clis.gemini, turns, Hook::default()).await;
    assert!(output.status.success(), "{}", output.describe());
    files(&work, &output, &[], &["allowed.txt"]);
    let responses = responses(&fake);
    assert!(
        responses.len() == 1 && responses[0].contains("gave no answer"),
        "{responses:#?}"
    );
}

/// A working folder whose `.gemini/settings.json` turns hooks off is refused before the
/// CLI starts: nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_switches_hooks_off_is_refused() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let work = workdir();
    std::fs::create_dir(work.path().join(".gemini")).expect(".gemini");
    std::fs::write(
        work.path().join(".gemini/settings.json"),
        r#"{"hooksConfig": {"enabled": false}}"#,
    )
    .expect("settings");
    let role = role();
    let run = Run {
        env: vec![("GEMINI_CLI_TRUST_WORKSPACE".to_owned(), "true".to_owned())],
        ..Run::new(&clis.gemini, &role, Some(ModelApi::Gemini))
    };
    let turns = vec![shell("touch allowed.txt"), Turn::text(DONE)];
    let (output, work, fake) = run.run(turns, work).await;
    assert_eq!(output.status.code(), Some(3), "{}", output.describe());
    assert!(
        output.stderr.contains("hooksConfig"),
        "{}",
        output.describe()
    );
    assert!(fake.requests().is_empty());
    assert!(!work.path().join("allowed.txt").exists());
}
