//! A stateful fake of the Slack Web API methods Gatehouse calls, on loopback:
//! `chat.postMessage`, `chat.update`, `chat.postEphemeral`, `views.open`,
//! `conversations.history`, `conversations.replies` and `auth.test`, with Slack's answer
//! shapes, a record of every call, and failures on demand (a rate limit, a refusal, a 5xx,
//! or a 5xx after storing the message, as Slack sometimes does).
//!
//! Like Slack it takes JSON or form bodies (GET query strings for the read methods), checks
//! the bot token (`Authorization: Bearer`, or a `token` field), answers `ok: false` for
//! refusals, and keeps message metadata, which `conversations.*` return only with
//! `include_all_metadata=true`. Timestamps come from the real clock, so `oldest` filters
//! computed from the time behave as against Slack.
//!
//! `chat.postMessage` to a user id (`U…`, `W…`) is a direct message from the app, as on
//! Slack; the fake keeps it under the user id ([`FakeSlack::messages`]`("U0ANA")`). Like
//! Slack, `conversations.history` and `conversations.replies` do not take a user id.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The bot token the fake accepts; give it to `SlackClient::new`.
pub const BOT_TOKEN: &str = "xoxb-fake-gatehouse-token";
/// The bot's user id, as `auth.test` reports it.
pub const BOT_USER: &str = "U0GATEHOUSE";
/// The bot's bot id, on the messages it posts.
pub const BOT_ID: &str = "B0GATEHOUSE";

/// A message in a channel, as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackMessage {
    /// The channel.
    pub channel: String,
    /// Its timestamp (its id).
    pub ts: String,
    /// The thread it is in, if any.
    pub thread_ts: Option<String>,
    /// Who wrote it: [`BOT_USER`] for the bot's posts.
    pub user: String,
    /// The fallback text, as last posted or updated.
    pub text: String,
    /// The blocks, as last posted or updated (`Null` when none were sent).
    pub blocks: Value,
    /// The metadata it was posted with.
    pub metadata: Option<Value>,
    /// How many times `chat.update` changed it.
    pub updates: u32,
}

/// A message shown to one user.
#[derive(Debug, Clone, PartialEq)]
pub struct Ephemeral {
    /// The channel.
    pub channel: String,
    /// Who sees it.
    pub user: String,
    /// The thread, if any.
    pub thread_ts: Option<String>,
    /// The text.
    pub text: String,
}

/// A failure the next call of a method meets.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// HTTP 429 with `Retry-After` seconds; nothing is done.
    RateLimited {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// This HTTP status (e.g. 500, 503) instead of an answer; nothing is done.
    Status(u16),
    /// `ok: false` with this error code (`channel_not_found`, `internal_error`, ...).
    Error(String),
    /// The call is carried out (the message stored), then answered with this HTTP status:
    /// the caller cannot tell it worked.
    StoreThenStatus(u16),
}

#[derive(Default)]
struct Inner {
    /// Oldest first.
    messages: Vec<SlackMessage>,
    ephemerals: Vec<Ephemeral>,
    views: Vec<Value>,
    calls: Vec<(String, Value)>,
    faults: HashMap<String, VecDeque<Fault>>,
    /// The last timestamp handed out, as microseconds, so every ts is new and later.
    last_ts: u128,
}

type Shared = Arc<Mutex<Inner>>;

/// A running fake Slack.
#[derive(Clone)]
pub struct FakeSlack {
    url: String,
    inner: Shared,
}

impl FakeSlack {
    /// Starts one on a free port; it stops with the test's runtime.
    pub async fn start() -> Self {
        let inner: Shared = Arc::default();
        let app = axum::Router::new()
            .route("/api/{method}", axum::routing::any(api))
            .with_state(inner.clone());
        let url = crate::serve_fake(app).await;
        Self { url, inner }
    }

    /// The `api_url` to configure (ends in `/api`).
    pub fn api_url(&self) -> String {
        format!("{}/api", self.url)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every call so far, in order: the method and its parameters (JSON body, or form and
    /// query fields as strings, with `blocks`, `metadata` and `view` decoded), without the
    /// token.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.lock().calls.clone()
    }

    /// The calls of one method so far.
    pub fn calls_of(&self, method: &str) -> Vec<Value> {
        self.lock()
            .calls
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, params)| params.clone())
            .collect()
    }

    /// The messages in a channel, threads included, oldest first.
    pub fn messages(&self, channel: &str) -> Vec<SlackMessage> {
        self.lock()
            .messages
            .iter()
            .filter(|m| m.channel == channel)
            .cloned()
            .collect()
    }

    /// The ephemeral messages shown so far.
    pub fn ephemerals(&self) -> Vec<Ephemeral> {
        self.lock().ephemerals.clone()
    }

    /// The views opened so far, as sent.
    pub fn views(&self) -> Vec<Value> {
        self.lock().views.clone()
    }

    /// The next call of `method` (`chat.postMessage`, ...) meets `fault`; several queue up.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        self.lock()
            .faults
            .entry(method.to_owned())
            .or_default()
            .push_back(fault);
    }

    /// A person's message in a channel (a thread root, say), as if they had written it;
    /// returns its ts.
    pub fn add_user_message(
        &self,
        channel: &str,
        user: &str,
        text: &str,
        thread_ts: Option<&str>,
    ) -> String {
        let mut state = self.lock();
        let ts = next_ts(&mut state);
        state.messages.push(SlackMessage {
            channel: channel.to_owned(),
            ts: ts.clone(),
            thread_ts: thread_ts.map(str::to_owned),
            user: user.to_owned(),
            text: text.to_owned(),
            blocks: Value::Null,
            metadata: None,
            updates: 0,
        });
        ts
    }
}

/// A fresh Slack timestamp from the clock, later than every earlier one.
fn next_ts(state: &mut Inner) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default();
    state.last_ts = now.max(state.last_ts + 1);
    format!(
        "{}.{:06}",
        state.last_ts / 1_000_000,
        state.last_ts % 1_000_000
    )
}

fn ok(body: Value) -> Response {
    let mut body = body;
    body["ok"] = json!(true);
    Json(body).into_response()
}

fn refuse(error: &str) -> Response {
    Json(json!({"ok": false, "error": error})).into_response()
}

async fn api(
    State(inner): State<Shared>,
    Path(method): Path<String>,
    request: Request,
) -> Response {
    let headers = request.headers().clone();
    let mut params = match read_params(request).await {
        Ok(params) => params,
        Err(error) => return refuse(error),
    };
    let form_token = params
        .as_object_mut()
        .and_then(|p| p.remove("token"))
        .and_then(|t| t.as_str().map(str::to_owned));
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state.calls.push((method.clone(), params.clone()));
    if let Some(refused) = check_token(&headers, form_token.as_deref()) {
        return refused;
    }
    let fault = state.faults.get_mut(&method).and_then(VecDeque::pop_front);
    match fault {
        Some(Fault::RateLimited { retry_after }) => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, retry_after.to_string())],
            Json(json!({"ok": false, "error": "ratelimited"})),
        )
            .into_response(),
        Some(Fault::Status(status)) => failed_status(status),
        Some(Fault::Error(error)) => refuse(&error),
        Some(Fault::StoreThenStatus(status)) => {
            dispatch(&mut state, &method, &params);
            failed_status(status)
        }
        None => dispatch(&mut state, &method, &params),
    }
}

fn failed_status(status: u16) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, "upstream failure").into_response()
}

fn check_token(headers: &HeaderMap, form_token: Option<&str>) -> Option<Response> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match bearer.or(form_token) {
        None => Some(refuse("not_authed")),
        Some(token) if token != BOT_TOKEN => Some(refuse("invalid_auth")),
        Some(_) => None,
    }
}

/// The call's parameters as one JSON object: the query string's fields and the body's (a
/// JSON object as is; form fields as strings, except the ones Slack takes as JSON text).
async fn read_params(request: Request) -> Result<Value, &'static str> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let query = axum::extract::Query::<BTreeMap<String, String>>::try_from_uri(request.uri())
        .map(|q| q.0)
        .map_err(|_| "invalid_arguments")?;
    let mut params = decode_fields(query);
    if request.method() != Method::POST {
        return Ok(Value::Object(params));
    }
    if content_type.starts_with("application/json") {
        let body = axum::body::Bytes::from_request(request, &())
            .await
            .map_err(|_| "invalid_json")?;
        if !body.is_empty() {
            match serde_json::from_slice::<Value>(&body) {
                Ok(Value::Object(fields)) => params.extend(fields),
                _ => return Err("invalid_json"),
            }
        }
    } else if content_type.starts_with("application/x-www-form-urlencoded") {
        let axum::Form(fields) = axum::Form::<BTreeMap<String, String>>::from_request(request, &())
            .await
            .map_err(|_| "invalid_form_data")?;
        params.extend(decode_fields(fields));
    }
    Ok(Value::Object(params))
}

fn decode_fields(fields: BTreeMap<String, String>) -> serde_json::Map<String, Value> {
    fields
        .into_iter()
        .map(|(name, value)| {
            let decoded = match name.as_str() {
                "blocks" | "metadata" | "view" => {
                    serde_json::from_str(&value).unwrap_or(Value::String(value))
                }
                _ => Value::String(value),
            };
            (name, decoded)
        })
        .collect()
}

fn dispatch(state: &mut Inner, method: &str, params: &Value) -> Response {
    match method {
        "chat.postMessage" => post_message(state, params),
        "chat.update" => update(state, params),
        "chat.postEphemeral" => post_ephemeral(state, params),
        "views.open" => open_view(state, params),
        "conversations.history" => history(state, params),
        "conversations.replies" => replies(state, params),
        "auth.test" => ok(json!({
            "url": "https://gatehouse-test.slack.com/",
            "team": "Gatehouse Test",
            "user": "gatehouse",
            "team_id": "T0GATEHOUSE",
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
            "is_enterprise_install": false
        })),
        _ => refuse("unknown_method"),
    }
}

fn text(params: &Value, name: &str) -> Option<String> {
    match &params[name] {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A bool parameter, as JSON `true` or form text `true`/`1`.
fn flag(params: &Value, name: &str) -> bool {
    match &params[name] {
        Value::Bool(b) => *b,
        Value::String(s) => s == "true" || s == "1",
        _ => false,
    }
}

fn message_json(message: &SlackMessage, with_metadata: bool) -> Value {
    let mut out = json!({
        "type": "message",
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
    });
    if message.user == BOT_USER {
        out["bot_id"] = json!(BOT_ID);
        out["app_id"] = json!("A0GATEHOUSE");
    }
    if let Some(thread_ts) = &message.thread_ts {
        out["thread_ts"] = json!(thread_ts);
    }
    if !message.blocks.is_null() {
        out["blocks"] = message.blocks.clone();
    }
    if message.updates > 0 {
        out["edited"] = json!({"user": message.user, "ts": message.ts});
    }
    if let (true, Some(metadata)) = (with_metadata, &message.metadata) {
        out["metadata"] = metadata.clone();
    }
    out
}

fn post_message(state: &mut Inner, params: &Value) -> Response {
    let Some(channel) = text(params, "channel") else {
        return refuse("channel_not_found");
    };
    let blocks = params["blocks"].clone();
    let Some(message_text) = text(params, "text").or_else(|| blocks.is_array().then(String::new))
    else {
        return refuse("no_text");
    };
    let ts = next_ts(state);
    let message = SlackMessage {
        channel: channel.clone(),
        ts: ts.clone(),
        thread_ts: text(params, "thread_ts"),
        user: BOT_USER.to_owned(),
        text: message_text,
        blocks,
        metadata: Some(params["metadata"].clone()).filter(Value::is_object),
        updates: 0,
    };
    let answer = json!({"channel": channel, "ts": ts, "message": message_json(&message, true)});
    state.messages.push(message);
    ok(answer)
}

fn update(state: &mut Inner, params: &Value) -> Response {
    let (Some(channel), Some(ts)) = (text(params, "channel"), text(params, "ts")) else {
        return refuse("message_not_found");
    };
    let Some(message) = state
        .messages
        .iter_mut()
        .find(|m| m.channel == channel && m.ts == ts)
    else {
        return refuse("message_not_found");
    };
    if message.user != BOT_USER {
        return refuse("cant_update_message");
    }
    if let Some(new_text) = text(params, "text") {
        message.text = new_text;
    }
    if params["blocks"].is_array() {
        message.blocks = params["blocks"].clone();
    }
    if params["metadata"].is_object() {
        message.metadata = Some(params["metadata"].clone());
    }
    message.updates += 1;
    let answer = json!({
        "channel": channel,
        "ts": ts,
        "text": message.text,
        "message": message_json(message, false),
    });
    ok(answer)
}

fn post_ephemeral(state: &mut Inner, params: &Value) -> Response {
    let Some(channel) = text(params, "channel") else {
        return refuse("channel_not_found");
    };
    let Some(user) = text(params, "user") else {
        return refuse("user_not_in_channel");
    };
    let Some(message_text) = text(params, "text") else {
        return refuse("no_text");
    };
    let message_ts = next_ts(state);
    state.ephemerals.push(Ephemeral {
        channel,
        user,
        thread_ts: text(params, "thread_ts"),
        text: message_text,
    });
    ok(json!({"message_ts": message_ts}))
}

fn open_view(state: &mut Inner, params: &Value) -> Response {
    if text(params, "trigger_id").is_none() {
        return refuse("invalid_arguments");
    }
    let view = &params["view"];
    if view["type"] != "modal" {
        return refuse("invalid_arguments");
    }
    state.views.push(view.clone());
    let mut shown = view.clone();
    shown["id"] = json!(format!("V{:08}", state.views.len()));
    shown["team_id"] = json!("T0GATEHOUSE");
    shown["state"] = json!({"values": {}});
    shown["hash"] = json!("156663117.cd33ad1f");
    shown["app_id"] = json!("A0GATEHOUSE");
    shown["bot_id"] = json!(BOT_ID);
    ok(json!({"view": shown}))
}

/// Messages newer than `oldest` (or at it, with `inclusive`), a page at a time.
fn page(found: Vec<&SlackMessage>, params: &Value) -> Response {
    let oldest = text(params, "oldest").unwrap_or_else(|| "0".into());
    let inclusive = flag(params, "inclusive");
    let with_metadata = flag(params, "include_all_metadata");
    let limit = params["limit"]
        .as_u64()
        .or_else(|| text(params, "limit").and_then(|l| l.parse().ok()))
        .unwrap_or(100)
        .clamp(1, 999) as usize;
    let start: usize = text(params, "cursor")
        .and_then(|c| c.strip_prefix("offset:").and_then(|n| n.parse().ok()))
        .unwrap_or(0);
    let oldest = ts_key(&oldest);
    let matching: Vec<&SlackMessage> = found
        .into_iter()
        .filter(|m| {
            let ts = ts_key(&m.ts);
            ts > oldest || (inclusive && ts == oldest)
        })
        .collect();
    let shown: Vec<Value> = matching
        .iter()
        .skip(start)
        .take(limit)
        .map(|m| message_json(m, with_metadata))
        .collect();
    let more = matching.len() > start + limit;
    let next_cursor = if more {
        format!("offset:{}", start + limit)
    } else {
        String::new()
    };
    ok(json!({
        "messages": shown,
        "has_more": more,
        "pin_count": 0,
        "response_metadata": {"next_cursor": next_cursor}
    }))
}

/// A ts as a number of microseconds, for comparing (`"1700000000.5"` is not after
/// `"1700000000.000100"` as text, but is as time).
fn ts_key(ts: &str) -> u128 {
    let (seconds, micros) = ts.split_once('.').unwrap_or((ts, "0"));
    let micros = format!("{micros:0<6}");
    seconds.parse::<u128>().unwrap_or(0) * 1_000_000 + micros[..6].parse::<u128>().unwrap_or(0)
}

/// Whether `channel` is a user id, which Slack's `conversations.*` methods refuse (a direct
/// message's channel is a `D…` id).
fn is_user(channel: &str) -> bool {
    channel.starts_with('U') || channel.starts_with('W')
}

fn history(state: &Inner, params: &Value) -> Response {
    let Some(channel) = text(params, "channel").filter(|c| !is_user(c)) else {
        return refuse("channel_not_found");
    };
    // The channel's own messages (thread replies stay in their threads), newest first.
    let found: Vec<&SlackMessage> = state
        .messages
        .iter()
        .rev()
        .filter(|m| m.channel == channel)
        .filter(|m| m.thread_ts.as_ref().is_none_or(|t| *t == m.ts))
        .collect();
    page(found, params)
}

fn replies(state: &Inner, params: &Value) -> Response {
    let Some(channel) = text(params, "channel").filter(|c| !is_user(c)) else {
        return refuse("channel_not_found");
    };
    let Some(root) = text(params, "ts") else {
        return refuse("thread_not_found");
    };
    // The root, then its replies, oldest first. A root the fake never saw (a person's
    // message the test did not add) still yields the bot's replies in that thread.
    let found: Vec<&SlackMessage> = state
        .messages
        .iter()
        .filter(|m| m.channel == channel)
        .filter(|m| m.ts == root || m.thread_ts.as_deref() == Some(root.as_str()))
        .collect();
    page(found, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn call(fake: &FakeSlack, method: &str, body: Value) -> (StatusCode, Value) {
        let response = reqwest::Client::new()
            .post(format!("{}/{method}", fake.api_url()))
            .bearer_auth(BOT_TOKEN)
            .json(&body)
            .send()
            .await
            .expect("send");
        let status = response.status();
        let body = response.json().await.unwrap_or(Value::Null);
        (StatusCode::from_u16(status.as_u16()).expect("status"), body)
    }

    #[tokio::test]
    async fn stores_updates_and_finds_messages() {
        let fake = FakeSlack::start().await;
        let metadata = json!({"event_type": "gatehouse", "event_payload": {"key": "k1"}});
        let (_, posted) = call(
            &fake,
            "chat.postMessage",
            json!({"channel": "C1", "text": "hi", "blocks": [], "metadata": metadata}),
        )
        .await;
        assert_eq!(posted["ok"], true);
        let ts = posted["ts"].as_str().expect("ts").to_owned();
        let (_, updated) = call(
            &fake,
            "chat.update",
            json!({"channel": "C1", "ts": ts, "text": "bye"}),
        )
        .await;
        assert_eq!(updated["ok"], true);
        let messages = fake.messages("C1");
        assert_eq!((messages[0].text.as_str(), messages[0].updates), ("bye", 1));
        assert_eq!(messages[0].metadata, Some(metadata.clone()));

        let history = reqwest::Client::new()
            .get(format!(
                "{}/conversations.history?channel=C1&oldest=0&include_all_metadata=true",
                fake.api_url()
            ))
            .bearer_auth(BOT_TOKEN)
            .send()
            .await
            .expect("send")
            .json::<Value>()
            .await
            .expect("json");
        assert_eq!(history["messages"][0]["metadata"], metadata);
        assert_eq!(fake.calls().len(), 3);
    }

    #[tokio::test]
    async fn checks_the_token_and_injects_faults() {
        let fake = FakeSlack::start().await;
        let refused: Value = reqwest::Client::new()
            .post(format!("{}/auth.test", fake.api_url()))
            .bearer_auth("xoxb-wrong")
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        assert_eq!(refused["error"], "invalid_auth");
        let form: Value = reqwest::Client::new()
            .post(format!("{}/chat.postEphemeral", fake.api_url()))
            .form(&[
                ("token", BOT_TOKEN),
                ("channel", "C1"),
                ("user", "U1"),
                ("text", "no"),
            ])
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        assert_eq!(form["ok"], true, "{form}");
        assert_eq!(fake.ephemerals()[0].text, "no");

        fake.fail_next("chat.postMessage", Fault::StoreThenStatus(500));
        fake.fail_next("chat.postMessage", Fault::RateLimited { retry_after: 1 });
        let body = json!({"channel": "C1", "text": "hi"});
        let (status, _) = call(&fake, "chat.postMessage", body.clone()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(fake.messages("C1").len(), 1);
        let (status, _) = call(&fake, "chat.postMessage", body.clone()).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(fake.messages("C1").len(), 1);
        let (status, _) = call(&fake, "chat.postMessage", body).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(fake.messages("C1").len(), 2);
    }

    #[test]
    fn compares_timestamps_as_time() {
        assert!(ts_key("1700000000.5") > ts_key("1700000000.000100"));
        assert_eq!(ts_key("1700000000"), 1_700_000_000_000_000);
    }
}
