//! After the pull request: how soon review feedback becomes work, with the whole of
//! Gatehouse running on Postgres (ingest's webhook endpoint, scheduler, runner, notifier in
//! the process, the fake GitHub on loopback, delivery to a local bare repository).
//!
//! - review → the agent's turn started: from just before a signed
//!   `pull_request_review.submitted` (changes requested, the real payload) is sent, to the
//!   `started_at` the runner stamps on the reworked node's attempt. The review's comments
//!   are read through GitHub's API before the feedback is processed, so the figure
//!   includes that lookup and the delivery waiting for it.
//! - baseline, measured in the same run and interleaved with the reviews: a signed
//!   `issues.labeled` → the first node's attempt of the run it starts (trigger → step on
//!   the same stack, a new issue each time).
//!
//! The SOP's node is a no-op script, so the figures are Gatehouse's own: what the agent
//! then takes is its own business. `cargo bench -p gatehouse-tests --bench pull_feedback`
//! (needs the machine's Postgres). `GATEHOUSE_BENCH_REVIEWS` (default 30) sets how many of
//! each. Figures are printed, and written as JSON to the file `GATEHOUSE_BENCH_JSON` names,
//! when set.

use std::time::Duration;

use chrono::{DateTime, Utc};
use gatehouse_ingest::{Person, Trigger};
use gatehouse_tests::gatehouse::github::fixture;
use gatehouse_tests::latencies::{Latencies, write_figures};
use gatehouse_tests::{Backend, Gatehouse};
use serde_json::json;
use uuid::Uuid;

const SOP: &str = r#"name: loop
nodes:
  implement: { kind: script, run: 'echo "${GATEHOUSE_REWORK_COMMENT:-first}" > WORK.md' }
  deliver:
    kind: deliver
    needs: [implement]
    on_review: { send_back: implement, max: 100000 }
"#;

const PROJECT: &str = r#"
[[projects]]
name = "hello"
repositories = [{ repo = "Codertocat/Hello-World" }]
run = ["ana"]
"#;

/// Waits until `node` of `run` has begun attempt `attempt`; when it began.
async fn began(gh: &Gatehouse, run: Uuid, node: &str, attempt: i32) -> DateTime<Utc> {
    for _ in 0..30_000 {
        let attempts = gh.db.store.attempts(run).await.expect("attempts");
        if let Some(found) = attempts
            .iter()
            .find(|a| a.node == node && a.attempt == attempt)
        {
            return found.started_at;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("{node} of {run} never began attempt {attempt}");
}

#[tokio::main]
async fn main() {
    let reviews: usize = std::env::var("GATEHOUSE_BENCH_REVIEWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let ana = Person {
        id: "ana".into(),
        github: Some("Codertocat".into()),
        slack: None,
        discord: None,
        groups: Vec::new(),
    };
    let trigger =
        Trigger::new("loop", "loop", &["Codertocat/*".into()], false, false).expect("trigger");
    let gh = Gatehouse::builder(Backend::Postgres)
        .sop("loop", SOP)
        .people(vec![ana])
        .projects(PROJECT)
        .github(vec![trigger])
        .start()
        .await;
    gh.github.follow_git(&gh.data.path().join("git"));

    let label = |number: u64| {
        let mut payload = fixture("issues.labeled");
        payload["label"]["name"] = json!("loop");
        payload["issue"]["number"] = json!(number);
        payload["sender"]["login"] = json!("Codertocat");
        payload
    };
    gh.deliver_github("issues", "label-1", &label(1)).await;
    let run = gh.runs(1, "succeeded", 1).await[0].id;
    let pull = gh.github.pulls()[0].number;

    let (mut review_to_turn, mut label_to_step) = (Latencies::new(), Latencies::new());
    for i in 0..reviews {
        // The baseline: a new issue labelled, to its first step.
        let number = 1000 + i as u64;
        let sent = Utc::now();
        gh.deliver_github("issues", &format!("label-{number}"), &label(number))
            .await;
        let started = gh.runs(number, "succeeded", 1).await[0].id;
        label_to_step.between(sent, began(&gh, started, "implement", 1).await);

        // A review asking for changes on the first run's pull request.
        let mut review = fixture("pull_request_review.submitted");
        review["review"]["id"] = json!(90_000 + i);
        review["review"]["state"] = json!("changes_requested");
        review["review"]["body"] = json!(format!("round {i}"));
        review["pull_request"]["number"] = json!(pull);
        let attempt = i32::try_from(i + 2).expect("small");
        let sent = Utc::now();
        gh.deliver_github("pull_request_review", &format!("review-{i}"), &review)
            .await;
        review_to_turn.between(sent, began(&gh, run, "implement", attempt).await);
        gh.node(
            run,
            "deliver",
            "succeeded",
            u32::try_from(attempt).expect("small"),
        )
        .await;
    }
    let ratio = review_to_turn.p50() / label_to_step.p50().max(0.001);
    let figures = json!({
        "review_to_turn_ms": review_to_turn.json(),
        "label_to_step_ms": label_to_step.json(),
        "review_to_turn_vs_label_to_step_p50": (ratio * 100.0).round() / 100.0,
    });
    println!(
        "review → turn started (ms): {}",
        figures["review_to_turn_ms"]
    );
    println!(
        "label → first step (ms), the baseline: {}",
        figures["label_to_step_ms"]
    );
    println!(
        "ratio of p50s: {}",
        figures["review_to_turn_vs_label_to_step_p50"]
    );
    write_figures(&figures);
    gh.stop().await;
}
