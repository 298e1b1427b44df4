//! The scheduler and the runner together, over the in-process bus, with real processes:
//! platform-check from request to success, rework, cancel and timeout.

use std::time::Duration;

use gatehouse_events::{GateDecisionKind, RunCommandKind};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};

on_both_backends!(
    platform_check_approved,
    platform_check_sent_back_then_approved,
    cancel_stops_a_running_script,
    timeout_fails_the_node,
    an_attempt_cut_off_by_a_crash_becomes_a_new_attempt,
    a_child_run_hands_its_declared_artifacts_to_the_parent,
    a_changed_sop_file_leaves_running_runs_on_their_version,
    a_run_is_shown_as_requested_until_the_scheduler_creates_it,
);

async fn platform_check_approved(backend: Backend) {
    let stack = Gatehouse::builder(backend).sops(&[]).start().await;
    let run = stack.request("platform-check").await;
    stack.wait_run(run, "waiting").await;
    stack
        .decide(run, "confirm", 1, GateDecisionKind::Approve, None)
        .await;
    stack.wait_run(run, "succeeded").await;

    assert!(
        stack
            .artifact(run, "report", 1, "welcome.md")
            .starts_with("# Welcome to Gatehouse")
    );
    let completed = stack.artifact(run, "finish", 1, "completed.md");
    assert!(completed.contains("The report was approved"), "{completed}");
    assert!(
        completed.contains("# Welcome to Gatehouse"),
        "finish read its input: {completed}"
    );
    let artifacts = stack.db.store.artifacts(run).await.unwrap();
    let names: Vec<_> = artifacts
        .iter()
        .map(|a| (a.node.as_str(), a.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [("finish", "completed.md"), ("report", "welcome.md")]
    );
    assert!(artifacts.iter().all(|a| a.sha256.len() == 64 && a.size > 0));
    let attempts = stack.db.store.attempts(run).await.unwrap();
    assert!(
        attempts
            .iter()
            .all(|a| a.status == "succeeded" && a.exit_code == Some(0)),
        "{attempts:?}"
    );
    let audit = stack.db.store.decisions(run).await.unwrap();
    assert_eq!(
        (audit[0].person.as_str(), audit[0].outcome.as_str()),
        ("ana", "applied")
    );
    stack.stop().await;
}

async fn platform_check_sent_back_then_approved(backend: Backend) {
    let stack = Gatehouse::builder(backend).sops(&[]).start().await;
    let run = stack.request("platform-check").await;
    stack.wait_run(run, "waiting").await;
    stack
        .decide(
            run,
            "confirm",
            1,
            GateDecisionKind::SendBack {
                to: "report".into(),
            },
            Some("mention the error budget"),
        )
        .await;
    let state = stack
        .wait(run, "the second gate", |row, s| {
            row.status == "waiting" && s["nodes"]["confirm"]["attempt"] == 2
        })
        .await;
    assert_eq!(state["nodes"]["report"]["attempt"], 2);
    assert_eq!(state["nodes"]["report"]["rework_count"], 1);
    let welcome = stack.artifact(run, "report", 2, "welcome.md");
    assert!(
        welcome.contains("Reworked after review: mention the error budget"),
        "{welcome}"
    );

    // A decision for the first attempt is refused and audited, and changes nothing.
    stack
        .decide(run, "confirm", 1, GateDecisionKind::Approve, None)
        .await;
    stack
        .decide(run, "confirm", 2, GateDecisionKind::Approve, None)
        .await;
    stack.wait_run(run, "succeeded").await;
    let audit = stack.db.store.decisions(run).await.unwrap();
    let outcomes: Vec<_> = audit.iter().map(|d| d.outcome.as_str()).collect();
    assert_eq!(outcomes[0], "applied");
    assert!(
        outcomes[1].starts_with("refused: this decision is for attempt 1"),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[2], "applied");
    stack.stop().await;
}

const SLOW: &str = "name: slow\nnodes:\n  wait:\n    kind: script\n    run: echo $$ > \"$GATEHOUSE_WORKSPACE/pid\"; sleep 60\n";

async fn cancel_stops_a_running_script(backend: Backend) {
    let stack = Gatehouse::builder(backend)
        .sops(&[("slow", SLOW)])
        .start()
        .await;
    let run = stack.request("slow").await;
    stack
        .wait(run, "the script to run", |_, s| {
            s["nodes"]["wait"]["status"] == "running"
        })
        .await;
    let pid_file = stack.data.path().join(format!("runs/{run}/workspace/pid"));
    let pid = tokio::task::spawn_blocking(move || gatehouse_tests::script_pid(&pid_file))
        .await
        .unwrap();
    stack.command(run, RunCommandKind::Cancel).await;
    stack.wait_run(run, "cancelled").await;
    for _ in 0..250 {
        let attempts = stack.db.store.attempts(run).await.unwrap();
        if attempts.first().is_some_and(|a| a.status == "cancelled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        stack.db.store.attempts(run).await.unwrap()[0].status,
        "cancelled"
    );
    assert!(
        gatehouse_tests::process_gone(&pid),
        "the script survived its run"
    );
    stack.stop().await;
}

async fn timeout_fails_the_node(backend: Backend) {
    let sop = "name: late\nnodes:\n  nap:\n    kind: script\n    run: sleep 30\n    timeout: 1s\n";
    let stack = Gatehouse::builder(backend)
        .sops(&[("late", sop)])
        .start()
        .await;
    let run = stack.request("late").await;
    let state = stack.wait_run(run, "failed").await;
    assert_eq!(state["failure"], "node `nap` failed: timed out");
    assert_eq!(
        stack.db.store.attempts(run).await.unwrap()[0].status,
        "timed_out"
    );
    stack.stop().await;
}

const SECOND_TIME_LUCKY: &str = "\
name: lucky
nodes:
  work:
    kind: script
    run: 'if [ \"$GATEHOUSE_ATTEMPT\" = 1 ]; then sleep 60; fi; echo done > \"$GATEHOUSE_ARTIFACTS/out\"'
    artifacts: [out]
    retry: { max: 1, backoff: 1s }
";

async fn an_attempt_cut_off_by_a_crash_becomes_a_new_attempt(backend: Backend) {
    let stack = Gatehouse::builder(backend)
        .sops(&[("lucky", SECOND_TIME_LUCKY)])
        .start()
        .await;
    let run = stack.request("lucky").await;
    stack
        .wait(run, "attempt 1 to run", |_, s| {
            s["nodes"]["work"]["status"] == "running"
        })
        .await;
    // Everything stops mid-attempt; the job's lease is still held.
    let (db, data) = stack.halt().await;
    let stack = Gatehouse::builder_on(db, data)
        .sops(&[("lucky", SECOND_TIME_LUCKY)])
        .start()
        .await;
    let state = stack.wait_run(run, "succeeded").await;
    assert_eq!(state["nodes"]["work"]["attempt"], 2);
    let attempts = stack.db.store.attempts(run).await.unwrap();
    let statuses: Vec<_> = attempts
        .iter()
        .map(|a| (a.attempt, a.status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [(1, "interrupted"), (2, "succeeded")],
        "attempt 1 was never run twice"
    );
    assert_eq!(
        state["nodes"]["work"]["last_error"],
        serde_json::Value::Null
    );
    stack.stop().await;
}

const CHILD: &str = "name: child\nnodes:\n  make:\n    kind: script\n    run: echo from-the-child > \"$GATEHOUSE_ARTIFACTS/out.txt\"\n    artifacts: [out.txt]\n";
const PARENT: &str = "\
name: parent
nodes:
  sub: { kind: sop, sop: child, import: [make/out.txt] }
  use:
    kind: script
    needs: [sub]
    run: cp \"$GATEHOUSE_INPUTS/sub/out.txt\" \"$GATEHOUSE_ARTIFACTS/seen.txt\"
    artifacts: [seen.txt]
";
const GREEDY: &str =
    "name: greedy\nnodes:\n  sub: { kind: sop, sop: child, import: [make/missing.txt] }\n";

async fn a_child_run_hands_its_declared_artifacts_to_the_parent(backend: Backend) {
    let stack = Gatehouse::builder(backend)
        .sops(&[("child", CHILD), ("parent", PARENT), ("greedy", GREEDY)])
        .start()
        .await;
    let run = stack.request("parent").await;
    stack.wait_run(run, "succeeded").await;
    assert_eq!(
        stack.artifact(run, "use", 1, "seen.txt"),
        "from-the-child\n"
    );
    let imported: Vec<_> = stack
        .db
        .store
        .artifacts(run)
        .await
        .unwrap()
        .into_iter()
        .filter(|a| a.node == "sub")
        .collect();
    assert_eq!(imported.len(), 1);
    assert_eq!(imported[0].name, "out.txt");
    assert!(
        imported[0].location.contains("/artifacts/make/1/out.txt"),
        "{:?}",
        imported[0]
    );
    let children = stack.db.store.runs(None, &[], 10).await.unwrap();
    assert!(
        children
            .iter()
            .any(|r| r.parent_run == Some(run) && r.status == "succeeded")
    );

    let run = stack.request("greedy").await;
    let state = stack.wait_run(run, "failed").await;
    let failure = state["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("node `sub` failed: child run ")
            && failure.ends_with("produced no artifact `make/missing.txt` to import"),
        "{failure}"
    );
    stack.stop().await;
}

fn versioned(label: &str) -> String {
    format!(
        "name: versioned\nnodes:\n  ask: {{ kind: gate, approvers: [ana] }}\n  say:\n    kind: script\n    needs: [ask]\n    run: echo {label} > \"$GATEHOUSE_ARTIFACTS/said\"\n    artifacts: [said]\n"
    )
}

async fn a_changed_sop_file_leaves_running_runs_on_their_version(backend: Backend) {
    let v1 = versioned("one");
    let stack = Gatehouse::builder(backend)
        .sops(&[("versioned", &v1)])
        .start()
        .await;
    let old = stack.request("versioned").await;
    stack.wait_run(old, "waiting").await;
    let (db, data) = stack.halt().await;

    let v2 = versioned("two");
    let stack = Gatehouse::builder_on(db, data)
        .sops(&[("versioned", &v2)])
        .start()
        .await;
    let new = stack.request("versioned").await;
    stack.wait_run(new, "waiting").await;
    for run in [old, new] {
        stack
            .decide(run, "ask", 1, GateDecisionKind::Approve, None)
            .await;
        stack.wait_run(run, "succeeded").await;
    }
    assert_eq!(
        stack.artifact(old, "say", 1, "said"),
        "one\n",
        "the old run kept its version"
    );
    assert_eq!(stack.artifact(new, "say", 1, "said"), "two\n");
    let mut versions = Vec::new();
    for run in [old, new] {
        versions.push(stack.db.store.run(run).await.unwrap().unwrap().sop_version);
    }
    assert_ne!(versions[0], versions[1]);
    stack.stop().await;
}

/// The id `run start` answers with is a run from that moment: `requested` until a
/// scheduler creates it, refusing commands meanwhile, then the run itself.
async fn a_run_is_shown_as_requested_until_the_scheduler_creates_it(backend: Backend) {
    let stack = Gatehouse::builder(backend)
        .sops(&[])
        .without_scheduler()
        .start()
        .await;
    let admin = stack
        .stored_token("admin", &gatehouse_ingest::Scope::ALL, None)
        .await;
    let api = stack.api_as(&admin);
    let accepted = api
        .post("/runs", serde_json::json!({ "sop": "platform-check" }))
        .await
        .is(202);
    let run = accepted["run_id"].as_str().unwrap().to_owned();
    let shown = api.get(&format!("/runs/{run}")).await.is(200);
    assert_eq!(shown["status"], "requested", "{shown}");
    api.post(&format!("/runs/{run}/cancel"), serde_json::json!({}))
        .await
        .refused(409, "has not been created yet");
    let listed = api.get("/runs?status=requested").await.is(200);
    assert_eq!(listed[0]["id"], run.as_str(), "{listed}");

    // A scheduler comes and makes it the run, under the same id.
    let (db, data) = stack.halt().await;
    let stack = Gatehouse::builder_on(db, data).sops(&[]).start().await;
    stack.wait_run(run.parse().unwrap(), "waiting").await;
    stack.stop().await;
}
