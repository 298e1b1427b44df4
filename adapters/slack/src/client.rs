//! The Web API calls the notifier and ingest make, over slack-morphism's hyper connector.
//!
//! Requests are JSON values rather than slack-morphism's typed requests so Block Kit and
//! message metadata reach Slack exactly as `blocks.rs` wrote them; answers are read into
//! small local structs that ignore what they do not need, so an unusual message elsewhere
//! in a channel's history cannot break a lookup.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::{
    SlackApiToken, SlackApiTokenValue, SlackClientApiCallContext, SlackClientHttpConnector,
    SlackClientHyperConnector, SlackHyperHttpsConnector, SlackMessageMetadata,
};

use crate::blocks::Message;
use crate::error::SlackError;
use crate::pace::Pace;

/// The metadata event type Gatehouse marks its messages with.
const EVENT_TYPE: &str = "gatehouse";
/// Rate-limit retries per call, and the longest total wait for them: a notifier stuck
/// longer than this is better off retrying the whole delivery later.
const MAX_RATE_LIMITED: u32 = 3;
const RATE_LIMIT_BUDGET: Duration = Duration::from_secs(60);
/// Used when a 429 comes without `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// Retries after a network failure or a 5xx, with a doubling pause from `BACKOFF`.
const MAX_FAILURES: u32 = 2;
const BACKOFF: Duration = Duration::from_millis(250);
/// A hung connection must not hold a notifier forever.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Pages of history `find_message` reads before giving up.
const MAX_PAGES: usize = 5;
/// How far before a failed post `post_message` looks for the copy Slack may have stored;
/// generous, to allow for clock skew.
const LOOKBACK_SECONDS: i64 = 600;
/// Slack's own answers for a passing failure on its side.
const TRANSIENT_ERRORS: [&str; 4] = [
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
];

/// A bot's handle on the Slack Web API. Cheap to clone; clones share the connection pool
/// and the per-channel pacing.
#[derive(Clone)]
pub struct SlackClient {
    connector: Arc<SlackClientHyperConnector<SlackHyperHttpsConnector>>,
    api_url: String,
    token: Arc<SecretString>,
    pace: Pace,
}

impl std::fmt::Debug for SlackClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackClient")
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

/// One request's parameters.
enum Request<'a> {
    /// A JSON body.
    Post(&'a Value),
    /// Query parameters, for the read methods that take no JSON.
    Get(&'a [(&'a str, Option<String>)]),
}

/// How one attempt failed, deciding whether to try again.
enum Failure {
    /// Do not retry.
    Final(SlackError),
    /// The network or Slack failed; Slack may or may not have acted.
    Transient(String),
}

impl SlackClient {
    /// A client for the Web API at `api_url` (`https://slack.com/api`, or a fake's URL in
    /// tests; plain `http` is allowed for those), acting with `bot_token`.
    pub fn new(api_url: &str, bot_token: SecretString) -> Result<Self, SlackError> {
        let parsed = url::Url::parse(api_url)
            .map_err(|e| SlackError::Setup(format!("api_url `{api_url}` is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "https" | "http") {
            return Err(SlackError::Setup(format!(
                "api_url `{api_url}` must be an https:// (or, for tests, http://) URL"
            )));
        }
        if bot_token.expose_secret().trim().is_empty() {
            return Err(SlackError::Setup("the Slack bot token is empty".into()));
        }
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| {
                SlackError::Setup(format!(
                    "cannot load the system's root certificates for TLS: {e}"
                ))
            })?
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let api_url = api_url.trim_end_matches('/').to_owned();
        Ok(Self {
            connector: Arc::new(
                SlackClientHyperConnector::with_connector(https).with_slack_api_url(&api_url),
            ),
            api_url,
            token: Arc::new(bot_token),
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
            match self.attempt(METHOD, &Request::Post(&body)).await {
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
            let page: History = read(method, self.call(method, &Request::Get(&params)).await?)?;
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
        self.call("chat.update", &Request::Post(&body)).await?;
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
        self.call("chat.postEphemeral", &Request::Post(&body))
            .await?;
        Ok(())
    }

    /// Opens a modal (the send-back form) for the click that gave `trigger_id`.
    pub async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<(), SlackError> {
        let body = json!({"trigger_id": trigger_id, "view": view});
        self.call("views.open", &Request::Post(&body)).await?;
        Ok(())
    }

    /// The bot's own user id, to recognise mentions of it; also proves the token works.
    pub async fn bot_user_id(&self) -> Result<String, SlackError> {
        const METHOD: &str = "auth.test";
        let answer = self.call(METHOD, &Request::Post(&json!({}))).await?;
        read::<AuthTest>(METHOD, answer).map(|a| a.user_id)
    }

    /// One call, retried after passing failures; for methods that are safe to repeat.
    async fn call(&self, method: &str, request: &Request<'_>) -> Result<Value, SlackError> {
        let mut failures = 0;
        loop {
            match self.attempt(method, request).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Final(error)) => return Err(error),
                Err(Failure::Transient(why)) if failures < MAX_FAILURES => {
                    tracing::debug!(method, %why, "retrying a Slack call");
                    tokio::time::sleep(BACKOFF * 2u32.pow(failures)).await;
                    failures += 1;
                }
                Err(Failure::Transient(why)) => return Err(SlackError::Unavailable(why)),
            }
        }
    }

    /// One call, waiting out rate limits as Slack asks: a 429 means Slack did nothing, so
    /// repeating is always safe.
    async fn attempt(&self, method: &str, request: &Request<'_>) -> Result<Value, Failure> {
        let mut limited = 0;
        let mut waited = Duration::ZERO;
        loop {
            match self.send(method, request).await {
                None => {
                    return Err(Failure::Transient(format!(
                        "{method}: no answer within {}s",
                        REQUEST_TIMEOUT.as_secs()
                    )));
                }
                Some(Err(SlackClientError::RateLimitError(limit))) => {
                    let after = limit.retry_after.unwrap_or(DEFAULT_RETRY_AFTER);
                    if limited >= MAX_RATE_LIMITED || waited + after > RATE_LIMIT_BUDGET {
                        return Err(Failure::Final(SlackError::Unavailable(format!(
                            "{method}: still rate-limited after waiting {}s; Slack asks for {}s more",
                            waited.as_secs(),
                            after.as_secs()
                        ))));
                    }
                    tracing::debug!(
                        method,
                        retry_after = after.as_secs(),
                        "rate-limited by Slack"
                    );
                    tokio::time::sleep(after).await;
                    limited += 1;
                    waited += after;
                }
                Some(result) => return self.judge(method, result),
            }
        }
    }

    /// One HTTP exchange; `None` when Slack did not answer in time.
    async fn send(
        &self,
        method: &str,
        request: &Request<'_>,
    ) -> Option<Result<Value, SlackClientError>> {
        let token = SlackApiToken::new(SlackApiTokenValue(self.token.expose_secret().to_owned()));
        let span = tracing::debug_span!("slack_api", method);
        let context = SlackClientApiCallContext {
            rate_control_params: None,
            token: Some(&token),
            tracing_span: &span,
            is_sensitive_url: false,
        };
        let sent = match request {
            Request::Post(body) => self.connector.http_post(method, *body, context),
            Request::Get(params) => self.connector.http_get(method, &params.to_vec(), context),
        };
        tokio::time::timeout(REQUEST_TIMEOUT, sent).await.ok()
    }

    /// Sorts an answer into success, a refusal for good, or a passing failure.
    fn judge(
        &self,
        method: &str,
        result: Result<Value, SlackClientError>,
    ) -> Result<Value, Failure> {
        let refused = |error: &str| {
            if TRANSIENT_ERRORS.contains(&error) {
                Failure::Transient(format!("{method}: Slack answered {error}"))
            } else {
                Failure::Final(SlackError::Api {
                    method: method.to_owned(),
                    error: error.to_owned(),
                })
            }
        };
        match result {
            Ok(answer) => match answer.get("ok").and_then(Value::as_bool) {
                Some(true) => Ok(answer),
                Some(false) => Err(refused(answer["error"].as_str().unwrap_or("unknown_error"))),
                None => Err(Failure::Transient(format!(
                    "{method}: {} answered without Slack's `ok` field",
                    self.api_url
                ))),
            },
            Err(SlackClientError::ApiError(e)) => Err(refused(&e.code)),
            Err(SlackClientError::HttpError(e))
                if e.status_code.is_server_error() || e.status_code.as_u16() == 408 =>
            {
                Err(Failure::Transient(format!(
                    "{method}: HTTP {}",
                    e.status_code
                )))
            }
            Err(SlackClientError::HttpError(e)) => Err(Failure::Final(SlackError::Setup(format!(
                "{method}: HTTP {} from {}; is api_url right?",
                e.status_code, self.api_url
            )))),
            Err(other) => Err(Failure::Transient(format!("{method}: {other}"))),
        }
    }
}

fn read<T: DeserializeOwned>(method: &str, answer: Value) -> Result<T, SlackError> {
    serde_json::from_value(answer).map_err(|e| {
        SlackError::Unavailable(format!("{method}: unexpected answer from Slack: {e}"))
    })
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
