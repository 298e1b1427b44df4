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

mod official_client;
mod permissions;
mod questions;
mod remote;
mod tools;

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
        self.desk.open(Arc::new(self.tools(attempt, wait, remotes)))
    }

    /// What such an attempt's tools act on.
    fn tools(&self, attempt: u32, wait: Duration, remotes: Vec<String>) -> AttemptTools {
        let notes = self.notes.clone();
        AttemptTools {
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
            permissions: None,
            started: tokio::time::Instant::now(),
            decisions: Default::default(),
        }
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

    /// `tool` called with `arguments` by the attempt of `token`, in the background, as a
    /// CLI waits in a call.
    fn calling(
        self: &Arc<Self>,
        token: &str,
        tool: &'static str,
        arguments: Value,
    ) -> tokio::task::JoinHandle<(bool, String)> {
        let (bench, token) = (self.clone(), token.to_owned());
        tokio::spawn(async move { bench.call(&token, tool, arguments).await })
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
