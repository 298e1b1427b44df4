//! GitHub unreachable for a minute under a running `gatehouse up`: the log says so once
//! per service that needs it, reminds at growing intervals and says when it is back — not
//! a client error every few seconds — and what waited is done once GitHub answers.

mod harness;

use std::time::{Duration, Instant};

use gatehouse_tests::proxy::Proxy;
use harness::Up;

const TICK: &str = "name: tick\nnodes:\n  tock: { kind: script, run: 'echo tock' }\n";

/// The lines of `log` at warning level or above.
fn warnings(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect()
}

#[test]
fn a_minute_without_github_is_a_few_log_lines_and_the_comment_posts_after() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let github = runtime.block_on(gatehouse_fake_forge::github::FakeGithub::start());
    let target = github.url.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(&target);
    let git = tempfile::tempdir().unwrap();
    gatehouse_fake_forge::git::bare_repository(&git.path().join("Codertocat/Hello-World.git"));
    proxy.cut();
    let up = Up::builder()
        .sops(&[("tick", TICK)])
        .config(&format!(
            "[server]\nsop_dirs = [\"sops\"]\n[github]\napi_url = \"{}\"\ntoken = \"ghs_secret_token\"\nwebhook_secrets = [\"s3cret\"]\ngit_url = \"file://{}\"\n[[github.triggers]]\nlabel = \"bug\"\nsop = \"tick\"\nrepos = [\"Codertocat/*\"]\n",
            proxy.url(&github.url),
            git.path().display()
        ))
        .env("GATEHOUSE_LOG", "info")
        .stderr_to("up.log")
        .start();

    // A label: its run's status comment has to wait for GitHub.
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/github/issues.labeled.json"
    ))
    .unwrap();
    let signature = harness::http::github_signature(b"s3cret", &body);
    let status = runtime.block_on(async {
        reqwest::Client::new()
            .post(format!("{}/webhooks/github", up.url()))
            .header("X-GitHub-Event", "issues")
            .header("X-GitHub-Delivery", "delivery-1")
            .header("X-Hub-Signature-256", signature)
            .body(body.clone())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    assert_eq!(status, 202);

    std::thread::sleep(Duration::from_secs(60));
    let log = up.log();
    let during = warnings(&log);
    assert!(
        during.iter().any(|l| l.contains(&format!(
            "GitHub API at {} unreachable",
            proxy.url(&github.url)
        ))),
        "the outage is named with the address asked:\n{log}"
    );
    // Each of the notifier's poster and ingest's reconciliation says it once, then
    // reminds after 30 s and 1 min 30 s at most: a handful of lines in a minute.
    assert!(
        during.len() <= 6,
        "{} warnings in a minute without GitHub:\n{}",
        during.len(),
        during.join("\n")
    );
    assert!(github.comments("Codertocat/Hello-World", 1).is_empty());

    proxy.restore();
    let start = Instant::now();
    while github.comments("Codertocat/Hello-World", 1).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "no comment after GitHub came back:\n{}",
            up.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let start = Instant::now();
    while !up.log().contains("reachable again after") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the recovery is not logged:\n{}",
            up.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
