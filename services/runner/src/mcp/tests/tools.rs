//! Each tool of Gatehouse's server called for an attempt, and tokens that are not an
//! attempt's refused.

use std::time::Duration;

use serde_json::json;

use super::*;

#[tokio::test]
async fn the_tools_are_listed_and_read_what_the_attempt_knows() {
    let bench = Bench::new().await;
    let ticket = bench.attempt(1, Duration::from_secs(5));
    initialize(&bench, ticket.token()).await;
    let listed = bench
        .rpc(ticket.token(), "tools/list", json!({}))
        .await
        .expect("tools");
    let mut names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "get_inputs",
            "get_requirement",
            "permission",
            "post_progress",
            "publish_artifact",
            "request_approval"
        ]
    );
    let (failed, requirement) = bench
        .call(ticket.token(), "get_requirement", json!({}))
        .await;
    assert!(
        !failed && requirement.contains("Add /health"),
        "{requirement}"
    );
    let (failed, inputs) = bench.call(ticket.token(), "get_inputs", json!({})).await;
    assert!(!failed && inputs.contains("prod"), "{inputs}");
    let (failed, _) = bench
        .call(
            ticket.token(),
            "post_progress",
            json!({"text": "tests pass; opening the PR"}),
        )
        .await;
    assert!(!failed);
    assert_eq!(
        *bench.notes.lock().expect("notes"),
        ["tests pass; opening the PR"]
    );
}

#[tokio::test]
async fn an_artifact_is_published_into_the_attempts_folder_and_bad_ones_are_refused() {
    let bench = Bench::new().await;
    let ticket = bench.attempt(1, Duration::from_secs(5));
    let (failed, said) = bench
        .call(
            ticket.token(),
            "publish_artifact",
            json!({"name": "design.md", "text": "# Design"}),
        )
        .await;
    assert!(!failed, "{said}");
    assert_eq!(
        std::fs::read_to_string(bench.artifacts.join("design.md")).expect("artifact"),
        "# Design"
    );
    let (failed, said) = bench
        .call(
            ticket.token(),
            "publish_artifact",
            json!({"name": "../escape.md", "text": "x"}),
        )
        .await;
    assert!(failed && said.contains("not a plain file name"), "{said}");
    let big = "x".repeat(crate::mcp::tools::MAX_ARTIFACT_BYTES + 1);
    let (failed, said) = bench
        .call(
            ticket.token(),
            "publish_artifact",
            json!({"name": "big.txt", "text": big}),
        )
        .await;
    assert!(failed && said.contains("at most"), "{said}");
    // Malformed arguments are the protocol's error, and change nothing.
    let malformed = bench
        .rpc(
            ticket.token(),
            "tools/call",
            json!({"name": "publish_artifact", "arguments": {"name": 7}}),
        )
        .await;
    assert!(malformed.is_err() || malformed.is_ok_and(|r| r["isError"] == true));
    assert_eq!(std::fs::read_dir(&bench.artifacts).expect("dir").count(), 1);
}

#[tokio::test]
async fn a_request_without_a_live_attempts_token_is_refused() {
    let bench = Bench::new().await;
    let ticket = bench.attempt(1, Duration::from_secs(5));
    let token = ticket.token().to_owned();
    let status = |token: &'static str| {
        let request = bench.http.post(&bench.url).json(&json!({}));
        async move {
            match token {
                "" => request.send().await,
                t => request.bearer_auth(t).send().await,
            }
            .expect("request")
            .status()
        }
    };
    assert_eq!(status("").await, 401);
    assert_eq!(status("gh-tools-forged").await, 401);
    drop(ticket);
    let ended = bench
        .http
        .post(&bench.url)
        .bearer_auth(&token)
        .json(&json!({}))
        .send()
        .await
        .expect("request");
    assert_eq!(ended.status(), 401);
    assert!(
        ended
            .text()
            .await
            .expect("body")
            .contains("only while it runs")
    );
}

#[tokio::test]
async fn a_token_works_until_its_ticket_is_dropped() {
    let bench = Bench::new().await;
    let ticket = bench.attempt(1, Duration::from_secs(1));
    let token = ticket.token().to_owned();
    assert!(token.starts_with(crate::mcp::TOKEN_PREFIX));
    assert!(bench.desk.attempt(&token).is_some());
    let other = bench.attempt(1, Duration::from_secs(1));
    assert_ne!(other.token(), token);
    drop(ticket);
    assert!(bench.desk.attempt(&token).is_none());
    assert!(bench.desk.attempt(other.token()).is_some());
}
