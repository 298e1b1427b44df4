//! Postgres and NATS not there yet, or going away under work: every `serve` process waits
//! and recovers instead of exiting. The services reach the machine's Postgres and NATS
//! through TCP proxies the test cuts and restores.

mod harness;

use std::time::{Duration, Instant};

use gatehouse_tests::proxy::Proxy;
use gatehouse_tests::{Backend, TestDb, TestNats, nats_url};
use harness::Deployment;

/// Two nodes; the first outlasts the outage the test makes while it runs.
const STEPS: &str = r#"
name: steps
nodes:
  first: { kind: script, run: "sleep 3; echo one > $GATEHOUSE_ARTIFACTS/out", artifacts: [out] }
  second: { kind: script, needs: [first], run: "echo two" }
"#;

const SERVICES: [(&str, &str); 4] = [
    ("ingest", "ingest"),
    ("scheduler", "scheduler"),
    ("runner", "runner"),
    ("notifier", "notifier"),
];

fn postgres_address(url: &str) -> String {
    let after_at = url.split_once('@').map_or(url, |(_, rest)| rest);
    after_at.split('/').next().unwrap().to_owned()
}

fn nats_address() -> String {
    nats_url().trim_start_matches("nats://").to_owned()
}

/// Starts a run of `steps` through the CLI; its id.
fn start_steps(deployment: &Deployment) -> String {
    deployment.cli(&["run", "start", "steps"])["run_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Polls `check` every 100 ms for up to `within`.
fn eventually(within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < within {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within {within:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_started_before_postgres_and_nats_wait_for_them() {
    let db = TestDb::new(Backend::Postgres).await;
    let nats = TestNats::new();
    let postgres = Proxy::start(&postgres_address(&db.url));
    let nats_proxy = Proxy::start(&nats_address());
    postgres.cut();
    nats_proxy.cut();
    let mut deployment = Deployment::new(
        &postgres.url(&db.url),
        &nats_proxy.url(&nats_url()),
        nats.prefix.as_str(),
        "",
    );
    std::fs::write(deployment.dir.path().join("sops/steps.yaml"), STEPS).unwrap();
    for (name, service) in SERVICES {
        deployment.start(name, service);
    }

    // Well past the minute `up` would retry for would make a slow test; what matters is
    // that they answer, say why they are not ready, and keep waiting.
    std::thread::sleep(Duration::from_secs(4));
    for (name, _) in SERVICES {
        assert!(
            deployment.alive(name),
            "{name} exited while Postgres was away"
        );
        assert_eq!(deployment.get(name, "/healthz").0, 200, "{name}");
        let (status, why) = deployment.get(name, "/readyz");
        assert_eq!(status, 503, "{name}: {why}");
        assert!(why.starts_with("database: "), "{name}: {why}");
    }
    // Waiting is no reason to ignore SIGTERM.
    let stopped = Instant::now();
    assert!(deployment.terminate("notifier").success());
    assert!(
        stopped.elapsed() < Duration::from_secs(3),
        "{:?}",
        stopped.elapsed()
    );
    deployment.start("notifier", "notifier");

    postgres.restore();
    eventually(Duration::from_secs(20), "waiting for NATS instead", || {
        let (status, why) = deployment.get("scheduler", "/readyz");
        status == 503 && why.starts_with("bus: ")
    });
    for (name, _) in SERVICES {
        assert!(deployment.alive(name), "{name} exited while NATS was away");
    }

    nats_proxy.restore();
    for (name, _) in SERVICES {
        deployment.wait_ready(name);
    }
    let run = start_steps(&deployment);
    deployment.wait_status(&run, "succeeded");
    drop(deployment);
    db.cleanup().await;
    nats.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_postgres_going_away_while_a_node_runs() {
    let db = TestDb::new(Backend::Postgres).await;
    let nats = TestNats::new();
    let postgres = Proxy::start(&postgres_address(&db.url));
    let mut deployment = Deployment::new(
        &postgres.url(&db.url),
        &nats_url(),
        nats.prefix.as_str(),
        "",
    );
    std::fs::write(deployment.dir.path().join("sops/steps.yaml"), STEPS).unwrap();
    for (name, service) in SERVICES {
        deployment.start(name, service);
    }
    for (name, _) in SERVICES {
        deployment.wait_ready(name);
    }
    let run = start_steps(&deployment);
    let id = run.parse().unwrap();
    for _ in 0..300 {
        if !db.store.attempts(id).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its start reported, the script is in its sleep.
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Away for longer than the node has left to run, and longer than a connection is
    // waited for (10 s): the node ends while Postgres is gone, and writes fail meanwhile.
    postgres.cut();
    let away = Instant::now();
    eventually(
        Duration::from_secs(5),
        "ingest to say the database is away",
        || {
            let (status, why) = deployment.get("ingest", "/readyz");
            status == 503 && why.starts_with("database: ")
        },
    );
    std::thread::sleep(Duration::from_secs(14).saturating_sub(away.elapsed()));
    for (name, _) in SERVICES {
        assert!(
            deployment.alive(name),
            "{name} exited while Postgres was away"
        );
    }
    postgres.restore();

    deployment.wait_status(&run, "succeeded");
    let attempts: Vec<(String, i32, String)> = db
        .store
        .attempts(id)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.node, a.attempt, a.status.to_string()))
        .collect();
    assert_eq!(
        attempts,
        [
            ("first".into(), 1, "succeeded".into()),
            ("second".into(), 1, "succeeded".into())
        ],
        "the attempt that ended during the outage kept its result"
    );
    for (name, _) in SERVICES {
        assert!(deployment.alive(name), "{name} exited after the outage");
        deployment.wait_ready(name);
    }
    drop(deployment);
    db.cleanup().await;
    nats.cleanup().await;
}
