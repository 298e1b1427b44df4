//! The Web API calls the notifier and ingest make; [`crate::transport`] sends them.
//!
//! Requests are JSON values rather than slack-morphism's typed requests so Block Kit and
//! message metadata reach Slack exactly as `blocks.rs` wrote them; answers are read into
//! small local structs that ignore what they do not need, so an unusual message elsewhere
//! in a channel's history cannot break a lookup.

use std::collections::HashMap;
use std::sync::Arc;

use secrecy::SecretString;
use serde::Deserialize;
use serde_json::{Value, json};
use slack_morphism::prelude::SlackMessageMetadata;

use crate::blocks::Message;
use crate::error::SlackError;
use crate::pace::Pace;
use crate::transport::{BACKOFF, Failure, MAX_FAILURES, Request, Transport, read};

/// The metadata event type Gatehouse marks its messages with.
const EVENT_TYPE: &str = "gatehouse";
/// Pages of history `find_message` reads before giving up.
const MAX_PAGES: usize = 5;
/// How far before a failed post `post_message` looks for the copy Slack may have stored;
/// generous, to allow for clock skew.
const LOOKBACK_SECONDS: i64 = 600;

/// A bot's handle on the Slack Web API. Cheap to clone; clones share the connection pool
/// and the per-channel pacing.
#[derive(Clone)]
pub struct SlackClient {
    transport: Arc<Transport>,
    pace: Pace,
}

impl std::fmt::Debug for SlackClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackClient")
            .field("api_url", &self.transport.api_url)
            .finish_non_exhaustive()
    }
}

impl SlackClient {
    /// A client for the Web API at `api_url` (`https://slack.com/api`, or a fake's URL in
    /// tests; plain `http` is allowed for those), acting with `bot_token`.
    pub fn new(api_url: &str, bot_token: SecretString) -> Result<Self, SlackError> {
        Ok(Self {
            transport: Arc::new(Transport::new(api_url, bot_token)?),
            pace: Pace::default(),
        })
    }

    /// Posts `message` to `channel` (in the thread `thread_ts`, if given) and returns its
    /// `ts`. `key` goes into the message's metadata so [`Self::find_message`] can find it
    /// again; after a failure Slack may have stored the message anyway, so this looks for
    /// it before posting again, and a retried post does not show twice.
    pub async fn post_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        message: &Message,
        key: &str,
    ) -> Result<String, SlackError> {
        const METHOD: &str = "chat.postMessage";
        let metadata = SlackMessageMetadata {
            event_type: EVENT_TYPE.to_owned(),
            event_payload: Some(HashMap::from([("key".to_owned(), key.to_owned())])),
        };
        let mut body = json!({
            "channel": channel,
            "text": message.text,
            "blocks": message.blocks,
            "metadata": metadata,
            "unfurl_links": false,
            "unfurl_media": false,
        });
        if let Some(thread_ts) = thread_ts {
            body["thread_ts"] = thread_ts.into();
        }
        let oldest = format!(
            "{}.000000",
            chrono::Utc::now().timestamp() - LOOKBACK_SECONDS
        );
        self.pace.wait(channel).await;
        let mut failures = 0;
        loop {
            match self.transport.attempt(METHOD, &Request::Post(&body)).await {
                Ok(answer) => return read::<Posted>(METHOD, answer).map(|p| p.ts),
                Err(Failure::Final(error)) => return Err(error),
                Err(Failure::Transient(why)) if failures < MAX_FAILURES => {
                    tokio::time::sleep(BACKOFF * 2u32.pow(failures)).await;
                    failures += 1;
                    tracing::debug!(channel, key, %why, "looking for a post Slack may have kept");
                    match self.find_message(channel, thread_ts, key, &oldest).await {
                        Ok(Some(ts)) => return Ok(ts),
                        Ok(None) => continue,
                        Err(_) => return Err(SlackError::Unavailable(why)),
                    }
                }
                Err(Failure::Transient(why)) => return Err(SlackError::Unavailable(why)),
            }
        }
    }

    /// The `ts` of the message posted with `key` in `channel` (in the thread `thread_ts`,
    /// if given) at or after `oldest` (a Slack ts such as `1700000000.000000`), if there is
    /// one: how a notifier that crashed between posting and recording the post finds it.
    pub async fn find_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        key: &str,
        oldest: &str,
    ) -> Result<Option<String>, SlackError> {
        let method = match thread_ts {
            Some(_) => "conversations.replies",
            None => "conversations.history",
        };
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = [
                ("channel", Some(channel.to_owned())),
                ("ts", thread_ts.map(str::to_owned)),
                ("oldest", Some(oldest.to_owned())),
                ("inclusive", Some("true".to_owned())),
                ("include_all_metadata", Some("true".to_owned())),
                ("limit", Some("200".to_owned())),
                ("cursor", cursor),
            ];
            let page: History = read(
                method,
                self.transport.call(method, &Request::Get(&params)).await?,
            )?;
            if let Some(found) = page.messages.into_iter().find(|m| m.has_key(key)) {
                return Ok(Some(found.ts));
            }
            cursor = page
                .response_metadata
                .and_then(|m| m.next_cursor)
                .filter(|c| !c.is_empty());
            if cursor.is_none() {
                return Ok(None);
            }
        }
        tracing::warn!(
            channel,
            key,
            "gave up looking for a message after {MAX_PAGES} pages"
        );
        Ok(None)
    }

    /// Replaces the text and blocks of the message `ts` in `channel` (a card once decided,
    /// a progress message as the run moves). Its metadata stays.
    pub async fn update_message(
        &self,
        channel: &str,
        ts: &str,
        message: &Message,
    ) -> Result<(), SlackError> {
        let body = json!({
            "channel": channel,
            "ts": ts,
            "text": message.text,
            "blocks": message.blocks,
        });
        self.transport
            .call("chat.update", &Request::Post(&body))
            .await?;
        Ok(())
    }

    /// Shows `text` to `user` alone in `channel`: why a click was refused, without telling
    /// everyone.
    pub async fn post_ephemeral(
        &self,
        channel: &str,
        user: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> Result<(), SlackError> {
        let mut body = json!({"channel": channel, "user": user, "text": text});
        if let Some(thread_ts) = thread_ts {
            body["thread_ts"] = thread_ts.into();
        }
        self.transport
            .call("chat.postEphemeral", &Request::Post(&body))
            .await?;
        Ok(())
    }

    /// Opens a modal (the send-back form) for the click that gave `trigger_id`.
    pub async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<(), SlackError> {
        let body = json!({"trigger_id": trigger_id, "view": view});
        self.transport
            .call("views.open", &Request::Post(&body))
            .await?;
        Ok(())
    }

    /// The bot's own user id, to recognise mentions of it; also proves the token works.
    pub async fn bot_user_id(&self) -> Result<String, SlackError> {
        const METHOD: &str = "auth.test";
        let answer = self
            .transport
            .call(METHOD, &Request::Post(&json!({})))
            .await?;
        read::<AuthTest>(METHOD, answer).map(|a| a.user_id)
    }
}

#[derive(Deserialize)]
struct Posted {
    ts: String,
}

#[derive(Deserialize)]
struct AuthTest {
    user_id: String,
}

#[derive(Deserialize)]
struct History {
    #[serde(default)]
    messages: Vec<HistoryMessage>,
    response_metadata: Option<ResponseMetadata>,
}

#[derive(Deserialize)]
struct ResponseMetadata {
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct HistoryMessage {
    ts: String,
    metadata: Option<Metadata>,
}

/// Read loosely: other apps' metadata may hold anything.
#[derive(Deserialize)]
struct Metadata {
    event_type: Option<String>,
    #[serde(default)]
    event_payload: Value,
}

impl HistoryMessage {
    fn has_key(&self, key: &str) -> bool {
        self.metadata.as_ref().is_some_and(|m| {
            m.event_type.as_deref() == Some(EVENT_TYPE) && m.event_payload["key"] == key
        })
    }
}
