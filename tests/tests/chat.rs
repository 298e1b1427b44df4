//! Slack and Discord end to end: signed requests (the real payloads from bolt-python and
//! Discord's docs, re-addressed) over HTTP on loopback into ingest, decided by the real
//! scheduler on a real database, with cards and replies posted by the notifier to stateful
//! fakes of Slack's Web API and Discord's REST API.

use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::SigningKey;
use gatehouse_bus::{Bus, InProcessBus};
use gatehouse_discord::{DiscordClient, GatewaySink, PublicKey};
use gatehouse_ingest::{
    ApiState, ChatSettings, DiscordSettings, DiscordSink, People, Person, SlackSettings,
};
use gatehouse_notifier::{ChatOutputs, DiscordOutput, Notifier, SlackOutput};
use gatehouse_slack::SlackClient;
use gatehouse_sop::Catalog;
use gatehouse_store::RunRow;
use gatehouse_tests::fake_discord::FakeDiscord;
use gatehouse_tests::fake_slack::{self, FakeSlack, Fault, SlackMessage};
use gatehouse_tests::{Backend, Services, TestDb, on_both_backends};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const REVIEW: &str = "name: review\nnodes:\n  draft: { kind: script, run: 'echo \"draft of $GATEHOUSE_RUN_ID\" > $GATEHOUSE_ARTIFACTS/notes.md', artifacts: [notes.md] }\n  check: { kind: gate, needs: [draft], approvers: [group:leads], send_back: [draft] }\n  after: { kind: script, needs: [check], run: 'true' }\n";
const PAIR: &str =
    "name: pair\nnodes:\n  check: { kind: gate, approvers: [group:leads], min_approvals: 2 }\n";
/// Where approval cards go by default.
const APPROVALS: &str = "C0APPROVALS";
/// A channel whose free-text requests start `review`.
const REQUESTS: &str = "C0REQUESTS";
const DISCORD_APPROVALS: &str = "900000000000000001";
const DISCORD_REQUESTS: &str = "900000000000000002";
const ANA: &str = "U0ANA";
const BO: &str = "U0BO";
const CY: &str = "U0CY";
const EVE: &str = "U0EVE";

struct Hub {
    db: TestDb,
    slack: FakeSlack,
    discord: FakeDiscord,
    key: SigningKey,
    _data: tempfile::TempDir,
    services: Services,
    api: ApiState,
    url: String,
    stop: CancellationToken,
    http: reqwest::Client,
}

impl Hub {
    async fn start(backend: Backend) -> Self {
        Self::start_with(
            backend,
            FakeSlack::start().await,
            FakeDiscord::start().await,
        )
        .await
    }

    async fn start_with(backend: Backend, slack: FakeSlack, discord: FakeDiscord) -> Self {
        let db = TestDb::new(backend).await;
        let data = tempfile::tempdir().unwrap();
        std::fs::create_dir(data.path().join("sops")).unwrap();
        std::fs::write(data.path().join("sops/review.yaml"), REVIEW).unwrap();
        std::fs::write(data.path().join("sops/pair.yaml"), PAIR).unwrap();
        let (catalog, errors) = Catalog::load(&[data.path().join("sops")]);
        assert!(errors.is_empty(), "{errors:?}");
        let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new(db.store.clone()));
        let slack_client =
            SlackClient::new(&slack.api_url(), fake_slack::BOT_TOKEN.into()).unwrap();
        let discord_client = DiscordClient::new(
            &discord.api_url(),
            FakeDiscord::TOKEN.into(),
            FakeDiscord::APPLICATION_ID,
        )
        .unwrap();
        let stop = CancellationToken::new();
        let outputs = ChatOutputs {
            slack: Some(SlackOutput {
                client: slack_client.clone(),
                approvals_channel: Some(APPROVALS.into()),
            }),
            discord: Some(DiscordOutput {
                client: discord_client,
                approvals_channel: Some(DISCORD_APPROVALS.into()),
            }),
        };
        tokio::spawn(
            Notifier::new(db.store.clone(), None)
                .with_chat(outputs)
                .with_data_dir(data.path())
                .with_public_url("https://gatehouse.test")
                .run(bus.clone(), stop.clone()),
        );
        let services = Services::start(
            &db.store,
            bus,
            catalog.clone(),
            data.path(),
            Duration::from_secs(5),
        );
        let person = |id: &str, slack: &str, discord: &str, groups: &[&str]| Person {
            id: id.into(),
            github: None,
            slack: Some(slack.into()),
            discord: Some(discord.into()),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        };
        let key = SigningKey::generate(&mut rand::rngs::OsRng);
        let chat = ChatSettings {
            slack: Some(SlackSettings {
                signing_secret: SIGNING_SECRET.as_bytes().to_vec(),
                client: Some(slack_client),
                channel_sops: [(REQUESTS.to_owned(), "review".to_owned())].into(),
                max_body_bytes: 64 * 1024,
            }),
            discord: Some(DiscordSettings {
                public_key: PublicKey::from_hex(&hex::encode(key.verifying_key().as_bytes()))
                    .unwrap(),
                channel_sops: [(DISCORD_REQUESTS.to_owned(), "review".to_owned())].into(),
                max_body_bytes: 64 * 1024,
            }),
        };
        let api = ApiState::new(db.store.clone(), Arc::new(catalog))
            .with_people(People::new(vec![
                person("ana", ANA, "4242", &["leads"]),
                person("bo", BO, "4343", &["leads"]),
                person("cy", CY, "4444", &[]),
            ]))
            .with_chat(chat);
        tokio::spawn(gatehouse_ingest::process_deliveries(
            api.clone(),
            stop.clone(),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let router = gatehouse_ingest::router(api.clone());
        let serve_stop = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { serve_stop.cancelled().await })
                .await
                .unwrap();
        });
        Self {
            db,
            slack,
            discord,
            key,
            _data: data,
            services,
            api,
            url,
            stop,
            http: reqwest::Client::new(),
        }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.services.stop().await;
        self.db.cleanup().await;
    }

    /// Posts a body to a Slack endpoint, signed at `at` (Unix seconds) unless told otherwise.
    async fn slack_post(
        &self,
        path: &str,
        body: &[u8],
        at: i64,
        signature: Option<String>,
    ) -> (u16, String) {
        let signature = signature
            .unwrap_or_else(|| gatehouse_slack::sign_request(SIGNING_SECRET.as_bytes(), at, body));
        let content_type = if path.ends_with("interactions") {
            "application/x-www-form-urlencoded"
        } else {
            "application/json"
        };
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .header("Content-Type", content_type)
            .header("X-Slack-Request-Timestamp", at.to_string())
            .header("X-Slack-Signature", signature)
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    /// An `app_mention` event (bolt-python's fixture) from `user` in `channel`.
    async fn slack_mention(&self, event_id: &str, channel: &str, user: &str, text: &str) -> String {
        let ts = self.slack.add_user_message(channel, user, text, None);
        let mut body: Value = serde_json::from_str(include_str!(
            "../../fixtures/slack/event_callback.app_mention.json"
        ))
        .unwrap();
        body["event_id"] = json!(event_id);
        body["event"]["channel"] = json!(channel);
        body["event"]["user"] = json!(user);
        body["event"]["ts"] = json!(ts);
        body["event"]["event_ts"] = json!(ts);
        body["event"]["text"] = json!(format!("<@{}> {text}", fake_slack::BOT_USER));
        let (status, answer) = self
            .slack_post(
                "/webhooks/slack/events",
                &serde_json::to_vec(&body).unwrap(),
                now(),
                None,
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        ts
    }

    /// The form body of a click on `action_id` (bolt-python's block_actions fixture).
    fn slack_click_body(&self, user: &str, channel: &str, action_id: &str) -> Vec<u8> {
        let mut payload: Value = serde_json::from_str(include_str!(
            "../../fixtures/slack/block_actions.button_with_message.json"
        ))
        .unwrap();
        payload["user"]["id"] = json!(user);
        payload["channel"]["id"] = json!(channel);
        payload["container"]["channel_id"] = json!(channel);
        payload["trigger_id"] = json!(format!("trigger-{}", Uuid::new_v4()));
        payload["actions"][0]["action_id"] = json!(action_id);
        payload["actions"][0]["value"] = json!(action_id);
        form(&payload)
    }

    async fn slack_click(&self, user: &str, channel: &str, action_id: &str) -> u16 {
        let body = self.slack_click_body(user, channel, action_id);
        let (status, answer) = self
            .slack_post("/webhooks/slack/interactions", &body, now(), None)
            .await;
        assert!(status == 200, "{status}: {answer}");
        status
    }

    /// Submits a send-back dialog Gatehouse opened.
    async fn slack_submit(&self, user: &str, view: &Value, target: &str, comment: &str) {
        let mut view = view.clone();
        view["id"] = json!(format!("V{}", Uuid::new_v4().simple()));
        view["state"] = json!({ "values": {
            "target": { "target": { "type": "static_select", "selected_option": {
                "text": { "type": "plain_text", "text": target }, "value": target } } },
            "comment": { "comment": { "type": "plain_text_input", "value": comment } },
        }});
        let payload = json!({
            "type": "view_submission",
            "team": { "id": "T111" },
            "user": { "id": user },
            "api_app_id": "A111",
            "trigger_id": format!("trigger-{}", Uuid::new_v4()),
            "view": view,
        });
        let (status, answer) = self
            .slack_post("/webhooks/slack/interactions", &form(&payload), now(), None)
            .await;
        assert_eq!(status, 200, "{answer}");
    }

    /// Posts a signed interaction to Discord's endpoint.
    async fn discord_post(&self, body: &Value) -> (u16, Value) {
        let body = serde_json::to_vec(body).unwrap();
        let timestamp = now().to_string();
        let signature = gatehouse_discord::sign_interaction(&self.key, &timestamp, &body);
        let response = self
            .http
            .post(format!("{}/webhooks/discord/interactions", self.url))
            .header("Content-Type", "application/json")
            .header("X-Signature-Ed25519", signature)
            .header("X-Signature-Timestamp", timestamp)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// A component interaction (Discord's docs sample) by `user` on `custom_id`.
    fn discord_click(&self, user: &str, custom_id: &str, values: &[&str]) -> Value {
        let mut body: Value = serde_json::from_str(include_str!(
            "../../fixtures/discord/interaction.message_component.discord-docs.json"
        ))
        .unwrap();
        body["id"] = json!(snowflake());
        body["token"] = json!(format!("token-{}", Uuid::new_v4().simple()));
        body["application_id"] = json!(FakeDiscord::APPLICATION_ID);
        body["member"]["user"]["id"] = json!(user);
        body["channel_id"] = json!(DISCORD_APPROVALS);
        body["data"] = json!({ "custom_id": custom_id, "component_type": if values.is_empty() { 2 } else { 3 }, "values": values });
        body
    }

    /// A modal submission answering a dialog Gatehouse opened.
    fn discord_submit(&self, user: &str, custom_id: &str, comment: &str) -> Value {
        json!({
            "type": 5, "id": snowflake(), "application_id": FakeDiscord::APPLICATION_ID,
            "token": format!("token-{}", Uuid::new_v4().simple()), "version": 1,
            "channel_id": DISCORD_APPROVALS, "guild_id": "290926798626357999",
            "member": { "user": { "id": user, "username": "someone" } },
            "data": { "custom_id": custom_id, "components": [
                { "type": 1, "components": [{ "type": 4, "custom_id": "comment", "value": comment }] }
            ] },
        })
    }

    /// Polls until `f` finds something (10 s at most).
    async fn until<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        for _ in 0..1000 {
            if let Some(found) = f() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {what}");
    }

    /// The only run, once it has `status`.
    async fn run_with_status(&self, status: &str) -> RunRow {
        for _ in 0..1000 {
            let runs = self.db.store.runs(None, 10).await.unwrap();
            if let [run] = runs.as_slice()
                && run.status == status
            {
                return run.clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "no single run became {status}: {:?}",
            self.db.store.runs(None, 10).await.unwrap()
        );
    }

    /// The node's attempt in `run`, once it waits for approval (or the state `status`).
    async fn node(&self, run: Uuid, node: &str, status: &str, attempt: u32) {
        for _ in 0..1000 {
            let row = self.db.store.run(run).await.unwrap().unwrap();
            let state: Value = serde_json::from_str(&row.state).unwrap();
            let n = &state["nodes"][node];
            if n["status"] == status && n["attempt"] == attempt {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{node} never became {status} at attempt {attempt}");
    }

    /// Slack cards (bot messages with Gatehouse buttons or outcomes) in a channel.
    fn slack_cards(&self, channel: &str) -> Vec<SlackMessage> {
        self.slack
            .messages(channel)
            .into_iter()
            .filter(|m| m.user == fake_slack::BOT_USER && m.text.starts_with("Approval needed"))
            .collect()
    }

    /// The gate decisions the scheduler applied.
    async fn applied(&self, run: Uuid) -> Vec<(String, String)> {
        self.db
            .store
            .decisions(run)
            .await
            .unwrap()
            .into_iter()
            .filter(|d| d.outcome == "applied")
            .map(|d| (d.decision, d.person))
            .collect()
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn snowflake() -> String {
    (1_200_000_000_000_000_000u64 + u64::from(rand::random::<u32>())).to_string()
}

fn form(payload: &Value) -> Vec<u8> {
    serde_urlencoded::to_string([("payload", payload.to_string())])
        .unwrap()
        .into_bytes()
}

/// Every Gatehouse control id in a message (Slack blocks or Discord components).
fn controls(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect(value, &mut found);
    found.sort();
    found.dedup();
    found
}

fn collect(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::String(s) if s.starts_with("gh:") => found.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
        Value::Object(map) => map.values().for_each(|v| collect(v, found)),
        _ => {}
    }
}

fn control(value: &Value, verb: &str) -> String {
    controls(value)
        .into_iter()
        .find(|c| c.starts_with(&format!("gh:{verb}:")))
        .unwrap_or_else(|| panic!("no {verb} control in {value}"))
}

on_both_backends!(
    a_slack_request_becomes_a_run_whose_card_decides_it,
    bad_slack_and_discord_requests_change_nothing,
    double_clicks_decide_once_and_old_cards_are_refused,
    unknown_people_requesters_and_non_approvers_are_refused,
    min_approvals_collects_distinct_people,
    discord_buttons_and_dialogs_decide_gates,
    a_card_posted_before_a_failure_is_not_posted_twice,
);

async fn a_slack_request_becomes_a_run_whose_card_decides_it(backend: Backend) {
    let hub = Hub::start(backend).await;
    // Slack checks the endpoint first.
    let challenge = json!({ "token": "t", "challenge": "3eZbrw1aB", "type": "url_verification" });
    let (status, answer) = hub
        .slack_post(
            "/webhooks/slack/events",
            challenge.to_string().as_bytes(),
            now(),
            None,
        )
        .await;
    assert_eq!(
        (status, answer.as_str()),
        (200, r#"{"challenge":"3eZbrw1aB"}"#)
    );

    let root = hub
        .slack_mention(
            "Ev1",
            REQUESTS,
            BO,
            "please fix the flaky login test\nit times out on CI",
        )
        .await;
    // Slack retries an event it thinks was not answered: same event id, stored once.
    let mut retry: Value = serde_json::from_str(include_str!(
        "../../fixtures/slack/event_callback.app_mention.json"
    ))
    .unwrap();
    retry["event_id"] = json!("Ev1");
    retry["event"]["channel"] = json!(REQUESTS);
    retry["event"]["user"] = json!(BO);
    retry["event"]["ts"] = json!(root);
    retry["event"]["text"] = json!("<@U0GATEHOUSE> please fix the flaky login test");
    let (status, _) = hub
        .slack_post(
            "/webhooks/slack/events",
            retry.to_string().as_bytes(),
            now(),
            None,
        )
        .await;
    assert_eq!(status, 200);

    let run = hub.run_with_status("waiting").await;
    let requirement = hub
        .db
        .store
        .requirement(run.requirement_id.unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(requirement.source_key, format!("slack:{REQUESTS}:{root}"));
    assert_eq!(requirement.title, "please fix the flaky login test");
    assert_eq!(requirement.requested_by, "bo");

    // One card in the approvals channel, one in the request's thread.
    let card = hub
        .until("the approvals card", || hub.slack_cards(APPROVALS).pop())
        .await;
    let in_thread = hub
        .until("the card in the thread", || {
            hub.slack_cards(REQUESTS)
                .into_iter()
                .find(|m| m.thread_ts.as_deref() == Some(root.as_str()))
        })
        .await;
    let approve = control(&card.blocks, "approve");
    assert_eq!(approve, format!("gh:approve:{}:1:check", run.id));
    assert_eq!(controls(&in_thread.blocks), controls(&card.blocks));
    let shown = card.blocks.to_string();
    assert!(shown.contains("draft/notes.md"), "{shown}");
    assert!(
        shown.contains(&format!("draft of {}", run.id)),
        "excerpt: {shown}"
    );
    assert!(shown.contains("group:leads"), "who may decide: {shown}");
    assert!(shown.contains("please fix the flaky login test"), "{shown}");
    // The request got one answer in its thread, and the run's progress one message.
    let replies = hub
        .until("the reply", || {
            let replies: Vec<_> = hub
                .slack
                .messages(REQUESTS)
                .into_iter()
                .filter(|m| {
                    m.user == fake_slack::BOT_USER && m.text.contains("Noted as a requirement")
                })
                .collect();
            (!replies.is_empty()).then_some(replies)
        })
        .await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].thread_ts.as_deref(), Some(root.as_str()));
    assert!(
        replies[0].text.contains(&run.id.to_string()),
        "{}",
        replies[0].text
    );

    assert_eq!(hub.slack_click(ANA, APPROVALS, &approve).await, 200);
    hub.run_with_status("succeeded").await;
    assert_eq!(
        hub.applied(run.id).await,
        vec![("approve".into(), "ana".into())]
    );
    // Every card of the gate shows who decided, and no buttons.
    for channel in [APPROVALS, REQUESTS] {
        hub.until("decided cards", || {
            hub.slack_cards(channel)
                .into_iter()
                .all(|c| {
                    controls(&c.blocks).is_empty()
                        && c.blocks.to_string().contains("Approved by ana")
                })
                .then_some(())
        })
        .await;
    }
    let progress = hub
        .until("progress that says succeeded", || {
            let progress: Vec<_> = hub
                .slack
                .messages(REQUESTS)
                .into_iter()
                .filter(|m| m.text.starts_with("Run ") && m.user == fake_slack::BOT_USER)
                .collect();
            progress
                .iter()
                .all(|m| m.text.ends_with("succeeded"))
                .then_some(progress)
        })
        .await;
    assert_eq!(
        progress.len(),
        1,
        "one progress message, edited: {progress:?}"
    );
    assert!(progress[0].updates >= 1);
    assert_eq!(progress[0].thread_ts.as_deref(), Some(root.as_str()));
    // No more than that: one card per place, one reply, one progress message.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        hub.slack.calls_of("chat.postMessage").len(),
        4,
        "{:?}",
        hub.slack.calls()
    );
    hub.stop().await;
}

async fn bad_slack_and_discord_requests_change_nothing(backend: Backend) {
    let hub = Hub::start(backend).await;
    let event = serde_json::to_vec(&json!({
        "type": "event_callback", "event_id": "Ev-bad", "team_id": "T1",
        "event": { "type": "app_mention", "user": BO, "channel": REQUESTS, "ts": "1.000001",
                   "text": "<@U0GATEHOUSE> run review" },
    }))
    .unwrap();
    let forged = gatehouse_slack::sign_request(b"not the secret", now(), &event);
    let (status, answer) = hub
        .slack_post("/webhooks/slack/events", &event, now(), Some(forged))
        .await;
    assert_eq!(status, 401, "{answer}");
    let stale = now() - 301;
    let (status, answer) = hub
        .slack_post("/webhooks/slack/events", &event, stale, None)
        .await;
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("possible replay"), "{answer}");
    let (status, _) = hub
        .slack_post("/webhooks/slack/events", b"{not json", now(), None)
        .await;
    assert_eq!(status, 400);
    let (status, _) = hub
        .slack_post("/webhooks/slack/interactions", b"nothing=here", now(), None)
        .await;
    assert_eq!(status, 400);
    let huge = vec![b'a'; 128 * 1024];
    let (status, _) = hub
        .slack_post("/webhooks/slack/events", &huge, now(), None)
        .await;
    assert_eq!(status, 413);
    // A button Gatehouse never made: answered only to the clicker.
    assert_eq!(hub.slack_click(BO, APPROVALS, "deploy_now").await, 200);
    let ephemeral = hub
        .until("the ephemeral answer", || hub.slack.ephemerals().pop())
        .await;
    assert_eq!(ephemeral.user, BO);
    assert!(
        ephemeral.text.contains("not one Gatehouse knows"),
        "{}",
        ephemeral.text
    );

    // Discord: PING → PONG, a forged signature is 401, a body that is not an interaction 400.
    let ping: Value = serde_json::from_str(include_str!(
        "../../fixtures/discord/interaction.ping.discord-interactions-js.json"
    ))
    .unwrap();
    assert_eq!(hub.discord_post(&ping).await, (200, json!({ "type": 1 })));
    let body = ping.to_string();
    let other = SigningKey::generate(&mut rand::rngs::OsRng);
    let response = hub
        .http
        .post(format!("{}/webhooks/discord/interactions", hub.url))
        .header(
            "X-Signature-Ed25519",
            gatehouse_discord::sign_interaction(&other, "1", body.as_bytes()),
        )
        .header("X-Signature-Timestamp", "1")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let (status, _) = hub.discord_post(&json!({ "hello": "world" })).await;
    assert_eq!(status, 400);
    let (status, answer) = hub
        .discord_post(&hub.discord_click("4242", "click_one", &[]))
        .await;
    assert_eq!(status, 200);
    assert_eq!(answer["type"], 4);
    assert_eq!(answer["data"]["flags"], 64);

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hub.db.store.runs(None, 10).await.unwrap().is_empty());
    assert!(
        hub.db
            .store
            .pending_deliveries(10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        hub.db
            .store
            .delivery("slack", "Ev-bad")
            .await
            .unwrap()
            .is_none()
    );
    hub.stop().await;
}

/// Starts `review` from the requests channel and waits for its card.
async fn review_waiting(hub: &Hub) -> (RunRow, SlackMessage) {
    hub.slack_mention(
        &format!("Ev{}", Uuid::new_v4().simple()),
        REQUESTS,
        CY,
        "run review",
    )
    .await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the card", || hub.slack_cards(APPROVALS).pop())
        .await;
    (run, card)
}

async fn double_clicks_decide_once_and_old_cards_are_refused(backend: Backend) {
    let hub = Hub::start(backend).await;
    let (run, card) = review_waiting(&hub).await;
    // Send back: the click opens a dialog listing the targets, its submission decides.
    let send_back = control(&card.blocks, "send-back");
    hub.slack_click(ANA, APPROVALS, &send_back).await;
    let view = hub.until("the dialog", || hub.slack.views().pop()).await;
    assert!(view.to_string().contains("draft"), "{view}");
    hub.slack_submit(ANA, &view, "draft", "tighten the wording")
        .await;
    hub.node(run.id, "check", "waiting_approval", 2).await;
    assert_eq!(
        hub.applied(run.id).await,
        vec![("send_back".into(), "ana".into())]
    );
    let second = hub
        .until("the card of attempt 2", || {
            hub.slack_cards(APPROVALS)
                .into_iter()
                .find(|c| controls(&c.blocks).iter().any(|id| id.contains(":2:check")))
        })
        .await;
    // The first card now says what happened to attempt 1 and has no buttons.
    hub.until("the first card settled", || {
        hub.slack_cards(APPROVALS)
            .into_iter()
            .find(|c| c.ts == card.ts && c.blocks.to_string().contains("Sent back to draft by ana"))
    })
    .await;

    // A click on the old card: refused, only the clicker is told.
    hub.slack_click(BO, APPROVALS, &control(&card.blocks, "approve"))
        .await;
    let refused = hub
        .until("the stale-card answer", || {
            hub.slack.ephemerals().into_iter().find(|e| e.user == BO)
        })
        .await;
    assert!(refused.text.contains("attempt 1"), "{}", refused.text);

    // Two people click at once: one decision; the other is told who made it.
    let approve = control(&second.blocks, "approve");
    let (a, b) = tokio::join!(
        hub.slack_click(ANA, APPROVALS, &approve),
        hub.slack_click(BO, APPROVALS, &approve)
    );
    assert_eq!((a, b), (200, 200));
    hub.run_with_status("succeeded").await;
    let applied = hub.applied(run.id).await;
    assert_eq!(applied.len(), 2, "{applied:?}");
    let winner = applied[1].1.clone();
    let loser = if winner == "ana" { BO } else { ANA };
    let told = hub
        .until("the loser's answer", || {
            hub.slack
                .ephemerals()
                .into_iter()
                .find(|e| e.user == loser && e.text.contains("already approved"))
        })
        .await;
    assert!(told.text.contains(&format!("by {winner}")), "{}", told.text);
    // A double click by the same person does nothing more.
    hub.slack_click(ANA, APPROVALS, &approve).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hub.applied(run.id).await.len(), 2);
    hub.stop().await;
}

async fn unknown_people_requesters_and_non_approvers_are_refused(backend: Backend) {
    let hub = Hub::start(backend).await;
    // Someone not in [[people]] asks for work: a polite no, nothing created.
    hub.slack_mention("Ev-eve", REQUESTS, EVE, "please delete the prod database")
        .await;
    let no = hub
        .until("the answer to a stranger", || {
            hub.slack
                .messages(REQUESTS)
                .into_iter()
                .find(|m| m.user == fake_slack::BOT_USER)
        })
        .await;
    assert!(no.text.contains("Sorry"), "{}", no.text);
    assert!(hub.db.store.runs(None, 10).await.unwrap().is_empty());

    // bo asks (and is a lead); the gate forbids the requester from approving.
    hub.slack_mention("Ev-bo", REQUESTS, BO, "run review").await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the card", || hub.slack_cards(APPROVALS).pop())
        .await;
    let approve = control(&card.blocks, "approve");
    for (user, why) in [
        (EVE, "not one of the people configured"),
        (BO, "requester"),
        (CY, "may not decide"),
    ] {
        hub.slack_click(user, APPROVALS, &approve).await;
        let answer = hub
            .until("the refusal", || {
                hub.slack.ephemerals().into_iter().find(|e| e.user == user)
            })
            .await;
        assert!(answer.text.contains(why), "{user}: {}", answer.text);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(hub.applied(run.id).await.is_empty());
    assert_eq!(
        hub.db.store.run(run.id).await.unwrap().unwrap().status,
        "waiting"
    );
    hub.stop().await;
}

async fn min_approvals_collects_distinct_people(backend: Backend) {
    let hub = Hub::start(backend).await;
    hub.slack_mention("Ev-pair", APPROVALS, CY, "run pair")
        .await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the card", || hub.slack_cards(APPROVALS).pop())
        .await;
    let approve = control(&card.blocks, "approve");
    hub.slack_click(ANA, APPROVALS, &approve).await;
    hub.until("one approval on the card", || {
        hub.slack_cards(APPROVALS).into_iter().find(|c| {
            c.blocks
                .to_string()
                .contains("1 of 2 approvals so far: ana")
        })
    })
    .await;
    hub.slack_click(ANA, APPROVALS, &approve).await;
    let again = hub
        .until("the answer to a second approval", || {
            hub.slack.ephemerals().into_iter().find(|e| e.user == ANA)
        })
        .await;
    assert!(
        again.text.contains("ana has already approved"),
        "{}",
        again.text
    );
    assert_eq!(
        hub.db.store.run(run.id).await.unwrap().unwrap().status,
        "waiting"
    );
    hub.slack_click(BO, APPROVALS, &approve).await;
    hub.run_with_status("succeeded").await;
    hub.until("the outcome with both approvers", || {
        hub.slack_cards(APPROVALS)
            .into_iter()
            .find(|c| c.blocks.to_string().contains("Approved by ana, bo"))
    })
    .await;
    hub.stop().await;
}

async fn discord_buttons_and_dialogs_decide_gates(backend: Backend) {
    let hub = Hub::start(backend).await;
    let sink = DiscordSink::new(hub.api.clone());
    let mention = |id: &str, text: &str| gatehouse_discord::Mention {
        message_id: id.into(),
        channel_id: DISCORD_REQUESTS.into(),
        guild_id: Some("290926798626357999".into()),
        author: "4444".into(),
        text: text.into(),
        reply_to: None,
    };
    sink.mention(mention(
        "1300000000000000001",
        "the export button is broken",
    ))
    .await;
    // The gateway may replay a message after a resume: stored once.
    sink.mention(mention(
        "1300000000000000001",
        "the export button is broken",
    ))
    .await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the Discord card", || {
            hub.discord
                .messages(DISCORD_APPROVALS)
                .into_iter()
                .find(|m| !m.components.is_empty())
        })
        .await;
    let components = Value::Array(card.components.clone());
    let reply = hub
        .until("the reply", || {
            hub.discord
                .messages(DISCORD_REQUESTS)
                .into_iter()
                .find(|m| m.content.contains("Noted as a requirement"))
        })
        .await;
    assert_eq!(
        reply.message_reference.as_ref().unwrap()["message_id"],
        "1300000000000000001"
    );

    // Send back: choosing a target opens a dialog; its submission decides.
    let (status, dialog) = hub
        .discord_post(&hub.discord_click("4242", &control(&components, "send-back"), &["draft"]))
        .await;
    assert_eq!((status, dialog["type"].clone()), (200, json!(9)));
    let custom_id = dialog["data"]["custom_id"].as_str().unwrap().to_owned();
    let (status, answer) = hub
        .discord_post(&hub.discord_submit("4242", &custom_id, "split the commit"))
        .await;
    assert_eq!((status, answer), (200, json!({ "type": 6 })));
    hub.node(run.id, "check", "waiting_approval", 2).await;
    let comment = hub.db.store.decisions(run.id).await.unwrap()[0]
        .comment
        .clone();
    assert_eq!(comment.as_deref(), Some("split the commit"));

    // The old card's buttons are gone; the new card's reject asks for confirmation first.
    hub.until("the first card settled", || {
        hub.discord
            .message(&card.id)
            .filter(|m| m.components.is_empty() && m.edits > 0)
    })
    .await;
    let second = hub
        .until("the card of attempt 2", || {
            hub.discord
                .messages(DISCORD_APPROVALS)
                .into_iter()
                .find(|m| {
                    controls(&Value::Array(m.components.clone()))
                        .iter()
                        .any(|c| c.contains(":2:check"))
                })
        })
        .await;
    let reject = control(&Value::Array(second.components.clone()), "reject");
    // A click on the old card: deferred, then refused only to the clicker.
    let stale = hub.discord_click("4343", &control(&components, "approve"), &[]);
    let token = stale["token"].as_str().unwrap().to_owned();
    assert_eq!(hub.discord_post(&stale).await, (200, json!({ "type": 6 })));
    let followup = hub
        .until("the stale-card answer", || {
            hub.discord
                .followups()
                .into_iter()
                .find(|f| f.token == token)
        })
        .await;
    assert_eq!(followup.flags, 64);
    assert!(
        followup.content.contains("attempt 1"),
        "{}",
        followup.content
    );

    let (_, confirm) = hub
        .discord_post(&hub.discord_click("4343", &reject, &[]))
        .await;
    assert_eq!(confirm["type"], 9);
    assert_eq!(
        hub.db.store.run(run.id).await.unwrap().unwrap().status,
        "waiting"
    );
    let confirm_id = confirm["data"]["custom_id"].as_str().unwrap().to_owned();
    hub.discord_post(&hub.discord_submit("4343", &confirm_id, "not needed after all"))
        .await;
    hub.run_with_status("failed").await;
    hub.until("the second card settled", || {
        hub.discord.message(&second.id).filter(|m| {
            m.components.is_empty()
                && serde_json::to_string(&m.embeds)
                    .unwrap()
                    .contains("Rejected by bo")
        })
    })
    .await;
    hub.stop().await;
}

async fn a_card_posted_before_a_failure_is_not_posted_twice(backend: Backend) {
    let slack = FakeSlack::start().await;
    let discord = FakeDiscord::start().await;
    // Both platforms store the card, then fail the request: the caller cannot tell it
    // worked, as after a crash between "posted" and "id stored".
    slack.fail_next("chat.postMessage", Fault::StoreThenStatus(500));
    slack.fail_next("chat.postMessage", Fault::RateLimited { retry_after: 1 });
    discord.store_then_fail_creates(1);
    let hub = Hub::start_with(backend, slack, discord).await;
    let (run, _) = review_waiting(&hub).await;
    let approve = format!("gh:approve:{}:1:check", run.id);
    hub.until("the Discord card", || {
        hub.discord
            .messages(DISCORD_APPROVALS)
            .into_iter()
            .find(|m| controls(&Value::Array(m.components.clone())).contains(&approve))
    })
    .await;
    hub.slack_click(ANA, APPROVALS, &approve).await;
    hub.run_with_status("succeeded").await;
    hub.until("the settled cards", || {
        let slack_done = hub
            .slack_cards(APPROVALS)
            .iter()
            .all(|c| controls(&c.blocks).is_empty());
        let discord_done = hub
            .discord
            .messages(DISCORD_APPROVALS)
            .iter()
            .all(|m| m.components.is_empty());
        (slack_done && discord_done).then_some(())
    })
    .await;
    assert_eq!(
        hub.slack_cards(APPROVALS).len(),
        1,
        "{:?}",
        hub.slack.calls()
    );
    assert_eq!(hub.discord.messages(DISCORD_APPROVALS).len(), 1);
    hub.stop().await;
}
