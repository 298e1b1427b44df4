//! An agent's tools beyond its CLI's own, with the real Claude Code in the agents image
//! (`deploy/sandbox/build-images.sh --with-agents`), in a Docker sandbox with no route out,
//! its model reached only through the runner's gateway in front of a fake provider that
//! scripts the tool calls:
//!
//! - Gatehouse's own MCP server: the agent calls `request_approval`, waits, and goes on
//!   with the person's answer and comment (approved, or denied with the reason);
//! - a role's stdio MCP server from the image (`mcp-server-everything`), its tool's
//!   answer reaching the model.
//!
//! Without Docker or the image the tests say so and pass, unless `DOCKER_TESTS=required`.

#[path = "agent_tools/hooked.rs"]
mod hooked;
#[path = "agent_tools/mcp_failures.rs"]
mod mcp_failures;

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_agent::{Executor, McpDefinition, Permissions, Role, Rule};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_ingest::Scope;
use gatehouse_sandbox::DockerSandbox;
use gatehouse_store::QuestionStatus;
use gatehouse_tests::Gatehouse;
use gatehouse_tests::agents_image::{
    CHANNEL, agents_docker_or_skip, assistant_in_agents_image_with, conversations, said_in_thread,
};
use gatehouse_tests::fake_slack::BOT_USER;
use gatehouse_tests::gatehouse::chat::ANA;
use secrecy::SecretString;
use serde_json::{Value, json};

const REAL_KEY: &str = "sk-test-agent-tools-provider-key-51c4";
const QUESTION: &str = "May I drop the legacy_users table?";

/// ana approves from the question's card in the conversation's Slack thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_asks_a_person_and_goes_on_when_approved_in_slack() {
    asks_a_person(Answer::SlackApprove, "approved by ana").await;
}

/// ana denies through the API, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_hears_why_a_person_said_no() {
    asks_a_person(
        Answer::ApiDeny("not before the v4 migration"),
        "denied by ana: not before the v4 migration",
    )
    .await;
}

/// How ana answers.
enum Answer {
    /// The Approve button of the card in the thread.
    SlackApprove,
    /// `POST /questions/{id}/answer`, denying with the reason.
    ApiDeny(&'static str),
}

/// ana asks the assistant for something risky; its agent asks her through Gatehouse;
/// she answers as `answer` says; the agent's next model request carries `told` as the
/// tool's result, and its answer reaches the thread.
async fn asks_a_person(answer: Answer, told: &str) {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = agents_docker_or_skip(&data.path().display().to_string()).await else {
        return;
    };
    let fake = FakeProvider::start(
        REAL_KEY,
        vec![
            Turn::tool(
                "mcp__gatehouse__request_approval",
                json!({"question": QUESTION, "evidence": "nothing has read it since v3"}),
            ),
            Turn::text("Done, as you answered."),
        ],
    )
    .await;
    fake.answer_side_requests_with_text();
    let gh = claude_code(data, docker, &fake, Vec::new(), BTreeMap::new()).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "Drop the legacy_users table.")
        .await;

    let question = open_question(&gh).await;
    assert_eq!(question["question"], QUESTION);
    assert_eq!(question["evidence"], "nothing has read it since v3");
    assert!(question["conversation_id"].is_string(), "{question}");
    let id = question["id"].as_str().expect("an id");
    let approved = matches!(answer, Answer::SlackApprove);
    match answer {
        Answer::SlackApprove => {
            let card = card_in(&gh, &thread, "The agent asks").await;
            gh.slack_click(ANA, CHANNEL, &format!("gq:approve:{id}"))
                .await;
            assert!(card.contains(QUESTION), "{card}");
        }
        Answer::ApiDeny(reason) => {
            let token = gh.stored_token("ana", &Scope::ALL, None).await;
            gh.api_as(&token)
                .post(
                    &format!("/questions/{id}/answer"),
                    json!({"answer": "deny", "comment": reason}),
                )
                .await
                .is(202);
        }
    }

    said_in_thread(&gh, &thread, "Done, as you answered.", "claude-code").await;
    let answered = fake
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains(told))
        .map(|r| r.body);
    assert!(
        answered.is_some(),
        "the agent was told {told:?}: {:#?}",
        fake.requests().iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    let detail = conversations(&gh).await.remove(0);
    let tools = detail["turns"][0]["attempts"][0]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        tools
            .iter()
            .any(|t| t["tool"] == "mcp__gatehouse__request_approval"),
        "the trace holds the question: {detail:#}"
    );
    let stored = gh.db.store.open_questions(10).await.expect("questions");
    assert!(stored.is_empty(), "nothing is left waiting: {stored:?}");
    let all = gh
        .db
        .store
        .conversation_questions(
            detail["id"]
                .as_str()
                .and_then(|id| id.parse().ok())
                .expect("the conversation's id"),
        )
        .await
        .expect("questions");
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].status,
        if approved {
            QuestionStatus::Approved
        } else {
            QuestionStatus::Denied
        }
    );
    gh.stop().await;
}

/// A role that must ask before `git push`: the real Claude Code's push becomes a question
/// (a card in the thread), ana denies it, and the command never runs; the decision is in
/// the trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push(Push {
        executor: Executor::ClaudeCode,
        model: "claude-sonnet-4-5",
        kind: ProviderKind::Anthropic,
        call: Turn::tool("Bash", json!({"command": PUSH, "description": "Push"})),
        blocked: None,
    })
    .await;
}

/// The command the model asks to run: it would leave `pushed.txt` behind had it run.
const PUSH: &str = "touch pushed.txt && git push --force origin main";

/// One CLI's push, for [`asks_before_a_push`].
struct Push {
    executor: Executor,
    /// The role's model, one the CLI knows.
    model: &'static str,
    /// The API the CLI speaks to the fake provider.
    kind: ProviderKind,
    /// The model's tool call running [`PUSH`], in the CLI's own terms.
    call: Turn,
    /// The CLI's own words around the reason when its hook denies, which the model must
    /// read too; `None` when only the reason is checked.
    blocked: Option<&'static str>,
}

/// A role that must ask before `git push`: the CLI's push (`case.call`) becomes a
/// permission question (a card in the thread), ana denies it through the API, and the
/// command never runs; the model reads why, and the decision is in the trace.
async fn asks_before_a_push(case: Push) {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = agents_docker_or_skip(&data.path().display().to_string()).await else {
        return;
    };
    let fake = FakeProvider::start(REAL_KEY, vec![case.call, Turn::text("I did not push.")]).await;
    fake.answer_side_requests_with_text();
    let role = Role {
        provider: Some("model".into()),
        model: Some(case.model.into()),
        permissions: Some(Permissions {
            ask: vec![Rule::parse("Bash(git push*)").expect("a rule")],
            ..Permissions::default()
        }),
        ..Role::new(case.executor)
    };
    let gh = start(data, docker, &fake, role, case.kind, BTreeMap::new()).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "Push the fix to main.")
        .await;
    let question = open_question(&gh).await;
    assert_eq!(question["kind"], "permission");
    assert_eq!(
        question["question"],
        format!("The agent wants to run `{PUSH}`")
    );
    let card = card_in(&gh, &thread, "The agent wants to run a tool").await;
    assert!(
        card.contains("Allow once") && card.contains("git push --force"),
        "{card}"
    );
    let token = gh.stored_token("ana", &Scope::ALL, None).await;
    let id = question["id"].as_str().expect("an id");
    gh.api_as(&token)
        .post(
            &format!("/questions/{id}/answer"),
            json!({"answer": "deny", "comment": "never force-push main"}),
        )
        .await
        .is(202);
    said_in_thread(&gh, &thread, "I did not push.", case.executor.as_str()).await;
    assert!(
        fake.requests().iter().any(|r| {
            let body = r.body.to_string();
            body.contains("never force-push main")
                && case.blocked.is_none_or(|words| body.contains(words))
        }),
        "the agent was told why: {:#?}",
        fake.requests().iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    assert!(
        !walk_has(gh.data.path(), "pushed.txt"),
        "the denied command never ran"
    );
    let detail = conversations(&gh).await.remove(0);
    let tools = detail["turns"][0]["attempts"][0]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["tool"] == "permission"
            && t["summary"]
                .as_str()
                .is_some_and(|s| s.starts_with("deny run"))),
        "the decision is in the trace: {detail:#}"
    );
    gh.stop().await;
}

/// A role's stdio MCP server, run by Claude Code inside the sandbox (which has no route
/// out): its tool's answer reaches the model, and the call is in the trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_uses_a_roles_stdio_mcp_server_in_the_sandbox() {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = agents_docker_or_skip(&data.path().display().to_string()).await else {
        return;
    };
    let fake = FakeProvider::start(
        REAL_KEY,
        vec![
            Turn::tool(
                "mcp__everything__echo",
                json!({"message": "hello from the sandbox"}),
            ),
            Turn::text("The server echoed."),
        ],
    )
    .await;
    fake.answer_side_requests_with_text();
    let servers = BTreeMap::from([(
        "everything".to_owned(),
        McpDefinition::Stdio {
            command: vec!["mcp-server-everything".to_owned()],
            env: BTreeMap::new(),
        },
    )]);
    let gh = claude_code(data, docker, &fake, vec!["everything".to_owned()], servers).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "Echo something.")
        .await;
    said_in_thread(&gh, &thread, "The server echoed.", "claude-code").await;
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.body.to_string().contains("Echo: hello from the sandbox")),
        "the server's answer reached the model: {:#?}",
        fake.requests().iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    let detail = conversations(&gh).await.remove(0);
    let tools = detail["turns"][0]["attempts"][0]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["tool"] == "mcp__everything__echo"),
        "the trace holds the MCP call: {detail:#}"
    );
    gh.stop().await;
}

/// Gatehouse whose assistant is Claude Code on the fake provider, with the role's MCP
/// servers `mcp` out of `servers`.
async fn claude_code(
    data: tempfile::TempDir,
    docker: DockerSandbox,
    fake: &FakeProvider,
    mcp: Vec<String>,
    servers: BTreeMap<String, McpDefinition>,
) -> Gatehouse {
    let role = claude_code_role(mcp);
    start(data, docker, fake, role, ProviderKind::Anthropic, servers).await
}

/// The assistant's role: Claude Code on the fake provider, with MCP servers `mcp`.
fn claude_code_role(mcp: Vec<String>) -> Role {
    Role {
        provider: Some("model".into()),
        model: Some("claude-sonnet-4-5".into()),
        mcp,
        ..Role::new(Executor::ClaudeCode)
    }
}

/// Gatehouse whose assistant is `role`, on the fake provider speaking `kind`, with
/// `[mcp]` `servers`.
async fn start(
    data: tempfile::TempDir,
    docker: DockerSandbox,
    fake: &FakeProvider,
    role: Role,
    kind: ProviderKind,
    servers: BTreeMap<String, McpDefinition>,
) -> Gatehouse {
    let provider = Provider {
        name: "model".into(),
        kind,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: SecretString::from(REAL_KEY),
    };
    assistant_in_agents_image_with(data, docker, role, provider, move |options| {
        options.mcp.servers = servers;
    })
    .await
}

/// The one open question, once the agent asked it (up to three minutes: the CLI starts
/// in a fresh container).
async fn open_question(gh: &Gatehouse) -> Value {
    let token = gh.stored_token("ana", &Scope::ALL, None).await;
    for _ in 0..1800 {
        let open = gh.api_as(&token).get("/questions").await.is(200);
        if let Some(question) = open.as_array().and_then(|a| a.first()) {
            return question.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let detail = conversations(gh).await;
    panic!("the agent never asked: {detail:#?}");
}

/// The card in `thread` whose text starts with `title` (a question's "The agent asks", a
/// permission's "The agent wants to run a tool"), once the notifier posted it: its blocks
/// as text.
async fn card_in(gh: &Gatehouse, thread: &str, title: &str) -> String {
    for _ in 0..600 {
        if let Some(card) = gh.slack.messages(CHANNEL).into_iter().find(|m| {
            m.user == BOT_USER
                && m.thread_ts.as_deref() == Some(thread)
                && m.text.starts_with(title)
        }) {
            return card.blocks.to_string();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no card {title:?} in the thread");
}

/// Whether a file named `name` is anywhere under `dir`.
fn walk_has(dir: &std::path::Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            let path = entry.path();
            path.file_name().is_some_and(|n| n == name)
                || (entry.file_type().is_ok_and(|t| t.is_dir()) && walk_has(&path, name))
        })
}
