//! A role's `permissions` through Gatehouse for OpenCode and Kilo in the agents image: the
//! real CLI in a Docker sandbox with no route out, the plugin its command line writes, and
//! the runner's `gatehouse-acp hook` answering it, as
//! [`super::claude_code_asks_before_a_push_and_a_denied_push_never_runs`] does for Claude
//! Code.

use std::collections::BTreeMap;

use gatehouse_agent::{Executor, Permissions, Role, Rule};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_ingest::Scope;
use gatehouse_tests::agents_image::{
    CHANNEL, agents_docker_or_skip, conversations, said_in_thread,
};
use gatehouse_tests::gatehouse::chat::ANA;
use serde_json::json;

use super::{REAL_KEY, card_in, open_question, start, walk_has};

/// A role that must ask before `git push`: `executor`'s push (its `bash` tool) becomes a
/// question, ana denies it, the command never runs, the model reads why, and the
/// decision is in the trace.
async fn asks_before_a_push_and_a_denied_push_never_runs(executor: Executor) {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = agents_docker_or_skip(&data.path().display().to_string()).await else {
        return;
    };
    let push = "touch pushed.txt && git push --force origin main";
    let fake = FakeProvider::start(
        REAL_KEY,
        vec![
            Turn::tool("bash", json!({"command": push, "description": "Push"})),
            Turn::text("I did not push."),
        ],
    )
    .await;
    fake.answer_side_requests_with_text();
    let role = Role {
        provider: Some("model".into()),
        model: Some("claude-sonnet-4-5".into()),
        permissions: Some(Permissions {
            ask: vec![Rule::parse("Bash(git push*)").expect("a rule")],
            ..Permissions::default()
        }),
        ..Role::new(executor)
    };
    let gh = start(data, docker, &fake, role, BTreeMap::new()).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "Push the fix to main.")
        .await;
    let question = open_question(&gh).await;
    assert_eq!(question["kind"], "permission");
    assert_eq!(
        question["question"],
        format!("The agent wants to run `{push}`")
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
    said_in_thread(&gh, &thread, "I did not push.", executor.as_str()).await;
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.body.to_string().contains("never force-push main")),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opencode_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push_and_a_denied_push_never_runs(Executor::Opencode).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kilo_asks_before_a_push_and_a_denied_push_never_runs() {
    asks_before_a_push_and_a_denied_push_never_runs(Executor::Kilo).await;
}
