//! Gatehouse's MCP server over real HTTP on loopback, spoken to as a CLI's MCP client
//! speaks it (JSON-RPC over streamable HTTP), with the answers to questions given through
//! the store as the API and chat cards give them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_store::{Answer, ConnectionOwner, QuestionStatus, Store};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{AttemptTools, Desk, GATEHOUSE_PATH, Ticket};

struct Bench {
    store: Store,
    desk: Desk,
    url: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
    artifacts: std::path::PathBuf,
    notes: Arc<Mutex<Vec<String>>>,
    run: Uuid,
    _stop: tokio_util::sync::DropGuard,
}

impl Bench {
    async fn new() -> Self {
        Self::with_desk(Desk::default()).await
    }

    async fn with_desk(desk: Desk) -> Self {
        let dir = tempfile::tempdir().expect("dir");
        let url = format!("sqlite:{}", dir.path().join("gatehouse.db").display());
        let store = Store::connect(&url, backon::ExponentialBuilder::default())
            .await
            .expect("store");
        store.migrate().await.expect("migrate");
        let stop = CancellationToken::new();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("listen");
        let at = listener.local_addr().expect("address");
        super::serve(&desk, listener, &stop);
        let artifacts = dir.path().join("artifacts");
        std::fs::create_dir_all(&artifacts).expect("artifacts");
        Self {
            store,
            desk,
            url: format!("http://{at}{GATEHOUSE_PATH}"),
            http: reqwest::Client::new(),
            _dir: dir,
            artifacts,
            notes: Arc::default(),
            run: Uuid::now_v7(),
            _stop: stop.drop_guard(),
        }
    }

    /// Attempt `attempt` of node `code`, its questions waiting at most `wait`.
    fn attempt(&self, attempt: u32, wait: Duration) -> Ticket {
        self.attempt_with(attempt, wait, Vec::new())
    }

    /// The same, attached to the remote MCP servers `remotes`.
    fn attempt_with(&self, attempt: u32, wait: Duration, remotes: Vec<String>) -> Ticket {
        let notes = self.notes.clone();
        self.desk.open(Arc::new(AttemptTools {
            owner: ConnectionOwner::Node {
                run_id: self.run,
                node: "code".to_owned(),
            },
            attempt,
            project: Some("api".to_owned()),
            requirement: json!({"requirement": {"title": "Add /health"}}),
            inputs: json!({"params": {"target": "prod"}}),
            artifacts: Some(self.artifacts.clone()),
            remotes,
            progress: Box::new(move |note| notes.lock().expect("notes").push(note)),
            ask_timeout: wait,
            deadline: None,
            store: self.store.clone(),
        }))
    }

    /// One JSON-RPC request; the result (or error) of its answer.
    async fn rpc(&self, token: &str, method: &str, params: Value) -> Result<Value, Value> {
        let response = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("request");
        let status = response.status();
        let body = response.text().await.expect("body");
        assert!(status.is_success(), "{status}: {body}");
        // JSON, or server-sent events whose data lines carry the answer.
        let answer: Value = serde_json::from_str(&body).unwrap_or_else(|_| {
            body.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v.get("id").is_some())
                .unwrap_or_else(|| panic!("no answer in {body}"))
        });
        match answer.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(answer["result"].clone()),
        }
    }

    async fn call(&self, token: &str, tool: &str, arguments: Value) -> (bool, String) {
        let result = self
            .rpc(
                token,
                "tools/call",
                json!({"name": tool, "arguments": arguments}),
            )
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (result["isError"] == true, text)
    }

    /// The one open question, once it is asked.
    async fn open_question(&self) -> gatehouse_store::QuestionRow {
        for _ in 0..200 {
            if let Some(q) = self
                .store
                .open_questions(10)
                .await
                .expect("questions")
                .pop()
            {
                return q;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no question was asked");
    }

    async fn answer(&self, id: Uuid, status: QuestionStatus, comment: &str) {
        let mut tx = self.store.begin().await.expect("tx");
        tx.answer_question(
            id,
            &Answer {
                status,
                decided_by: Some("ada"),
                channel: Some("slack"),
                comment: Some(comment),
                at: chrono::Utc::now(),
            },
        )
        .await
        .expect("answer");
        tx.commit().await.expect("commit");
    }
}

async fn initialize(bench: &Bench, token: &str) {
    let init = bench
        .rpc(
            token,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        )
        .await
        .expect("initialize");
    assert!(init["serverInfo"].is_object(), "{init}");
}

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
    let big = "x".repeat(super::tools::MAX_ARTIFACT_BYTES + 1);
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
async fn an_approval_waits_for_a_person_and_a_rerun_adopts_the_answer() {
    let bench = Arc::new(Bench::new().await);
    let first = bench.attempt(1, Duration::from_secs(30));
    let token = first.token().to_owned();
    let asking = {
        let bench = bench.clone();
        tokio::spawn(async move {
            bench
                .call(
                    &token,
                    "request_approval",
                    json!({"question": "May I drop the legacy_users table?", "evidence": "nothing reads it"}),
                )
                .await
        })
    };
    let question = bench.open_question().await;
    assert_eq!(question.question, "May I drop the legacy_users table?");
    assert_eq!(question.evidence.as_deref(), Some("nothing reads it"));
    assert_eq!(question.project.as_deref(), Some("api"));
    assert!(!asking.is_finished(), "the call waits for the answer");
    bench
        .answer(
            question.id,
            QuestionStatus::Denied,
            "keep it until the migration ships",
        )
        .await;
    let (failed, said) = asking.await.expect("call");
    assert!(failed);
    assert_eq!(said, "denied by ada: keep it until the migration ships");
    assert!(bench.notes.lock().expect("notes")[0].contains("waiting for a person"));

    // The node runs again (its runner was killed, say) and asks the same thing: the
    // answer is the one given, and nobody is asked twice.
    drop(first);
    let second = bench.attempt(2, Duration::from_secs(30));
    let (failed, said) = bench
        .call(
            second.token(),
            "request_approval",
            json!({"question": "May I drop the legacy_users table?", "evidence": "nothing reads it"}),
        )
        .await;
    assert!(failed);
    assert_eq!(said, "denied by ada: keep it until the migration ships");
    assert_eq!(
        bench
            .store
            .run_questions(bench.run)
            .await
            .expect("questions")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_question_left_open_by_a_lost_attempt_is_adopted_by_the_next() {
    let bench = Arc::new(Bench::new().await);
    let first = bench.attempt(1, Duration::from_secs(30));
    let token = first.token().to_owned();
    let lost = {
        let bench = bench.clone();
        tokio::spawn(async move {
            bench
                .call(
                    &token,
                    "request_approval",
                    json!({"question": "Deploy to prod?"}),
                )
                .await
        })
    };
    let question = bench.open_question().await;
    // The attempt is lost while it waits.
    lost.abort();
    drop(first);
    let second = bench.attempt(2, Duration::from_secs(30));
    let token = second.token().to_owned();
    let asking = {
        let bench = bench.clone();
        tokio::spawn(async move {
            bench
                .call(
                    &token,
                    "request_approval",
                    json!({"question": "Deploy to prod?"}),
                )
                .await
        })
    };
    for _ in 0..100 {
        let now = bench
            .store
            .question(question.id)
            .await
            .expect("read")
            .expect("row");
        if now.attempt == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bench
        .answer(question.id, QuestionStatus::Approved, "")
        .await;
    let (failed, said) = asking.await.expect("call");
    assert!(!failed, "{said}");
    assert_eq!(said, "approved by ada");
    let questions = bench
        .store
        .run_questions(bench.run)
        .await
        .expect("questions");
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].attempt, 2);
}

#[tokio::test]
async fn a_question_nobody_answers_expires_and_says_so() {
    let bench = Bench::new().await;
    let ticket = bench.attempt(1, Duration::from_millis(300));
    let (failed, said) = bench
        .call(
            ticket.token(),
            "request_approval",
            json!({"question": "Anyone there?"}),
        )
        .await;
    assert!(failed);
    assert!(said.contains("nobody answered in time"), "{said}");
    let questions = bench
        .store
        .run_questions(bench.run)
        .await
        .expect("questions");
    assert_eq!(questions[0].status, QuestionStatus::Expired);
    let (failed, said) = bench
        .call(
            ticket.token(),
            "request_approval",
            json!({"question": "  "}),
        )
        .await;
    assert!(failed && said.contains("empty"), "{said}");
}

#[tokio::test]
async fn a_token_works_until_its_ticket_is_dropped() {
    let bench = Bench::new().await;
    let ticket = bench.attempt(1, Duration::from_secs(1));
    let token = ticket.token().to_owned();
    assert!(token.starts_with(super::TOKEN_PREFIX));
    assert!(bench.desk.attempt(&token).is_some());
    let other = bench.attempt(1, Duration::from_secs(1));
    assert_ne!(other.token(), token);
    drop(ticket);
    assert!(bench.desk.attempt(&token).is_none());
    assert!(bench.desk.attempt(other.token()).is_some());
}

/// A remote MCP server stand-in: answers every request with the Authorization header it
/// got, so a test sees which credentials arrived.
async fn remote_server() -> url::Url {
    use axum::http::HeaderMap;
    let app = axum::Router::new().fallback(|headers: HeaderMap| async move {
        let seen = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned();
        axum::Json(json!({"jsonrpc": "2.0", "id": 1, "result": {"authorization": seen}}))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let at = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    url::Url::parse(&format!("http://{at}/mcp")).expect("url")
}

#[tokio::test]
async fn a_remote_server_is_reached_with_its_secret_only_by_attempts_it_is_attached_to() {
    use secrecy::SecretString;
    let wiki = gatehouse_gateway::RemoteMcp::new(
        "wiki",
        remote_server().await,
        vec![(
            "authorization".to_owned(),
            SecretString::from("Bearer wiki-secret"),
        )],
    )
    .expect("remote");
    let desk = Desk::new(std::collections::BTreeMap::from([(
        "wiki".to_owned(),
        Arc::new(wiki),
    )]));
    let bench = Bench::with_desk(desk).await;
    let attached = bench.attempt_with(1, Duration::from_secs(1), vec!["wiki".to_owned()]);
    let url = bench.url.replace(GATEHOUSE_PATH, "/mcp/wiki");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let answer: Value = bench
        .http
        .post(&url)
        .bearer_auth(attached.token())
        .json(&body)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    // The secret is the runner's; the attempt's own token never leaves.
    assert_eq!(answer["result"]["authorization"], "Bearer wiki-secret");

    let other = bench.attempt(1, Duration::from_secs(1));
    let refused = bench
        .http
        .post(&url)
        .bearer_auth(other.token())
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), 404);
    assert!(
        refused
            .text()
            .await
            .expect("body")
            .contains("attached: none")
    );
    let unknown = bench
        .http
        .post(bench.url.replace(GATEHOUSE_PATH, "/mcp/nope"))
        .bearer_auth(attached.token())
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(unknown.status(), 404);
}
