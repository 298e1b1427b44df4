//! MCP servers that are not there or that crash, with the real Claude Code in the agents
//! image (issue 40): a stdio server whose program the image lacks stops the attempt
//! before its CLI starts, naming the server, the program and the image, and no model
//! request is made; a server that starts and then dies (after `initialize`, or on its
//! first tool call) neither hangs nor fails the attempt: the model is told the tool
//! failed, and the trace records the server that failed to start.

use std::collections::BTreeMap;

use gatehouse_agent::McpDefinition;
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_tests::agents_image::{
    AGENTS_IMAGE, CHANNEL, agents_docker_or_skip, conversations, said_in_thread,
};
use gatehouse_tests::gatehouse::chat::ANA;
use serde_json::json;

use super::{REAL_KEY, claude_code};

fn stdio(command: &[&str]) -> McpDefinition {
    McpDefinition::Stdio {
        command: command.iter().map(|w| (*w).to_owned()).collect(),
        env: BTreeMap::new(),
    }
}

/// The role names a server the image has and one it lacks: the turn fails at once saying
/// which, in the thread and in the attempt, and the model is never asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_does_not_start_when_a_stdio_servers_program_is_missing() {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = agents_docker_or_skip(&data.path().display().to_string()).await else {
        return;
    };
    let fake = FakeProvider::start(REAL_KEY, vec![Turn::text("I should not be asked.")]).await;
    let servers = BTreeMap::from([
        ("everything".to_owned(), stdio(&["mcp-server-everything"])),
        ("docs".to_owned(), stdio(&["docs-mcp", "--stdio"])),
    ]);
    let mcp = vec!["everything".to_owned(), "docs".to_owned()];
    let gh = claude_code(data, docker, &fake, mcp, servers).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "Look something up in the docs.")
        .await;
    let said = format!(
        "MCP server `docs` runs `docs-mcp`, which this sandbox (image {AGENTS_IMAGE}) does not \
         have; install it in the image or remove `docs` from the role's or project's mcp"
    );
    said_in_thread(
        &gh,
        &thread,
        &format!("the CLI did not start: {said}"),
        "claude-code",
    )
    .await;
    let detail = conversations(&gh).await.remove(0);
    let attempts = detail["turns"][0]["attempts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!attempts.is_empty(), "{detail:#}");
    for attempt in &attempts {
        assert_eq!(attempt["status"], "failed", "{detail:#}");
        assert_eq!(
            attempt["failure"].as_str(),
            Some(format!("the CLI did not start: {said}").as_str()),
            "{detail:#}"
        );
    }
    assert!(
        fake.requests().is_empty(),
        "no model request was made: {:#?}",
        fake.requests().iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    gh.stop().await;
}

/// A stdio MCP server in a few lines of Python (the agents image has `python3`): it
/// answers `initialize` and lists one tool, `lookup`; with `start` it exits at once, with
/// `init` right after answering `initialize`, with `call` on the first tool call.
const CRASHING_SERVER: &str = r#"
import json, sys
mode = sys.argv[1]
if mode == "start":
    sys.exit("crashing: cannot start")
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "crashing", "version": "1"}}})
        if mode == "init":
            sys.exit(3)
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
            "name": "lookup", "description": "Looks a word up.",
            "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}}}]}})
    elif method == "tools/call":
        sys.exit(3)
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "result": {}})
"#;

/// One server dies as it starts, one right after `initialize`, one on its first call,
/// which the model makes: the turn goes on to its reply, the model hears that the call
/// failed, and the trace holds the failed call and the server that failed to start.
/// (Claude Code reports a server that answered `initialize` as connected, without its
/// tools: the trace has nothing to say about it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_goes_on_when_a_stdio_server_crashes() {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = agents_docker_or_skip(&data.path().display().to_string()).await else {
        return;
    };
    let fake = FakeProvider::start(
        REAL_KEY,
        vec![
            Turn::tool("mcp__oncall__lookup", json!({"word": "gatehouse"})),
            Turn::text("The lookup tool failed, so I answered without it."),
        ],
    )
    .await;
    fake.answer_side_requests_with_text();
    let servers = BTreeMap::from([
        (
            "dead".to_owned(),
            stdio(&["python3", "-c", CRASHING_SERVER, "start"]),
        ),
        (
            "early".to_owned(),
            stdio(&["python3", "-c", CRASHING_SERVER, "init"]),
        ),
        (
            "oncall".to_owned(),
            stdio(&["python3", "-c", CRASHING_SERVER, "call"]),
        ),
    ]);
    let mcp = vec!["dead".to_owned(), "early".to_owned(), "oncall".to_owned()];
    let gh = claude_code(data, docker, &fake, mcp, servers).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "Look up the word gatehouse.")
        .await;
    said_in_thread(
        &gh,
        &thread,
        "The lookup tool failed, so I answered without it.",
        "claude-code",
    )
    .await;
    // The request after the call carries its result: an error.
    let bodies: Vec<serde_json::Value> = fake.requests().into_iter().map(|r| r.body).collect();
    let result = bodies
        .iter()
        .filter_map(|body| body["messages"].as_array())
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|block| block["type"] == "tool_result")
        .cloned();
    let result = result.unwrap_or_else(|| panic!("no tool result reached the model: {bodies:#?}"));
    eprintln!("the model was told: {result}");
    assert_eq!(result["is_error"], true, "{result}");

    let detail = conversations(&gh).await.remove(0);
    let turn = &detail["turns"][0];
    assert_eq!(turn["status"], "replied", "{detail:#}");
    let tools = turn["attempts"][0]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    eprintln!("{tools:#?}");
    assert!(
        tools
            .iter()
            .any(|t| t["tool"] == "mcp__oncall__lookup" && t["failed"] == true),
        "the failed call is in the trace: {detail:#}"
    );
    assert!(
        tools.iter().any(|t| t["tool"] == "mcp_server"
            && t["summary"] == "MCP server dead failed to start"
            && t["failed"] == true),
        "the server that failed to start is in the trace: {detail:#}"
    );
    gh.stop().await;
}
