//! Every executor with its real CLI, installed from its registry into the agents image
//! (`deploy/sandbox/build-images.sh --with-agents`): a conversation of two turns in a
//! Docker sandbox without a network, the CLI's model reached only through the runner's
//! gateway, in front of a fake provider speaking the API the CLI speaks.
//!
//! Turn one: the fake scripts a call of the CLI's own tool that writes `hello.txt`, then
//! an answer. Turn two: an answer. Each case asserts that the file is in the workspace,
//! the tool call is in the turn's trace, the gateway metered the turn's usage, and turn two
//! continued turn one's session: its request to the model carries turn one's prompt.
//!
//! Turn one also calls a tool of the role's stdio MCP server (`mcp-server-everything` in
//! the image, its `echo`), by whatever name the CLI offers it to the model: the echo must
//! reach the model and the call the trace — for every CLI that takes MCP servers (not pi
//! or aider, and not goose, which runs with only the servers a session names).
//!
//! The role has a skill too: each CLI must show its model the skill's description, read
//! from where Gatehouse copied it (`Cli::skills_homes`) or from the system text listing it
//! for a CLI that reads no skills — the check that those folders are where each pinned
//! CLI really looks.
//!
//! Without Docker or the image the tests say so and pass, unless `DOCKER_TESTS=required`
//! (CI, `.ci/run`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gatehouse_agent::{Executor, McpDefinition, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_tests::Gatehouse;
use gatehouse_tests::agents_image::{
    CHANNEL, OPENCODE_CONFIG, agents_docker_or_skip, assistant_in_agents_image_with, conversations,
    said_in_thread,
};
use gatehouse_tests::gatehouse::chat::ANA;
use secrecy::SecretString;
use serde_json::{Value, json};

/// The provider's key: held by the runner's gateway, seen by no CLI.
const REAL_KEY: &str = "sk-test-executors-provider-key-8d21";
const CONTENT: &str = "hello from the fake provider";
const ANSWER: &str = "I created hello.txt.";

const FIRST_PROMPT: &str = "Create hello.txt with a greeting.";
const SECOND_PROMPT: &str = "Now say that you are done.";
const SECOND_ANSWER: &str = "All done here.";

/// What turn one asks the role's MCP server to echo.
const ECHOED: &str = "MCP-ECHO-7c1";

/// The role's skill; its description is what a CLI lists to its model.
const SKILL: &str = "house-style";
const SKILL_DESCRIPTION: &str = "Follow the house style HOUSE-STYLE-SKILL-7f3 when writing files.";

/// One executor's part.
struct Case {
    executor: Executor,
    /// Executor `acp`: the agent's argv.
    command: &'static [&'static str],
    /// Extra arguments (executor `acp`: the shim's options).
    args: &'static [&'static str],
    /// Variables the CLI needs in the image, as a role would set them.
    env: &'static [(&'static str, &'static str)],
    kind: ProviderKind,
    model: &'static str,
    /// The call of the CLI's own tool that writes `hello.txt` with [`CONTENT`].
    write: Turn,
    /// The tool as the trace names it.
    traced_as: &'static str,
    /// Answers by the prompt they answer ([`FakeProvider::answer_when`]), before the
    /// script's.
    rules: Vec<(&'static str, Turn)>,
    /// Whether turn one calls the role's MCP server's `echo`.
    mcp: bool,
    /// The `echo` tool's name, for a CLI that does not list MCP tools in its requests
    /// (Claude Code defers them to a tool search); else the one offered.
    echo: Option<&'static str>,
}

impl Case {
    fn new(executor: Executor, kind: ProviderKind, model: &'static str) -> Self {
        Self {
            executor,
            command: &[],
            args: &[],
            env: &[],
            kind,
            model,
            write: Turn::text("unset"),
            traced_as: "",
            rules: Vec::new(),
            mcp: executor.takes_mcp(),
            echo: None,
        }
    }

    fn writes_with(mut self, tool: &str, input: Value, traced_as: &'static str) -> Self {
        self.write = Turn::tool(tool, input);
        self.traced_as = traced_as;
        self
    }
}

/// A shell command writing the file, for CLIs whose model writes through a shell tool.
fn shell_write() -> String {
    format!("printf '{CONTENT}' > hello.txt")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_converses_in_the_agents_image() {
    let mut case = Case::new(
        Executor::ClaudeCode,
        ProviderKind::Anthropic,
        "claude-sonnet-4-5",
    )
    .writes_with(
        "Bash",
        json!({"command": shell_write(), "description": "Write hello.txt"}),
        "Bash",
    );
    case.echo = Some("mcp__everything__echo");
    converse(case).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn codex_converses_in_the_agents_image() {
    let mut case = Case::new(Executor::Codex, ProviderKind::OpenAi, "gpt-5-codex").writes_with(
        "exec_command",
        json!({"cmd": shell_write()}),
        "command_execution",
    );
    // Codex offers MCP tools only through its `tool_search`, whose answer the fake cannot
    // script; its MCP calls' trace is read from real output in the agent crate's tests.
    case.mcp = false;
    converse(case).await;
}

/// The file as the sandbox's workdir holds it, for tools that take absolute paths.
const HELLO_PATH: &str = "/workspace/hello.txt";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gemini_converses_in_the_agents_image() {
    let case = Case::new(Executor::Gemini, ProviderKind::Gemini, "gemini-2.5-pro").writes_with(
        "write_file",
        json!({"file_path": HELLO_PATH, "content": CONTENT}),
        "write_file",
    );
    converse(case).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copilot_converses_in_the_agents_image() {
    let case = Case::new(Executor::Copilot, ProviderKind::OpenAi, "gpt-5").writes_with(
        "create",
        json!({"path": HELLO_PATH, "file_text": CONTENT}),
        "create",
    );
    converse(case).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opencode_converses_in_the_agents_image() {
    let case = Case::new(
        Executor::Opencode,
        ProviderKind::Anthropic,
        "claude-sonnet-4-5",
    )
    .writes_with(
        "write",
        json!({"filePath": HELLO_PATH, "content": CONTENT}),
        "write",
    );
    converse(case).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pi_converses_in_the_agents_image() {
    let case = Case::new(Executor::Pi, ProviderKind::Anthropic, "claude-sonnet-4-5").writes_with(
        "write",
        json!({"path": HELLO_PATH, "content": CONTENT}),
        "write",
    );
    converse(case).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kilo_converses_in_the_agents_image() {
    let case = Case::new(Executor::Kilo, ProviderKind::Anthropic, "claude-sonnet-4-5").writes_with(
        "write",
        json!({"filePath": HELLO_PATH, "content": CONTENT}),
        "write",
    );
    converse(case).await;
}

/// OpenCode's ACP mode: its provider reads the gateway's variables (`{env:…}`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opencode_over_acp_converses_in_the_agents_image() {
    let mut case = Case::new(Executor::Acp, ProviderKind::Anthropic, "claude-sonnet-4-5")
        .writes_with(
            "write",
            json!({"filePath": HELLO_PATH, "content": CONTENT}),
            "edit",
        );
    case.command = &["opencode", "acp", "--pure"];
    case.env = &[
        ("OPENCODE_CONFIG_CONTENT", OPENCODE_CONFIG),
        ("OPENCODE_DISABLE_AUTOUPDATE", "true"),
        ("OPENCODE_DISABLE_MODELS_FETCH", "true"),
    ];
    converse(case).await;
}

/// Claude Code through Zed's ACP adapter, its permission prompts off by the shim's mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_agent_acp_converses_in_the_agents_image() {
    let mut case = Case::new(Executor::Acp, ProviderKind::Anthropic, "claude-sonnet-4-5")
        .writes_with(
            "Write",
            json!({"file_path": HELLO_PATH, "content": CONTENT}),
            "edit",
        );
    case.command = &["claude-agent-acp"];
    case.args = &["--mode", "bypassPermissions"];
    case.env = &[
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
    ];
    converse(case).await;
}

/// goose's ACP mode. goose reads its Anthropic address from `ANTHROPIC_HOST`, so the
/// agent's argv sets it from the gateway's variable; goose names no tool kinds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn goose_over_acp_converses_in_the_agents_image() {
    let mut case = Case::new(Executor::Acp, ProviderKind::Anthropic, "claude-sonnet-4-5")
        .writes_with(
            "write",
            json!({"path": HELLO_PATH, "content": CONTENT}),
            "other",
        );
    case.command = &[
        "sh",
        "-c",
        "ANTHROPIC_HOST=\"$ANTHROPIC_BASE_URL\" exec goose acp",
    ];
    case.env = &[
        ("GOOSE_PROVIDER", "anthropic"),
        ("GOOSE_MODEL", "claude-sonnet-4-5"),
        ("GOOSE_MODE", "auto"),
        ("GOOSE_DISABLE_KEYRING", "1"),
        ("GOOSE_TELEMETRY_OFF", "1"),
    ];
    case.mcp = false;
    converse(case).await;
}

/// Codex through Zed's ACP adapter, given the provider Codex's own executor defines (Codex
/// expands no variables in its settings, so the shell does).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn codex_acp_converses_in_the_agents_image() {
    let mut case = Case::new(Executor::Acp, ProviderKind::OpenAi, "gpt-5-codex").writes_with(
        "exec_command",
        json!({"cmd": shell_write()}),
        "execute",
    );
    case.command = &[
        "sh",
        "-c",
        "exec codex-acp -c model_provider=gatehouse -c model_providers.gatehouse.name=Gatehouse \
         -c \"model_providers.gatehouse.base_url=$OPENAI_BASE_URL\" \
         -c model_providers.gatehouse.wire_api=responses \
         -c model_providers.gatehouse.env_key=OPENAI_API_KEY -c model=gpt-5-codex \
         -c sandbox_mode=danger-full-access -c approval_policy=never \
         -c analytics.enabled=false -c check_for_update_on_startup=false",
    ];
    // Codex offers MCP tools only through its `tool_search`, whose answer the fake cannot
    // script; its MCP calls' trace is read from real output in the agent crate's tests.
    case.mcp = false;
    converse(case).await;
}

/// aider calls no tools: its model answers with the whole file, which aider writes (the
/// whole-file format is aider's choice for a model it does not know).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn aider_converses_in_the_agents_image() {
    let mut case = Case::new(Executor::Aider, ProviderKind::OpenAi, "house-model");
    case.traced_as = "edit";
    // aider's requests hold example exchanges of its edit format, which the fake would
    // count as turns: its answers are chosen by the prompt instead.
    case.rules = vec![
        (
            FIRST_PROMPT,
            Turn::text(format!("{ANSWER}\n\nhello.txt\n```\n{CONTENT}\n```\n")),
        ),
        (SECOND_PROMPT, Turn::text(SECOND_ANSWER)),
    ];
    converse(case).await;
}

/// Two turns of `case`'s CLI in a conversation, checked as the module says.
async fn converse(case: Case) {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = agents_docker_or_skip(&data.path().display().to_string()).await else {
        return;
    };
    let name = case.executor.as_str();
    let mut script = vec![case.write.clone()];
    if case.mcp {
        let input = json!({"message": ECHOED});
        script.push(match case.echo {
            Some(name) => Turn::tool(name, input),
            None => Turn::offered_tool("echo", input),
        });
    }
    script.extend([Turn::text(ANSWER), Turn::text(SECOND_ANSWER)]);
    let fake = FakeProvider::start(REAL_KEY, script).await;
    fake.answer_side_requests_with_text();
    for (needle, turn) in &case.rules {
        fake.answer_when(needle, turn.clone());
    }
    let role = Role {
        provider: Some("model".into()),
        model: Some(case.model.into()),
        command: case.command.iter().map(|s| (*s).to_owned()).collect(),
        args: case.args.iter().map(|s| (*s).to_owned()).collect(),
        env: case
            .env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        skills: vec![SKILL.to_owned()],
        mcp: if case.mcp {
            vec!["everything".to_owned()]
        } else {
            Vec::new()
        },
        ..Role::new(case.executor)
    };
    let skill = data.path().join("skills").join(SKILL);
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: {SKILL}\ndescription: {SKILL_DESCRIPTION}\n---\n\nWrite a greeting.\n"),
    )
    .unwrap();
    let source = gatehouse_agent::SkillSource::Path {
        path: skill.display().to_string(),
    };
    let provider = Provider {
        name: "model".into(),
        kind: case.kind,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: SecretString::from(REAL_KEY),
    };
    let gh = assistant_in_agents_image_with(data, docker, role, provider, move |options| {
        options.skills = BTreeMap::from([(SKILL.to_owned(), source)]);
        options.mcp.servers = BTreeMap::from([(
            "everything".to_owned(),
            McpDefinition::Stdio {
                command: vec!["mcp-server-everything".to_owned()],
                env: BTreeMap::new(),
            },
        )]);
    })
    .await;

    let thread = gh.slack_mention("Ev1", CHANNEL, ANA, FIRST_PROMPT).await;
    said_in_thread(&gh, &thread, ANSWER, name).await;
    let detail = conversation(&gh).await;
    let workspace = find_workspace(gh.data.path()).expect("the conversation's workspace");
    assert_eq!(
        std::fs::read_to_string(workspace.join("hello.txt"))
            .ok()
            .as_deref()
            .map(str::trim_end),
        Some(CONTENT),
        "{name}: hello.txt in the workspace; {detail:#}"
    );
    let first = &detail["turns"][0]["attempts"][0];
    let tools = first["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["tool"] == case.traced_as),
        "{name}: the trace holds its {} call: {detail:#}",
        case.traced_as
    );
    assert!(
        first["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0,
        "{name}: the gateway metered turn one: {detail:#}"
    );
    if case.mcp {
        assert!(
            fake.requests()
                .iter()
                .any(|r| r.body.to_string().contains(&format!("Echo: {ECHOED}"))),
            "{name}: the MCP server's echo reached the model: {detail:#}"
        );
        assert!(
            tools
                .iter()
                .any(|t| t.to_string().contains("echo") && t["failed"] == false),
            "{name}: the trace holds the MCP call, not failed: {detail:#}"
        );
    }
    let session = detail["session_id"].as_str().map(str::to_owned);
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.body.to_string().contains("HOUSE-STYLE-SKILL-7f3")),
        "{name}: no request to the model lists the role's skill {SKILL:?}"
    );

    gh.slack_mention_in("Ev2", CHANNEL, Some(&thread), ANA, SECOND_PROMPT)
        .await;
    said_in_thread(&gh, &thread, SECOND_ANSWER, name).await;
    let detail = conversation(&gh).await;
    let second = &detail["turns"][1]["attempts"][0];
    assert!(
        second["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0,
        "{name}: the gateway metered turn two: {detail:#}"
    );
    // Turn two's request to the model holds turn one's prompt: the session went on.
    let requests = fake.requests();
    let last = requests
        .iter()
        .rev()
        .find(|r| r.body.to_string().contains(SECOND_PROMPT))
        .unwrap_or_else(|| panic!("{name}: no request carried turn two's prompt"));
    assert!(
        last.body.to_string().contains(FIRST_PROMPT),
        "{name}: turn two did not continue turn one's session (session {session:?}): {}",
        last.body
    );
    assert!(
        requests
            .iter()
            .all(|r| r.status == 200 || r.path.contains("models")),
        "{name}: every model request got through: {:?}",
        requests
            .iter()
            .map(|r| (&r.path, r.status))
            .collect::<Vec<_>>()
    );
    gh.stop().await;
}

/// The one conversation, in detail, as ana sees it through the API.
async fn conversation(gh: &Gatehouse) -> Value {
    conversations(gh).await.remove(0)
}

/// The workspace of the one conversation under the data directory.
fn find_workspace(data: &Path) -> Option<PathBuf> {
    let mut stack = vec![data.to_owned()];
    while let Some(dir) = stack.pop() {
        // A directory may go while it is walked (the runner's spare checkouts are made
        // beside its mirrors in the background): skip it, do not give up.
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.file_name().is_some_and(|n| n == "workspace")
                && path
                    .parent()
                    .and_then(Path::parent)
                    .is_some_and(|p| p.ends_with("conversations"))
            {
                return Some(path);
            }
            stack.push(path);
        }
    }
    None
}
