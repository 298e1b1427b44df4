//! `gatehouse serve`: each service in its own process on Postgres and NATS JetStream —
//! two schedulers, two runners, ingest and the notifier — driven through the CLI as an
//! operator would: a service started before `gatehouse migrate` waits (503 on `/readyz`),
//! runs go through gates decided by a reviewer, every service answers its probes and
//! metrics, and SIGTERM stops each one cleanly.

mod harness;

use std::time::Duration;

use gatehouse_tests::{Backend, TestDb, TestNats, nats_url};
use harness::Deployment;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_services_run_as_separate_processes() {
    let db = TestDb::unmigrated(Backend::Postgres).await;
    let nats = TestNats::new();
    let mut deployment = Deployment::new(&db.url, &nats_url(), nats.prefix.as_str(), "");

    // Started before the migrations: alive, not ready, waiting.
    deployment.start("scheduler-1", "scheduler");
    let mut waiting = (0, String::new());
    for _ in 0..200 {
        waiting = deployment.get("scheduler-1", "/readyz");
        if waiting.0 == 503 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(waiting.0, 503, "{waiting:?}");
    assert!(waiting.1.starts_with("database: "), "{waiting:?}");
    assert_eq!(
        deployment.get("scheduler-1", "/healthz"),
        (200, "ok\n".into())
    );
    let migrated = deployment.gatehouse().arg("migrate").output().unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    deployment.wait_ready("scheduler-1");

    for (name, service) in [
        ("ingest", "ingest"),
        ("scheduler-2", "scheduler"),
        ("runner-1", "runner"),
        ("runner-2", "runner"),
        ("notifier", "notifier"),
    ] {
        deployment.start(name, service);
    }
    for name in ["ingest", "scheduler-2", "runner-1", "runner-2", "notifier"] {
        deployment.wait_ready(name);
    }

    let reviewer = deployment.cli(&["token", "create", "ana"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let runs: Vec<String> = (0..6)
        .map(|_| {
            deployment.cli(&["run", "start", "platform-check"])["run_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for run in &runs {
        deployment.wait_status(run, "waiting");
        deployment.cli(&[
            "gate",
            "approve",
            &format!("{run}/confirm"),
            "--token",
            &reviewer,
        ]);
    }
    for run in &runs {
        deployment.wait_status(run, "succeeded");
        let shown = deployment.cli(&["run", "show", run]);
        let attempts = shown["attempts"].as_array().unwrap();
        assert!(
            attempts
                .iter()
                .all(|a| a["attempt"] == 1 && a["status"] == "succeeded"),
            "{shown:#}"
        );
    }

    // Each service reports its own part of the work on /metrics: runners their nodes,
    // schedulers the events they consumed, every relay the events it published.
    let metrics = |names: &[&str]| -> String {
        names
            .iter()
            .map(|name| {
                let (status, body) = deployment.get(name, "/metrics");
                assert_eq!(status, 200, "{name}");
                body
            })
            .collect()
    };
    let runners = metrics(&["runner-1", "runner-2"]);
    assert!(
        runners.contains(
            "gatehouse_node_duration_seconds_count{kind=\"script\",outcome=\"succeeded\"}"
        ),
        "{runners}"
    );
    let schedulers = metrics(&["scheduler-1", "scheduler-2"]);
    assert!(
        schedulers.contains(
            "gatehouse_events_consumed_total{consumer=\"scheduler-results\",outcome=\"applied\"}"
        ),
        "{schedulers}"
    );
    let ingest = metrics(&["ingest"]);
    assert!(
        ingest.contains("gatehouse_events_published_total{type=\"run.requested\"}"),
        "{ingest}"
    );
    for name in [
        "ingest",
        "scheduler-1",
        "scheduler-2",
        "runner-1",
        "runner-2",
        "notifier",
    ] {
        let status = deployment.terminate(name);
        assert!(
            status.success(),
            "{name} exited with {status} after SIGTERM"
        );
    }
    drop(deployment);
    db.cleanup().await;
    nats.cleanup().await;
}
