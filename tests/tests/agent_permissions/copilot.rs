//! A role's `permissions` with the real Copilot CLI (the pinned version) through its
//! `preToolUse` hook: the command line [`gatehouse_agent::invocation`] writes (the hook's
//! `settings.json`, then `copilot --allow-all …` on the gateway's OpenAI variables), under
//! `sh -c`, against the fake Responses API scripting `bash` calls that create files, with
//! the shim and the stand-in runner of `hooked.rs`.
//!
//! - A denied command never runs and the model reads the runner's reason; an allowed one
//!   runs; the shim asked with Claude Code's name and input (`Bash`, `command`).
//! - Without a tools URL, or without the shim, every call is denied and none runs.

use std::path::{Path, PathBuf};

use gatehouse_agent::{Executor, ModelApi, Permissions, Role, Tools, invocation};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::{Value, json};

use crate::hooked::{REASON, TOKEN, runner, shim};
use crate::installed;
use crate::run::{self, Output, base_environment};

const KEY: &str = "sk-test-copilot-hook-2b7d";
const MODEL: &str = "gpt-5";
const DONE: &str = "Done with the commands.";

/// The pinned Copilot CLI beside the other CLIs (`installed::clis` checks those), or
/// `None` to skip, as they do.
fn copilot() -> Option<PathBuf> {
    let clis = installed::clis()?;
    let bin = clis.codex.parent()?.to_path_buf();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let pins = std::fs::read_to_string(root.join("deploy/sandbox/agent-clis.env")).ok()?;
    let want = pins
        .lines()
        .find_map(|line| line.strip_prefix("COPILOT_VERSION="))?
        .trim()
        .to_owned();
    let manifest = bin.join("../@github/copilot/package.json");
    let have = std::fs::read_to_string(manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if have.as_deref() != Some(want.as_str()) {
        let why = format!("@github/copilot is {have:?}, not {want}");
        assert!(
            std::env::var("AGENT_CLI_TESTS").as_deref() != Ok("required"),
            "AGENT_CLI_TESTS=required but {why}"
        );
        eprintln!("skipped: {why}");
        return None;
    }
    Some(bin.join("copilot"))
}

fn bash(command: &str) -> Turn {
    Turn::tool("bash", json!({"command": command, "description": "run it"}))
}

fn role() -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash(git push*)"]})).expect("permissions");
    Role {
        model: Some(MODEL.to_owned()),
        provider: Some("model".to_owned()),
        permissions: Some(permissions),
        ..Role::new(Executor::Copilot)
    }
}

/// Runs the role's command line on `turns` in a fresh home and working directory, with
/// `hook` (name, value) variables added for the shim.
async fn run_copilot(
    copilot: &Path,
    turns: Vec<Turn>,
    hook: &[(&str, String)],
) -> (Output, tempfile::TempDir, FakeProvider) {
    let role = role();
    assert_eq!(role.check(), Ok(()));
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let fake = FakeProvider::start(KEY, turns).await;
    fake.answer_side_requests_with_text();
    let prompt = home.path().join("prompt.md");
    std::fs::write(&prompt, "Run the commands.").expect("prompt");
    let line = invocation(
        &role,
        Some(ModelApi::OpenAi),
        &Tools::none(),
        &prompt.display().to_string(),
        None,
    );
    let mut environment = base_environment(home.path());
    let bin = copilot.parent().expect("bin").display().to_string();
    environment[0].1 = format!("{bin}:{}", environment[0].1);
    environment.extend(role.cli_environment());
    environment.push(("OPENAI_BASE_URL".to_owned(), format!("{}/v1", fake.url())));
    environment.push(("OPENAI_API_KEY".to_owned(), KEY.to_owned()));
    environment.extend(hook.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    let args = ["-c".to_owned(), line];
    let output = run::run(Path::new("/bin/sh"), &args, &environment, work.path()).await;
    (output, work, fake)
}

/// The outputs Copilot sent back to the model, in order.
fn call_outputs(fake: &FakeProvider) -> Vec<String> {
    let requests = fake.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_runs_what_the_runner_allows_and_never_what_it_denies() {
    let Some(copilot) = copilot() else {
        return;
    };
    let (url, asked) = runner().await;
    let hook = [
        ("GATEHOUSE_ACP", shim().display().to_string()),
        ("GATEHOUSE_TOOLS_URL", url),
        ("GATEHOUSE_TOOLS_TOKEN", TOKEN.to_owned()),
    ];
    let turns = vec![
        bash("touch denied.txt"),
        bash("touch allowed.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_copilot(&copilot, turns, &hook).await;
    assert!(output.status.success(), "{}", output.describe());
    assert!(
        !work.path().join("denied.txt").exists(),
        "{}",
        output.describe()
    );
    assert!(
        work.path().join("allowed.txt").exists(),
        "{}",
        output.describe()
    );
    let asked = asked.lock().expect("asked").clone();
    assert_eq!(
        asked,
        [
            json!({"tool": "Bash", "input": {"command": "touch denied.txt"}}),
            json!({"tool": "Bash", "input": {"command": "touch allowed.txt"}}),
        ],
        "{}",
        output.describe()
    );
    let outputs = call_outputs(&fake);
    assert_eq!(outputs.len(), 2, "{outputs:#?}");
    assert!(
        outputs[0].contains("Denied by preToolUse hook") && outputs[0].contains(REASON),
        "the model is told why: {outputs:#?}"
    );
    assert!(!outputs[1].contains("Denied"), "{outputs:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_runner_or_a_shim_copilot_runs_nothing() {
    let Some(copilot) = copilot() else {
        return;
    };
    for (hook, why) in [
        (
            vec![("GATEHOUSE_ACP", shim().display().to_string())],
            "GATEHOUSE_TOOLS_URL",
        ),
        (
            vec![
                ("GATEHOUSE_TOOLS_URL", "http://127.0.0.1:9".to_owned()),
                ("GATEHOUSE_TOOLS_TOKEN", TOKEN.to_owned()),
            ],
            "Denied by preToolUse hook",
        ),
    ] {
        let turns = vec![bash("touch free.txt"), Turn::text(DONE)];
        let (output, work, fake) = run_copilot(&copilot, turns, &hook).await;
        assert!(output.status.success(), "{}", output.describe());
        assert!(
            !work.path().join("free.txt").exists(),
            "{why}: {}",
            output.describe()
        );
        let outputs = call_outputs(&fake);
        assert_eq!(outputs.len(), 1, "{outputs:#?}");
        assert!(
            outputs[0].contains("Denied by preToolUse hook") && outputs[0].contains(why),
            "{why}: {outputs:#?}"
        );
    }
}
