//! A role's `permissions` with the real Claude Code CLI (the version pinned in
//! `deploy/sandbox/agent-clis.env`) against the fake Anthropic provider, run as Gatehouse
//! runs it: the command line [`gatehouse_agent::invocation`] writes, under `sh -c`, with the
//! role's environment. The fake scripts Bash tool calls; the files they would create show
//! what Claude Code let run.
//!
//! - Without a permission tool (`--permission-prompts none`): a denied command does not
//!   run, an allowed one does, and one no rule covers is refused, never run.
//! - With `--permission-prompt-tool` pointing at a tiny stdio MCP server
//!   (`agent_permissions/decider.js`): a call no rule covers is put to it, with the tool's
//!   name and input, and its answer holds; a denied call never reaches it.
//!
//! The CLIs that ask Gatehouse through a pre-tool hook or plugin (Gemini CLI, Codex,
//! Copilot CLI, OpenCode, Kilo) have a module each: the real CLI's hook answered by the real
//! shim (`gatehouse-acp hook`) asking a stand-in for the runner's `/permission`.
//!
//! Skipped, saying so, without the CLIs (unless `AGENT_CLI_TESTS=required`).

#[path = "agent_permissions/codex.rs"]
mod codex;
#[path = "agent_permissions/copilot.rs"]
mod copilot;
#[path = "agent_permissions/gemini.rs"]
mod gemini;
#[path = "agent_permissions/hooked.rs"]
mod hooked;
#[path = "agent_clis/installed.rs"]
mod installed;
#[path = "agent_permissions/kilo.rs"]
mod kilo;
#[path = "agent_permissions/opencode.rs"]
mod opencode;
#[path = "agent_clis/run.rs"]
mod run;

use std::path::Path;

use gatehouse_agent::{Executor, ModelApi, Permissions, Role, Tools, invocation};
use gatehouse_fake_providers::{FakeProvider, Turn};
use serde_json::{Value, json};

use crate::run::{Output, base_environment};

const KEY: &str = "sk-test-permissions-4c2d";
const DONE: &str = "Done with the commands.";

fn bash(command: &str) -> Turn {
    Turn::tool("Bash", json!({"command": command, "description": "run it"}))
}

/// One run of a role's command line, as Gatehouse runs it: under `sh -c`, with the role's
/// environment and the fake provider's, in a fresh home.
struct Run<'a> {
    /// The CLI, put first on the `PATH`.
    cli: &'a Path,
    role: &'a Role,
    /// The API the CLI is pointed at, as [`invocation`] takes it; `None` for Claude Code
    /// reaching its model on its own (Anthropic's variables).
    api: Option<ModelApi>,
    tools: Tools,
    /// Variables added last (the shim's, see [`hooked::Hook`]).
    env: Vec<(String, String)>,
}

impl<'a> Run<'a> {
    /// `cli` running `role` on `api`, without tools or more variables.
    fn new(cli: &'a Path, role: &'a Role, api: Option<ModelApi>) -> Self {
        Self {
            cli,
            role,
            api,
            tools: Tools::none(),
            env: Vec::new(),
        }
    }

    /// Runs the command line on `turns` in `work`: its output, `work`, and the fake.
    async fn run(
        self,
        turns: Vec<Turn>,
        work: tempfile::TempDir,
    ) -> (Output, tempfile::TempDir, FakeProvider) {
        assert_eq!(self.role.check(), Ok(()));
        let home = tempfile::tempdir().expect("home");
        let fake = FakeProvider::start(KEY, turns).await;
        fake.answer_side_requests_with_text();
        let prompt = home.path().join("prompt.md");
        std::fs::write(&prompt, "Run the commands.").expect("prompt");
        let line = invocation(
            self.role,
            self.api,
            &self.tools,
            &prompt.display().to_string(),
            None,
        );
        let mut environment = base_environment(home.path());
        let bin = self.cli.parent().expect("bin").display().to_string();
        environment[0].1 = format!("{bin}:{}", environment[0].1);
        environment.extend(self.role.cli_environment());
        let (url, key) = match self.api {
            None | Some(ModelApi::Anthropic) => (
                ("ANTHROPIC_BASE_URL", fake.url().to_owned()),
                "ANTHROPIC_API_KEY",
            ),
            Some(ModelApi::OpenAi) => (
                ("OPENAI_BASE_URL", format!("{}/v1", fake.url())),
                "OPENAI_API_KEY",
            ),
            Some(ModelApi::Gemini) => (
                ("GOOGLE_GEMINI_BASE_URL", fake.url().to_owned()),
                "GEMINI_API_KEY",
            ),
        };
        environment.push((url.0.to_owned(), url.1));
        environment.push((key.to_owned(), KEY.to_owned()));
        environment.extend(self.env);
        let args = ["-c".to_owned(), line];
        let output = run::run(Path::new("/bin/sh"), &args, &environment, work.path()).await;
        (output, work, fake)
    }
}

/// Claude Code running `role` with `tools` on `turns` in `work`.
async fn run_role(
    claude: &Path,
    role: &Role,
    tools: Tools,
    turns: Vec<Turn>,
    work: tempfile::TempDir,
) -> (Output, tempfile::TempDir, FakeProvider) {
    let run = Run {
        tools,
        ..Run::new(claude, role, None)
    };
    run.run(turns, work).await
}

/// The decider MCP server answering `answer`, and the role `args` that give it to Claude
/// Code; its log is `decisions.jsonl` in the returned folder.
fn decider(answer: &str) -> (tempfile::TempDir, Vec<String>) {
    let scripts = tempfile::tempdir().expect("scripts");
    let decider = scripts.path().join("decider.js");
    std::fs::write(&decider, include_str!("agent_permissions/decider.js")).expect("decider");
    let log = scripts.path().join("decisions.jsonl");
    let mcp = json!({"mcpServers": {"decider": {
        "command": "node", "args": [decider], "env": {"DECIDER_LOG": log, "DECIDER_ANSWER": answer},
    }}});
    let args = vec![
        "--mcp-config".to_owned(),
        mcp.to_string(),
        "--strict-mcp-config".to_owned(),
    ];
    (scripts, args)
}

/// What the decider was asked.
fn decisions(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Asserts that the run in `work` made every file of `made` and none of `never`.
fn files(work: &tempfile::TempDir, output: &Output, made: &[&str], never: &[&str]) {
    for name in made {
        let path = work.path().join(name);
        assert!(path.exists(), "{name} was not made: {}", output.describe());
    }
    for name in never {
        let path = work.path().join(name);
        assert!(!path.exists(), "{name} was made: {}", output.describe());
    }
}

fn workdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("work")
}

fn role(permissions: Value, args: Vec<String>) -> Role {
    let permissions: Permissions = serde_json::from_value(permissions).expect("permissions");
    Role {
        permissions: Some(permissions),
        args,
        ..Role::new(Executor::ClaudeCode)
    }
}

/// The tool results Claude Code sent back to the model, by tool use id.
fn tool_results(fake: &FakeProvider) -> Vec<(String, bool, String)> {
    let requests = fake.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    let mut results = Vec::new();
    for message in last.body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                results.push((
                    block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    block["is_error"] == true,
                    block["content"].to_string(),
                ));
            }
        }
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_command_does_not_run_and_an_allowed_one_does() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let role = role(
        json!({
            "allow": ["Bash(touch allowed*)"],
            "deny": ["Bash(touch denied*)"],
            "default": "deny",
        }),
        Vec::new(),
    );
    let turns = vec![
        bash("touch denied.txt"),
        bash("touch allowed.txt"),
        bash("touch unmatched.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_role(&clis.claude, &role, Tools::none(), turns, workdir()).await;
    assert!(output.status.success(), "{}", output.describe());
    files(
        &work,
        &output,
        &["allowed.txt"],
        &["denied.txt", "unmatched.txt"],
    );
    let results = tool_results(&fake);
    let errors: Vec<bool> = results.iter().map(|(_, error, _)| *error).collect();
    assert_eq!(errors, [true, false, true], "{results:#?}");
    let result = output.events().pop().unwrap_or_default();
    assert_eq!(result["result"], DONE, "{}", output.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_tool_decides_what_no_rule_covers() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let (scripts, args) = decider("allow");
    let log = scripts.path().join("decisions.jsonl");
    let role = role(
        json!({"deny": ["Bash(touch denied*)"], "default": "ask"}),
        args,
    );
    let tools = Tools {
        permission_tool: Some("mcp__decider__decide".to_owned()),
        ..Tools::none()
    };
    let turns = vec![
        bash("touch denied.txt"),
        bash("touch asked.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_role(&clis.claude, &role, tools, turns, workdir()).await;
    assert!(output.status.success(), "{}", output.describe());
    files(&work, &output, &["asked.txt"], &["denied.txt"]);
    let asked = decisions(&log);
    assert_eq!(
        asked.len(),
        1,
        "the denied call never reaches the tool: {asked:#?}"
    );
    assert_eq!(asked[0]["tool_name"], "Bash");
    assert_eq!(asked[0]["input"]["command"], "touch asked.txt");
    let errors: Vec<bool> = tool_results(&fake).iter().map(|r| r.1).collect();
    assert_eq!(errors, [true, false]);
}

/// Claude Code reads files in its working directory without asking, even in
/// `dontAsk` mode: under `default = "deny"` Gatehouse denies `Read` outright, so a read no
/// rule allows is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_no_rule_covers_under_default_deny() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let role = role(json!({"default": "deny"}), Vec::new());
    let work = workdir();
    let file = work.path().join("notes.txt");
    std::fs::write(&file, "secret notes").expect("notes");
    let turns = vec![
        Turn::tool("Read", json!({"file_path": file})),
        Turn::text(DONE),
    ];
    let (output, _work, fake) = run_role(&clis.claude, &role, Tools::none(), turns, work).await;
    assert!(output.status.success(), "{}", output.describe());
    let results = tool_results(&fake);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(results[0].1, "the read was allowed: {results:#?}");
    assert!(!results[0].2.contains("secret notes"), "{results:#?}");
}

/// An ask rule wins over `default = "allow"`'s blanket `Bash`: the call goes to the prompt
/// tool, which says no, and it does not run; a call no rule covers runs without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_rule_goes_to_the_prompt_tool_over_the_default_allow() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let (scripts, args) = decider("deny");
    let role = role(json!({"ask": ["Bash(touch asked*)"]}), args);
    let tools = Tools {
        permission_tool: Some("mcp__decider__decide".to_owned()),
        ..Tools::none()
    };
    let turns = vec![
        bash("touch asked.txt"),
        bash("touch free.txt"),
        Turn::text(DONE),
    ];
    let (output, work, fake) = run_role(&clis.claude, &role, tools, turns, workdir()).await;
    assert!(output.status.success(), "{}", output.describe());
    files(&work, &output, &["free.txt"], &["asked.txt"]);
    let asked = decisions(&scripts.path().join("decisions.jsonl"));
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["input"]["command"], "touch asked.txt");
    let results = tool_results(&fake);
    assert_eq!(
        results.iter().map(|r| r.1).collect::<Vec<_>>(),
        [true, false]
    );
    assert!(results[0].2.contains("a person said no"), "{results:#?}");
}
