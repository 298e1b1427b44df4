//! Permission requests decided by a role's rules and by a person.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_store::QuestionStatus;
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn permission_requests_are_decided_by_the_roles_rules_and_a_person() {
    use gatehouse_agent::{Permissions, Rule};
    let bench = Arc::new(Bench::new().await);
    let mut tools = AttemptTools {
        permissions: Some(Permissions {
            ask: vec![Rule::parse("Bash(git push*)").expect("rule")],
            deny: vec![Rule::parse("WebFetch").expect("rule")],
            ..Permissions::default()
        }),
        ..bench.tools(1, Duration::from_secs(30), Vec::new())
    };
    tools.project = Some("api".to_owned());
    let ticket = bench.desk.open(Arc::new(tools));
    let ask = |tool: &str, input: Value| {
        let request = bench
            .http
            .post(bench.url.replace(GATEHOUSE_PATH, "/permission"))
            .bearer_auth(ticket.token())
            .json(&json!({"tool": tool, "input": input}));
        async move {
            let answer = request.send().await.expect("request");
            assert_eq!(answer.status(), 200);
            answer.json::<Value>().await.expect("json")
        }
    };
    let allowed = ask("Bash", json!({"command": "cargo test"})).await;
    assert_eq!(
        (allowed["decision"].as_str(), allowed["by"].as_str()),
        (Some("allow"), Some("policy"))
    );
    let denied = ask("WebFetch", json!({"url": "https://example.com"})).await;
    assert_eq!(denied["decision"], "deny");
    assert!(
        denied["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("`WebFetch`"),
        "{denied}"
    );

    // Claude Code's prompt tool: the same decision, in its own shape.
    let (failed, said) = bench
        .call(
            ticket.token(),
            "permission",
            json!({"tool_name": "WebFetch", "input": {"url": "x"}, "tool_use_id": "t1"}),
        )
        .await;
    assert!(!failed);
    assert_eq!(
        serde_json::from_str::<Value>(&said).expect("json")["behavior"],
        "deny"
    );

    // `ask` waits for a person.
    let push = {
        let request = bench
            .http
            .post(bench.url.replace(GATEHOUSE_PATH, "/permission"))
            .bearer_auth(ticket.token())
            .json(&json!({"tool": "Bash", "input": {"command": "git push --force origin main"}}));
        tokio::spawn(async move { request.send().await.expect("request").json::<Value>().await })
    };
    let question = bench.open_question().await;
    assert_eq!(question.kind, gatehouse_store::QuestionKind::Permission);
    assert_eq!(
        question.question,
        "The agent wants to run `git push --force origin main`"
    );
    bench
        .answer(question.id, QuestionStatus::Approved, "once")
        .await;
    let pushed = push.await.expect("task").expect("json");
    assert_eq!(
        (pushed["decision"].as_str(), pushed["by"].as_str()),
        (Some("allow"), Some("ada"))
    );

    // Malformed asks change nothing.
    let malformed = bench
        .http
        .post(bench.url.replace(GATEHOUSE_PATH, "/permission"))
        .bearer_auth(ticket.token())
        .json(&json!({"tool": ""}))
        .send()
        .await
        .expect("request");
    assert_eq!(malformed.status(), 422);
    let decisions = ticket.take_decisions();
    assert_eq!(decisions.len(), 4, "{decisions:?}");
    assert!(decisions.iter().all(|d| d.tool == "permission"));
    assert!(
        decisions[1].error && decisions[1].summary.starts_with("deny fetch"),
        "{decisions:?}"
    );

    // A hooked CLI asks about every call: a large file's write is decided, not refused.
    let large = "x".repeat(1024 * 1024);
    let written = ask(
        "Write",
        json!({"file_path": "/w/big.txt", "content": large}),
    )
    .await;
    assert_eq!(written["decision"], "allow", "{}", written["reason"]);
}
