//! Slack and Discord for the harness: the channels and people chat tests use, how ingest
//! and the notifier are wired to the fakes, and verbs that sign and send what the platforms
//! would (a mention, a click, a dialog submitted).

use ed25519_dalek::SigningKey;
use gatehouse_discord::{DiscordClient, PublicKey};
use gatehouse_ingest::{ChatSettings, DiscordSettings, Person, SlackSettings};
use gatehouse_notifier::{ChatOutputs, DiscordOutput, SlackOutput};
use gatehouse_slack::SlackClient;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Gatehouse, GatehouseBuilder};
use crate::Backend;
use crate::fake_discord::FakeDiscord;
use crate::fake_slack::{self, FakeSlack, SlackMessage};

pub const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub const REVIEW: &str = "name: review\nnodes:\n  draft: { kind: script, run: 'echo \"draft of $GATEHOUSE_RUN_ID\" > $GATEHOUSE_ARTIFACTS/notes.md', artifacts: [notes.md] }\n  check: { kind: gate, needs: [draft], approvers: [group:leads], send_back: [draft] }\n  after: { kind: script, needs: [check], run: 'true' }\n";
pub const PAIR: &str =
    "name: pair\nnodes:\n  check: { kind: gate, approvers: [group:leads], min_approvals: 2 }\n";
/// Where approval cards go by default.
pub const APPROVALS: &str = "C0APPROVALS";
/// A channel whose free-text requests start `review`.
pub const REQUESTS: &str = "C0REQUESTS";
pub const DISCORD_APPROVALS: &str = "900000000000000001";
pub const DISCORD_REQUESTS: &str = "900000000000000002";
pub const ANA: &str = "U0ANA";
pub const BO: &str = "U0BO";
pub const CY: &str = "U0CY";
pub const EVE: &str = "U0EVE";

/// A Gatehouse with the `review` and `pair` SOPs, the people ana and bo (leads) and cy,
/// and Slack and Discord wired: requests in [`REQUESTS`] start `review`, cards go to
/// [`APPROVALS`].
pub fn builder(backend: Backend) -> GatehouseBuilder {
    Gatehouse::builder(backend)
        .sops(&[("review", REVIEW), ("pair", PAIR)])
        .people(people())
        .chat()
}

/// ana and bo (leads) and cy, on Slack and Discord.
pub fn people() -> Vec<Person> {
    let person = |id: &str, slack: &str, discord: &str, groups: &[&str]| Person {
        id: id.into(),
        github: None,
        slack: Some(slack.into()),
        discord: Some(discord.into()),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    };
    vec![
        person("ana", ANA, "4242", &["leads"]),
        person("bo", BO, "4343", &["leads"]),
        person("cy", CY, "4444", &[]),
    ]
}

/// What ingest checks Slack's and Discord's requests with, and where mentions start runs.
pub(super) fn settings(slack: &FakeSlack, key: &SigningKey) -> ChatSettings {
    ChatSettings {
        slack: Some(SlackSettings {
            signing_secret: SIGNING_SECRET.as_bytes().to_vec(),
            client: Some(slack_client(slack)),
            channel_sops: [(REQUESTS.to_owned(), "review".to_owned())].into(),
            max_body_bytes: 64 * 1024,
        }),
        discord: Some(DiscordSettings {
            public_key: PublicKey::from_hex(&hex::encode(key.verifying_key().as_bytes())).unwrap(),
            channel_sops: [(DISCORD_REQUESTS.to_owned(), "review".to_owned())].into(),
            max_body_bytes: 64 * 1024,
        }),
    }
}

/// Where the notifier posts cards and progress.
pub(super) fn outputs(slack: &FakeSlack, discord: &FakeDiscord) -> ChatOutputs {
    ChatOutputs {
        slack: Some(SlackOutput {
            client: slack_client(slack),
            approvals_channel: Some(APPROVALS.into()),
        }),
        discord: Some(DiscordOutput {
            client: DiscordClient::new(
                &discord.api_url(),
                FakeDiscord::TOKEN.into(),
                FakeDiscord::APPLICATION_ID,
            )
            .unwrap(),
            approvals_channel: Some(DISCORD_APPROVALS.into()),
        }),
    }
}

fn slack_client(slack: &FakeSlack) -> SlackClient {
    SlackClient::new(&slack.api_url(), fake_slack::BOT_TOKEN.into()).unwrap()
}

impl Gatehouse {
    /// Posts a body to a Slack endpoint, signed at `at` (Unix seconds) unless told otherwise.
    pub async fn slack_post(
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
    pub async fn slack_mention(
        &self,
        event_id: &str,
        channel: &str,
        user: &str,
        text: &str,
    ) -> String {
        self.slack_mention_in(event_id, channel, None, user, text)
            .await
    }

    /// [`Gatehouse::slack_mention`] in the thread `thread_ts` (a reply), or at the top of
    /// the channel.
    pub async fn slack_mention_in(
        &self,
        event_id: &str,
        channel: &str,
        thread_ts: Option<&str>,
        user: &str,
        text: &str,
    ) -> String {
        let mention = format!("<@{}> {text}", fake_slack::BOT_USER);
        self.slack_message(event_id, channel, thread_ts, user, text, |event| {
            event["text"] = json!(mention);
        })
        .await
    }

    /// A direct message from `user` to the bot in the direct channel `channel` (Slack's
    /// `message` event in an `im`, no mention), in `thread_ts` when given; its ts.
    pub async fn slack_direct_message(
        &self,
        event_id: &str,
        channel: &str,
        thread_ts: Option<&str>,
        user: &str,
        text: &str,
    ) -> String {
        self.slack_message(event_id, channel, thread_ts, user, text, |event| {
            event["type"] = json!("message");
            event["channel_type"] = json!("im");
        })
        .await
    }

    /// Posts `user`'s `text` in `channel` as Slack's app_mention fixture, changed by `shape`.
    async fn slack_message(
        &self,
        event_id: &str,
        channel: &str,
        thread_ts: Option<&str>,
        user: &str,
        text: &str,
        shape: impl FnOnce(&mut Value),
    ) -> String {
        let ts = self.slack.add_user_message(channel, user, text, thread_ts);
        let mut body: Value = serde_json::from_str(include_str!(
            "../../fixtures/slack/event_callback.app_mention.json"
        ))
        .unwrap();
        body["event_id"] = json!(event_id);
        body["event"]["channel"] = json!(channel);
        body["event"]["user"] = json!(user);
        body["event"]["ts"] = json!(ts);
        body["event"]["event_ts"] = json!(ts);
        body["event"]["text"] = json!(text);
        shape(&mut body["event"]);
        if let Some(thread_ts) = thread_ts {
            body["event"]["thread_ts"] = json!(thread_ts);
        }
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
    pub fn slack_click_body(&self, user: &str, channel: &str, action_id: &str) -> Vec<u8> {
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

    pub async fn slack_click(&self, user: &str, channel: &str, action_id: &str) -> u16 {
        let body = self.slack_click_body(user, channel, action_id);
        let (status, answer) = self
            .slack_post("/webhooks/slack/interactions", &body, now(), None)
            .await;
        assert!(status == 200, "{status}: {answer}");
        status
    }

    /// Submits a send-back dialog Gatehouse opened.
    pub async fn slack_submit(&self, user: &str, view: &Value, target: &str, comment: &str) {
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
    pub async fn discord_post(&self, body: &Value) -> (u16, Value) {
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
    pub fn discord_click(&self, user: &str, custom_id: &str, values: &[&str]) -> Value {
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
    pub fn discord_submit(&self, user: &str, custom_id: &str, comment: &str) -> Value {
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

    /// Slack cards (bot messages with Gatehouse buttons or outcomes) in a channel.
    pub fn slack_cards(&self, channel: &str) -> Vec<SlackMessage> {
        self.slack
            .messages(channel)
            .into_iter()
            .filter(|m| m.user == fake_slack::BOT_USER && m.text.starts_with("Approval needed"))
            .collect()
    }

    /// The gate decisions the scheduler applied.
    pub async fn applied(&self, run: Uuid) -> Vec<(String, String)> {
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

pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

pub fn snowflake() -> String {
    (1_200_000_000_000_000_000u64 + u64::from(rand::random::<u32>())).to_string()
}

pub fn form(payload: &Value) -> Vec<u8> {
    serde_urlencoded::to_string([("payload", payload.to_string())])
        .unwrap()
        .into_bytes()
}

/// Every Gatehouse control id in a message (Slack blocks or Discord components).
pub fn controls(value: &Value) -> Vec<String> {
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

pub fn control(value: &Value, verb: &str) -> String {
    controls(value)
        .into_iter()
        .find(|c| c.starts_with(&format!("gh:{verb}:")))
        .unwrap_or_else(|| panic!("no {verb} control in {value}"))
}
