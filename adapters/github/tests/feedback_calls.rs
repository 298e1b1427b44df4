//! The REST calls that follow a pull request (its state, review comments and replies,
//! failed checks and their logs) against a stand-in GitHub.

use gatehouse_github::{CheckLimits, GithubClient, GithubError};
use secrecy::SecretString;
use serde_json::{Value, json};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const REPO: &str = "acme/api";
const SHA: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

fn client(server: &MockServer) -> GithubClient {
    GithubClient::new(&server.uri(), SecretString::from("t0ken")).unwrap()
}

fn authorization(request: &Request) -> Option<String> {
    request
        .headers
        .get("authorization")
        .map(|v| v.to_str().unwrap().to_owned())
}

fn review_comment(id: u64, body: &str, line: Value) -> Value {
    json!({
        "id": id, "node_id": format!("PRRC_{id}"), "pull_request_review_id": 7,
        "path": "src/lib.rs", "line": line, "original_line": 12, "diff_hunk": "@@ -1 +1 @@",
        "body": body, "user": {"login": "ana", "id": 3},
        "html_url": format!("https://github.com/acme/api/pull/4#discussion_r{id}"),
        "created_at": "2026-11-30T12:00:00Z", "updated_at": "2026-11-30T12:00:00Z"
    })
}

#[tokio::test]
async fn a_reviews_comments_are_listed_with_file_and_line() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/pulls/4/reviews/7/comments"))
        .and(query_param("per_page", "100"))
        .and(header("authorization", "Bearer t0ken"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            review_comment(11, "Rename this", json!(12)),
            review_comment(12, "Outdated now", Value::Null),
        ])))
        .expect(1)
        .mount(&server)
        .await;
    let comments = client(&server).review_comments(REPO, 4, 7).await.unwrap();
    assert_eq!(comments.len(), 2);
    assert_eq!(comments[0].id, 11);
    assert_eq!(comments[0].path, "src/lib.rs");
    assert_eq!(comments[0].line, Some(12));
    assert_eq!(comments[0].body, "Rename this");
    assert_eq!(comments[0].user.login, "ana");
    assert!(comments[0].html_url.ends_with("#discussion_r11"));
    assert_eq!(comments[1].line, None);
}

#[tokio::test]
async fn a_pulls_state_says_where_its_ends_are_and_whether_it_merges() {
    let server = MockServer::start().await;
    // A 502 first: a GET is retried.
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/pulls/4"))
        .respond_with(ResponseTemplate::new(502).set_body_json(json!({"message": "x"})))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/pulls/4"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "number": 4, "state": "open", "merged": false, "draft": false,
            "head": {"ref": "gatehouse/req-9", "sha": SHA, "repo": {"full_name": REPO}},
            "base": {"ref": "main", "sha": "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"},
            "mergeable": false, "mergeable_state": "dirty", "merge_commit_sha": null
        })))
        .mount(&server)
        .await;
    let pull = client(&server).pull(REPO, 4).await.unwrap();
    assert_eq!(pull.number, 4);
    assert_eq!(pull.state, "open");
    assert!(!pull.merged);
    assert_eq!(
        (pull.head.name.as_str(), pull.head.sha.as_str()),
        ("gatehouse/req-9", SHA)
    );
    assert_eq!(pull.base.name, "main");
    assert_eq!(pull.mergeable, Some(false));
    assert_eq!(pull.mergeable_state.as_deref(), Some("dirty"));
    assert_eq!(pull.merge_commit_sha, None);
}

fn check_run(id: u64, name: &str, status: &str, conclusion: Value, app: &str) -> Value {
    json!({
        "id": id, "name": name, "head_sha": SHA, "status": status, "conclusion": conclusion,
        "html_url": format!("https://github.com/acme/api/runs/{id}"),
        "app": {"id": 15368, "slug": app, "name": app},
        "output": {"title": format!("{name} failed"), "summary": "ü".repeat(100), "text": null}
    })
}

#[tokio::test]
async fn failed_checks_carry_the_end_of_their_logs_fetched_without_the_token_elsewhere() {
    let api = MockServer::start().await;
    let downloads = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/repos/acme/api/commits/{SHA}/check-runs")))
        .and(query_param("per_page", "100"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "total_count": 7,
            "check_runs": [
                check_run(1, "lint", "completed", json!("success"), "github-actions"),
                check_run(2, "build", "in_progress", Value::Null, "github-actions"),
                check_run(3, "test", "completed", json!("failure"), "github-actions"),
                check_run(4, "ci/external", "completed", json!("timed_out"), "circleci"),
                check_run(5, "e2e", "completed", json!("cancelled"), "github-actions"),
                check_run(6, "docs", "completed", json!("neutral"), "github-actions"),
                check_run(7, "deploy", "completed", json!("action_required"), "github-actions"),
            ]
        })))
        .mount(&api)
        .await;
    // As GitHub: the log is a redirect to a download on another host.
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/actions/jobs/3/logs"))
        .respond_with(ResponseTemplate::new(302).insert_header(
            "location",
            format!("{}/logs/3.txt?sig=abc", downloads.uri()).as_str(),
        ))
        .mount(&api)
        .await;
    let log: String = (0..2000)
        .map(|n| format!("2026-11-30T12:00:00Z step {n}: ünïcödé\n"))
        .collect();
    let log = format!("{log}error: test `parses` failed\n");
    Mock::given(method("GET"))
        .and(path("/logs/3.txt"))
        .respond_with(ResponseTemplate::new(200).set_body_string(log.clone()))
        .mount(&downloads)
        .await;
    // The cancelled job's log has expired.
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/actions/jobs/5/logs"))
        .respond_with(ResponseTemplate::new(410).set_body_json(json!({"message": "Gone"})))
        .mount(&api)
        .await;

    let limits = CheckLimits {
        jobs: 3,
        log_tail_bytes: 1001,
        text_bytes: 50,
    };
    let failed = client(&api).failed_checks(REPO, SHA, limits).await.unwrap();

    let names: Vec<(&str, &str)> = failed
        .iter()
        .map(|f| (f.name.as_str(), f.conclusion.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("test", "failure"),
            ("ci/external", "timed_out"),
            ("e2e", "cancelled")
        ],
        "completed failures only, at most `jobs` of them"
    );
    let test = &failed[0];
    assert_eq!(test.id, 3);
    assert_eq!(test.app.as_deref(), Some("github-actions"));
    assert_eq!(
        test.html_url.as_deref(),
        Some("https://github.com/acme/api/runs/3")
    );
    assert_eq!(test.title.as_deref(), Some("test failed"));
    let summary = test.summary.as_deref().unwrap();
    assert!(summary.len() <= 50 && summary.starts_with("üü") && summary.ends_with('…'));
    let tail = test.log_tail.as_deref().unwrap();
    assert!(tail.len() <= 1001 && tail.len() > 990, "{}", tail.len());
    assert!(log.ends_with(tail), "the end of the log");
    assert!(tail.ends_with("error: test `parses` failed\n"));
    assert_eq!(failed[1].log_tail, None, "not an Actions job: no log asked");
    assert_eq!(failed[2].log_tail, None, "an expired log is not an error");

    let asked: Vec<String> = api
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.url.path().to_owned())
        .collect();
    assert!(!asked.contains(&"/repos/acme/api/actions/jobs/4/logs".to_owned()));
    let api_logs = api.received_requests().await.unwrap();
    let to_api = api_logs
        .iter()
        .find(|r| r.url.path() == "/repos/acme/api/actions/jobs/3/logs")
        .unwrap();
    assert_eq!(authorization(to_api).as_deref(), Some("Bearer t0ken"));
    let fetched = downloads.received_requests().await.unwrap();
    assert_eq!(fetched.len(), 1);
    assert_eq!(fetched[0].url.query(), Some("sig=abc"));
    assert_eq!(
        authorization(&fetched[0]),
        None,
        "the token stays with the API"
    );
}

#[tokio::test]
async fn a_log_that_keeps_failing_fails_the_call() {
    let api = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/repos/acme/api/commits/{SHA}/check-runs")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "total_count": 1,
            "check_runs": [check_run(3, "test", "completed", json!("failure"), "github-actions")]
        })))
        .mount(&api)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/actions/jobs/3/logs"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({"message": "busy"})))
        .mount(&api)
        .await;
    let failed = client(&api)
        .failed_checks(REPO, SHA, CheckLimits::default())
        .await;
    assert!(
        matches!(failed, Err(GithubError::Unavailable(_))),
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_reply_is_posted_in_the_thread() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/api/pulls/4/comments/11/replies"))
        .and(body_json(json!({"body": "Renamed in 1a2b3c."})))
        .respond_with(ResponseTemplate::new(201).set_body_json(review_comment(
            99,
            "Renamed",
            json!(12),
        )))
        .expect(1)
        .mount(&server)
        .await;
    let id = client(&server)
        .reply_to_review_comment(REPO, 4, 11, "Renamed in 1a2b3c.")
        .await
        .unwrap();
    assert_eq!(id, 99);
}

#[tokio::test]
async fn a_reply_made_once_is_not_made_again() {
    let server = MockServer::start().await;
    let marker = gatehouse_github::comment_marker("reply:acme/api#4:11");
    // The first attempt is stored, then answered 502; the retry finds it.
    let stored = review_comment(99, &format!("Renamed.\n\n{marker}"), json!(12));
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/pulls/4/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/api/pulls/4/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            review_comment(11, "Rename this", json!(12)),
            stored
        ])))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/api/pulls/4/comments/11/replies"))
        .and(body_json(json!({"body": format!("Renamed.\n\n{marker}")})))
        .respond_with(ResponseTemplate::new(502).set_body_json(json!({"message": "x"})))
        .expect(1)
        .mount(&server)
        .await;
    let id = client(&server)
        .reply_to_review_comment_once(REPO, 4, 11, &marker, "Renamed.")
        .await
        .unwrap();
    assert_eq!(id, 99);
}
