//! GitHub for the harness: the repository and secrets the fake GitHub and ingest share,
//! the runner's delivery to a local bare repository, and verbs that sign and send webhooks
//! and wait for what they cause (requirements, runs, comments).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_github::GithubClient;
use gatehouse_ingest::{GithubSettings, Repositories, Trigger};
use gatehouse_runner::Deliverer;
use gatehouse_store::{RequirementRow, RunRow};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::Gatehouse;
use gatehouse_fake_forge::git::bare_repository;

/// The secret webhooks are signed with (ingest also accepts an older one).
pub const SECRET: &str = "webhook s3cret";
/// The one repository ingest accepts, with a bare repository under `git/` to deliver to.
pub const REPO: &str = "Codertocat/Hello-World";
/// The fake GitHub's token; it must never show in logs, artifacts or remotes.
pub const TOKEN: &str = "ghs_test-token-never-shown";

/// Ingest's webhook settings with `triggers`; [`REPO`] and the projects' `repos` are
/// configured, whatever the triggers name.
pub(super) fn settings(triggers: Vec<Trigger>, repos: &[&str]) -> GithubSettings {
    let repositories: Vec<String> = std::iter::once(REPO)
        .chain(repos.iter().copied())
        .map(str::to_owned)
        .collect();
    GithubSettings {
        webhook_secrets: vec!["old secret".into(), SECRET.into()],
        triggers,
        bot_login: "gatehouse".into(),
        max_body_bytes: 64 * 1024,
        repositories: Repositories::new(&repositories).unwrap(),
    }
}

/// Delivery to bare repositories under `data/git`, created here: [`REPO`]'s and those of
/// `repos` (`owner/name`, the projects').
pub(super) fn deliverer(data: &Path, client: &GithubClient, repos: &[&str]) -> Arc<Deliverer> {
    let git = data.join("git");
    for repo in std::iter::once(REPO).chain(repos.iter().copied()) {
        let bare = git.join(format!("{repo}.git"));
        if !bare.exists() {
            bare_repository(&bare);
        }
    }
    Arc::new(Deliverer {
        github: Some(client.clone()),
        git_url: format!("file://{}", git.display()),
        remotes: gatehouse_runner::Remotes::default(),
        author_name: "Gatehouse".into(),
        author_email: "gatehouse@localhost".into(),
        mirrors: Some(gatehouse_runner::Mirrors::new(
            data.join("mirrors"),
            gatehouse_runner::MIRROR_LIMIT,
        )),
    })
}

/// A real GitHub payload of `tests/fixtures/github/`, as saved.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/github/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// [`fixture`] with its issue opened by `reporter`, someone Gatehouse does not know: the
/// fixtures' author, Codertocat, is a configured person in the suites, and a requirement's
/// author may not approve the work on it.
pub fn reported_fixture(name: &str) -> Value {
    let mut payload = fixture(name);
    if payload["issue"]["user"].is_object() {
        payload["issue"]["user"]["login"] = serde_json::json!("reporter");
    }
    payload
}

/// The `X-Hub-Signature-256` GitHub sends for `body`.
pub fn sign(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

impl Gatehouse {
    /// Posts a webhook as GitHub would, signed with `signature` when given.
    pub async fn post_github(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        signature: Option<String>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .post(format!("{}/webhooks/github", self.url))
            .header("X-GitHub-Event", event)
            .header("X-GitHub-Delivery", delivery)
            .header("Content-Type", "application/json")
            .body(body.to_vec());
        if let Some(signature) = signature {
            request = request.header("X-Hub-Signature-256", signature);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Stores a delivery as pending, the way a process that crashed before processing it
    /// (or could not process it as it arrived) leaves it.
    pub async fn leave_github_pending(&self, event: &str, delivery: &str, payload: &Value) {
        let body = serde_json::to_string(payload).unwrap();
        let stored = self
            .db
            .store
            .record_delivery("github", delivery, event, &body, None);
        assert!(
            stored.await.unwrap(),
            "delivery {delivery} was stored before"
        );
    }

    /// The delivery's status as stored now, without waiting for it to change.
    pub async fn delivery_status(&self, delivery: &str) -> String {
        let stored = self.db.store.delivery("github", delivery).await.unwrap();
        stored
            .expect("the delivery is stored")
            .status
            .as_str()
            .to_owned()
    }

    pub async fn deliver_github(&self, event: &str, delivery: &str, payload: &Value) -> Value {
        let body = serde_json::to_vec(payload).unwrap();
        let (status, answer) = self
            .post_github(event, delivery, &body, Some(sign(&body)))
            .await;
        assert!(status == 202 || status == 200, "{status}: {answer}");
        answer
    }

    /// The delivery's note once it is processed.
    pub async fn note(&self, delivery: &str) -> String {
        for _ in 0..500 {
            if let Some(d) = self.db.store.delivery("github", delivery).await.unwrap()
                && d.status != "pending"
            {
                return d.note.unwrap_or_default();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("delivery {delivery} was never processed");
    }

    /// The requirement, once a delivery has created it.
    pub async fn requirement(&self, number: u64) -> RequirementRow {
        let key = format!("github:{REPO}#{number}");
        for _ in 0..500 {
            if let Some(found) = self.db.store.requirement_by_key(&key).await.unwrap() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no requirement for {key}");
    }

    /// Waits until the requirement has `count` runs, all with `status`.
    pub async fn runs(&self, number: u64, status: &str, count: usize) -> Vec<RunRow> {
        self.runs_where(number, count, |runs| {
            runs.iter().all(|r| r.status == status)
        })
        .await
    }

    /// Waits until the requirement has `count` runs and the newest has `status`.
    pub async fn newest(&self, number: u64, status: &str, count: usize) -> Vec<RunRow> {
        self.runs_where(number, count, |runs| runs[0].status == status)
            .await
    }

    pub async fn runs_where(
        &self,
        number: u64,
        count: usize,
        check: impl Fn(&[RunRow]) -> bool,
    ) -> Vec<RunRow> {
        let requirement = self.requirement(number).await;
        for _ in 0..500 {
            let runs = self
                .db
                .store
                .runs_of_requirement(requirement.id)
                .await
                .unwrap();
            if runs.len() == count && check(&runs) {
                return runs;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "issue #{number} never had {count} runs as expected: {:?}",
            self.db
                .store
                .runs_of_requirement(requirement.id)
                .await
                .unwrap()
        );
    }

    /// Waits until the issue has `count` comments and the newest satisfies `check`.
    pub async fn comments(
        &self,
        number: u64,
        count: usize,
        check: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        for _ in 0..500 {
            let comments = self.github.comments(REPO, number);
            if comments.len() == count && comments.last().is_some_and(|c| check(c)) {
                return comments;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "issue #{number} never had {count} comments as expected: {:#?}",
            self.github.comments(REPO, number)
        );
    }
}
