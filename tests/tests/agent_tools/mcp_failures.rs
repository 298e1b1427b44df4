//! MCP servers that are not there or that crash, with the real Claude Code in the agents
//! image (issue 40): a stdio server whose program the image lacks stops the attempt
//! before its CLI starts, naming the server, the program and the image, and no model
//! request is made.

use std::collections::BTreeMap;

use gatehouse_agent::McpDefinition;
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_tests::agents_image::{
    AGENTS_IMAGE, CHANNEL, agents_docker_or_skip, conversations, said_in_thread,
};
use gatehouse_tests::gatehouse::chat::ANA;

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
