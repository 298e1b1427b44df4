//! A stateful fake of the Discord REST endpoints Gatehouse calls, on loopback: channel
//! messages (create with `enforce_nonce`, edit, get), interaction follow-ups and callbacks,
//! `GET /users/@me` and direct-message channels (`POST /users/@me/channels`), with Discord's response shapes, error bodies and rate-limit headers, a
//! record of every call, and failures on demand (a status for the next call to a route, a
//! 429, a 500 after a message was stored).
//!
//! Point the Discord client at [`FakeDiscord::api_url`]; it checks `Authorization: Bot
//! <FakeDiscord::TOKEN>` as Discord does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// The API version prefix serenity (and Discord's docs) use.
const API: &str = "/api/v10";

/// A message the fake holds.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeMessage {
    /// Snowflake id.
    pub id: String,
    /// The channel it is in.
    pub channel_id: String,
    /// Text content.
    pub content: String,
    /// Embeds, as sent.
    pub embeds: Vec<Value>,
    /// Component rows, as sent.
    pub components: Vec<Value>,
    /// `message_reference` as sent (a reply).
    pub message_reference: Option<Value>,
    /// The nonce it was created with.
    pub nonce: Option<String>,
    /// How many times it was edited.
    pub edits: u32,
}

/// An interaction follow-up message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followup {
    /// The interaction token it was posted with.
    pub token: String,
    /// Its content.
    pub content: String,
    /// Its flags (64 = ephemeral).
    pub flags: u64,
}

/// An interaction callback (a response sent through the REST API).
#[derive(Debug, Clone, PartialEq)]
pub struct Callback {
    /// The interaction id.
    pub interaction_id: String,
    /// The interaction token.
    pub token: String,
    /// The response body.
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// channel → messages, oldest first.
    messages: BTreeMap<String, Vec<FakeMessage>>,
    followups: Vec<Followup>,
    callbacks: Vec<Callback>,
    calls: Vec<(String, Value)>,
    /// user id → the bot's direct-message channel with them.
    dm_channels: BTreeMap<String, String>,
    /// (route, status) answered instead of the next matching call.
    faults: Vec<(String, u16)>,
    /// Message creates that store the message, then answer 500.
    store_then_fail: usize,
}

/// A running fake Discord.
#[derive(Clone)]
pub struct FakeDiscord {
    url: String,
    inner: Arc<Mutex<Inner>>,
}

type Shared = Arc<Mutex<Inner>>;

impl FakeDiscord {
    /// The bot token it accepts (as `Authorization: Bot TOKEN`).
    pub const TOKEN: &'static str = "fake-discord-bot-token";
    /// The application id follow-ups are posted under.
    pub const APPLICATION_ID: &'static str = "1100000000000000001";
    /// The bot's user id (`GET /users/@me`, the author of its messages).
    pub const BOT_USER_ID: &'static str = "1100000000000000002";

    /// Starts one on a free port; it stops with the test's runtime.
    pub async fn start() -> Self {
        let inner: Shared = Arc::default();
        let api = axum::Router::new()
            .route("/channels/{channel}/messages", post(create_message))
            .route(
                "/channels/{channel}/messages/{message}",
                get(get_message).patch(edit_message),
            )
            .route("/webhooks/{application}/{token}", post(followup))
            .route("/interactions/{id}/{token}/callback", post(callback))
            .route("/users/@me", get(current_user))
            .route("/users/@me/channels", post(open_dm));
        let app = axum::Router::new()
            .nest(API, api)
            .fallback(unknown)
            .with_state(inner.clone());
        let url = crate::serve_fake(app).await;
        Self { url, inner }
    }

    /// Its `api_url`: `http://127.0.0.1:PORT/api/v10`.
    pub fn api_url(&self) -> String {
        format!("{}{API}", self.url)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The messages in a channel, oldest first.
    pub fn messages(&self, channel: &str) -> Vec<FakeMessage> {
        self.lock()
            .messages
            .get(channel)
            .cloned()
            .unwrap_or_default()
    }

    /// A message by id, in any channel.
    pub fn message(&self, id: &str) -> Option<FakeMessage> {
        self.lock()
            .messages
            .values()
            .flatten()
            .find(|m| m.id == id)
            .cloned()
    }

    /// The bot's direct-message channel with `user`, once Gatehouse opened it.
    pub fn dm_channel(&self, user: &str) -> Option<String> {
        self.lock().dm_channels.get(user).cloned()
    }

    /// Follow-ups posted so far, oldest first.
    pub fn followups(&self) -> Vec<Followup> {
        self.lock().followups.clone()
    }

    /// Interaction callbacks received so far, oldest first.
    pub fn callbacks(&self) -> Vec<Callback> {
        self.lock().callbacks.clone()
    }

    /// Every call so far, as (`METHOD /path` without the `/api/v10` prefix, JSON body or
    /// `null`), including refused ones.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.lock().calls.clone()
    }

    /// The next call to `route` answers `status` instead (429 with Discord's rate-limit body
    /// and headers, others with a Discord error body) and changes nothing. `route` is a call
    /// as [`Self::calls`] shows it (`POST /channels/1/messages`) or a route pattern
    /// (`POST /channels/{channel}/messages`); several faults queue up in order.
    pub fn fail_next(&self, route: &str, status: u16) {
        self.lock().faults.push((route.to_owned(), status));
    }

    /// The next `n` message creates store the message (and its nonce), then answer 500, as a
    /// Discord that fails after writing does.
    pub fn store_then_fail_creates(&self, n: usize) {
        self.lock().store_then_fail = n;
    }
}

/// Records the call and answers for the fake when it must refuse it: a wrong token or a
/// planned fault.
fn enter(
    inner: &Shared,
    headers: &HeaderMap,
    method: &Method,
    path: &str,
    pattern: &str,
    body: &Value,
) -> Option<Response> {
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let path = path.strip_prefix(API).unwrap_or(path);
    let call = format!("{method} {path}");
    state.calls.push((call.clone(), body.clone()));
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bot {}", FakeDiscord::TOKEN));
    if !authorized {
        return Some(error(StatusCode::UNAUTHORIZED, 0, "401: Unauthorized"));
    }
    let pattern = format!("{method} {pattern}");
    let fault = state
        .faults
        .iter()
        .position(|(route, _)| *route == call || *route == pattern)?;
    let (_, status) = state.faults.remove(fault);
    Some(match status {
        429 => rate_limited(),
        status => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error(code, 0, &format!("{status}: injected by the fake"))
        }
    })
}

/// Discord's error shape.
fn error(status: StatusCode, code: u32, message: &str) -> Response {
    (status, Json(json!({"message": message, "code": code}))).into_response()
}

/// A 429 as Discord sends it, body and headers.
fn rate_limited() -> Response {
    let reset = chrono::Utc::now().timestamp_millis() as f64 / 1000.0 + 0.5;
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            ("retry-after", "1".to_owned()),
            ("x-ratelimit-limit", "5".to_owned()),
            ("x-ratelimit-remaining", "0".to_owned()),
            ("x-ratelimit-reset", format!("{reset:.3}")),
            ("x-ratelimit-reset-after", "0.500".to_owned()),
            ("x-ratelimit-bucket", "fake-bucket".to_owned()),
            ("x-ratelimit-scope", "user".to_owned()),
        ],
        Json(
            json!({"message": "You are being rate limited.", "retry_after": 0.5, "global": false}),
        ),
    )
        .into_response()
}

/// A success with the rate-limit headers Discord always sends, which serenity's rate limiter
/// reads.
fn ok(status: StatusCode, body: Option<Value>) -> Response {
    let reset = chrono::Utc::now().timestamp_millis() as f64 / 1000.0 + 1.0;
    let headers = [
        ("x-ratelimit-limit", "5".to_owned()),
        ("x-ratelimit-remaining", "4".to_owned()),
        ("x-ratelimit-reset", format!("{reset:.3}")),
        ("x-ratelimit-reset-after", "1.000".to_owned()),
        ("x-ratelimit-bucket", "fake-bucket".to_owned()),
    ];
    match body {
        Some(body) => (status, headers, Json(body)).into_response(),
        None => (status, headers).into_response(),
    }
}

/// The body as JSON; `null` when there is none, `None` when it is not JSON.
fn json_body(bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() {
        return Some(Value::Null);
    }
    serde_json::from_slice(bytes).ok()
}

fn not_json() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        50109,
        "The request body contains invalid JSON.",
    )
}

/// Discord's "Invalid Form Body" for one field.
fn invalid(field: &str, message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({
            "message": "Invalid Form Body",
            "code": 50035,
            "errors": {field: {"_errors": [{"code": "BASE_TYPE_BAD_LENGTH", "message": message}]}}
        })),
    )
        .into_response()
}

/// What Discord checks of a message body that Gatehouse could get wrong.
fn check_message(body: &Value, create: bool) -> Option<Response> {
    if !body.is_object() {
        return Some(not_json());
    }
    if body["content"]
        .as_str()
        .is_some_and(|c| c.chars().count() > 2000)
    {
        return Some(invalid("content", "Must be 2000 or fewer in length."));
    }
    if body["nonce"]
        .as_str()
        .is_some_and(|n| n.chars().count() > 25)
    {
        return Some(invalid("nonce", "Must be 25 or fewer in length."));
    }
    let empty = |key: &str| match &body[key] {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if create && empty("content") && empty("embeds") && empty("components") {
        return Some(error(
            StatusCode::BAD_REQUEST,
            50006,
            "Cannot send an empty message",
        ));
    }
    None
}

fn message_json(m: &FakeMessage) -> Value {
    json!({
        "id": m.id,
        "channel_id": m.channel_id,
        "type": if m.message_reference.is_some() { 19 } else { 0 },
        "content": m.content,
        "embeds": m.embeds,
        "components": m.components,
        "author": {
            "id": FakeDiscord::BOT_USER_ID,
            "username": "gatehouse",
            "discriminator": "0000",
            "global_name": null,
            "avatar": null,
            "bot": true
        },
        "attachments": [],
        "mentions": [],
        "mention_roles": [],
        "mention_everyone": false,
        "pinned": false,
        "tts": false,
        "flags": 0,
        "timestamp": "2026-11-30T12:00:00.000000+00:00",
        "edited_timestamp": if m.edits > 0 { json!("2026-11-30T12:05:00.000000+00:00") } else { Value::Null },
        "nonce": m.nonce,
        "message_reference": m.message_reference,
    })
}

fn array(body: &Value, key: &str) -> Vec<Value> {
    body[key].as_array().cloned().unwrap_or_default()
}

fn next_snowflake(state: &mut Inner) -> String {
    state.next_id += 1;
    (1_300_000_000_000_000_000u64 + state.next_id).to_string()
}

async fn create_message(
    State(inner): State<Shared>,
    Path(channel): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let Some(body) = json_body(&bytes) else {
        return not_json();
    };
    let pattern = "/channels/{channel}/messages";
    if let Some(refused) = enter(&inner, &headers, &method, uri.path(), pattern, &body) {
        return refused;
    }
    if let Some(refused) = check_message(&body, true) {
        return refused;
    }
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let nonce = match &body["nonce"] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    // Discord: with enforce_nonce, a nonce this author used recently returns the message it
    // created instead of a new one. The fake remembers for its whole life.
    if body["enforce_nonce"] == json!(true)
        && let Some(nonce) = &nonce
        && let Some(existing) = state
            .messages
            .values()
            .flatten()
            .find(|m| m.nonce.as_ref() == Some(nonce))
    {
        return ok(StatusCode::OK, Some(message_json(existing)));
    }
    let message = FakeMessage {
        id: next_snowflake(&mut state),
        channel_id: channel.clone(),
        content: body["content"].as_str().unwrap_or_default().to_owned(),
        embeds: array(&body, "embeds"),
        components: array(&body, "components"),
        message_reference: body.get("message_reference").cloned(),
        nonce,
        edits: 0,
    };
    let answer = message_json(&message);
    state.messages.entry(channel).or_default().push(message);
    if state.store_then_fail > 0 {
        state.store_then_fail -= 1;
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            0,
            "500: Internal Server Error",
        );
    }
    ok(StatusCode::OK, Some(answer))
}

async fn get_message(
    State(inner): State<Shared>,
    Path((channel, id)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let pattern = "/channels/{channel}/messages/{message}";
    if let Some(refused) = enter(&inner, &headers, &method, uri.path(), pattern, &Value::Null) {
        return refused;
    }
    let state = inner.lock().unwrap_or_else(|p| p.into_inner());
    match state
        .messages
        .get(&channel)
        .and_then(|ms| ms.iter().find(|m| m.id == id))
    {
        Some(message) => ok(StatusCode::OK, Some(message_json(message))),
        None => error(StatusCode::NOT_FOUND, 10008, "Unknown Message"),
    }
}

async fn edit_message(
    State(inner): State<Shared>,
    Path((channel, id)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let Some(body) = json_body(&bytes) else {
        return not_json();
    };
    let pattern = "/channels/{channel}/messages/{message}";
    if let Some(refused) = enter(&inner, &headers, &method, uri.path(), pattern, &body) {
        return refused;
    }
    if let Some(refused) = check_message(&body, false) {
        return refused;
    }
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let Some(message) = state
        .messages
        .get_mut(&channel)
        .and_then(|ms| ms.iter_mut().find(|m| m.id == id))
    else {
        return error(StatusCode::NOT_FOUND, 10008, "Unknown Message");
    };
    // Discord changes only the fields the edit names.
    if let Some(content) = body["content"].as_str() {
        message.content = content.to_owned();
    }
    if body.get("embeds").is_some() {
        message.embeds = array(&body, "embeds");
    }
    if body.get("components").is_some() {
        message.components = array(&body, "components");
    }
    message.edits += 1;
    ok(StatusCode::OK, Some(message_json(message)))
}

async fn followup(
    State(inner): State<Shared>,
    Path((application, token)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let Some(body) = json_body(&bytes) else {
        return not_json();
    };
    let pattern = "/webhooks/{application}/{token}";
    if let Some(refused) = enter(&inner, &headers, &method, uri.path(), pattern, &body) {
        return refused;
    }
    if application != FakeDiscord::APPLICATION_ID {
        return error(StatusCode::NOT_FOUND, 10015, "Unknown Webhook");
    }
    if let Some(refused) = check_message(&body, true) {
        return refused;
    }
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let followup = Followup {
        token,
        content: body["content"].as_str().unwrap_or_default().to_owned(),
        flags: body["flags"].as_u64().unwrap_or(0),
    };
    let message = FakeMessage {
        id: next_snowflake(&mut state),
        channel_id: "0".to_owned(),
        content: followup.content.clone(),
        embeds: array(&body, "embeds"),
        components: array(&body, "components"),
        message_reference: None,
        nonce: None,
        edits: 0,
    };
    state.followups.push(followup);
    let mut answer = message_json(&message);
    answer["flags"] = json!(body["flags"].as_u64().unwrap_or(0));
    answer["webhook_id"] = json!(FakeDiscord::APPLICATION_ID);
    ok(StatusCode::OK, Some(answer))
}

async fn callback(
    State(inner): State<Shared>,
    Path((interaction_id, token)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let Some(body) = json_body(&bytes) else {
        return not_json();
    };
    let pattern = "/interactions/{id}/{token}/callback";
    if let Some(refused) = enter(&inner, &headers, &method, uri.path(), pattern, &body) {
        return refused;
    }
    if !matches!(body["type"].as_u64(), Some(1 | 4..=10 | 12)) {
        return invalid(
            "type",
            "Value must be one of {1, 4, 5, 6, 7, 8, 9, 10, 12}.",
        );
    }
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    // Discord answers an interaction once; the second response is refused.
    if state
        .callbacks
        .iter()
        .any(|c| c.interaction_id == interaction_id)
    {
        return error(
            StatusCode::BAD_REQUEST,
            40060,
            "Interaction has already been acknowledged.",
        );
    }
    state.callbacks.push(Callback {
        interaction_id,
        token,
        body,
    });
    ok(StatusCode::NO_CONTENT, None)
}

async fn current_user(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = enter(
        &inner,
        &headers,
        &method,
        uri.path(),
        "/users/@me",
        &Value::Null,
    ) {
        return refused;
    }
    ok(
        StatusCode::OK,
        Some(json!({
            "id": FakeDiscord::BOT_USER_ID,
            "username": "gatehouse",
            "discriminator": "0000",
            "global_name": null,
            "avatar": null,
            "bot": true,
            "verified": true,
            "mfa_enabled": false,
            "flags": 0,
            "public_flags": 0
        })),
    )
}

/// `POST /users/@me/channels`: the bot's direct-message channel with `recipient_id`,
/// opened on the first call and the same one after, as Discord answers.
async fn open_dm(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let Some(body) = json_body(&bytes) else {
        return not_json();
    };
    if let Some(refused) = enter(
        &inner,
        &headers,
        &method,
        uri.path(),
        "/users/@me/channels",
        &body,
    ) {
        return refused;
    }
    let Some(user) = body["recipient_id"]
        .as_str()
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    else {
        return invalid("recipient_id", "Value \"\" is not snowflake.");
    };
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    let channel = match state.dm_channels.get(user) {
        Some(channel) => channel.clone(),
        None => {
            let channel = next_snowflake(&mut state);
            state.dm_channels.insert(user.to_owned(), channel.clone());
            channel
        }
    };
    ok(
        StatusCode::OK,
        Some(json!({
            "id": channel,
            "type": 1,
            "last_message_id": null,
            "flags": 0,
            "recipients": [{
                "id": user,
                "username": "someone",
                "discriminator": "0",
                "global_name": null,
                "avatar": null
            }]
        })),
    )
}

/// Anything else: recorded, and answered as Discord answers an unknown route.
async fn unknown(State(inner): State<Shared>, method: Method, uri: Uri) -> Response {
    let path = uri.path();
    let path = path.strip_prefix(API).unwrap_or(path);
    let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
    state.calls.push((format!("{method} {path}"), Value::Null));
    error(StatusCode::NOT_FOUND, 0, "404: Not Found")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> reqwest::Client {
        reqwest::Client::new()
    }

    async fn send(
        fake: &FakeDiscord,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, HeaderMap, Value) {
        let mut request = client()
            .request(method, format!("{}{path}", fake.api_url()))
            .header("authorization", format!("Bot {}", FakeDiscord::TOKEN));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("send");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).expect("json")
        };
        (status, headers, body)
    }

    #[tokio::test]
    async fn creates_edits_and_deduplicates() {
        let fake = FakeDiscord::start().await;
        assert!(fake.api_url().ends_with("/api/v10"));
        let card = json!({
            "embeds": [{"title": "Approval needed"}],
            "components": [{"type": 1, "components": []}],
            "nonce": "outbox-1",
            "enforce_nonce": true,
            "message_reference": {"message_id": "42", "fail_if_not_exists": false}
        });
        let (status, headers, first) = send(
            &fake,
            reqwest::Method::POST,
            "/channels/7/messages",
            Some(card.clone()),
        )
        .await;
        assert_eq!(status, 200);
        assert!(headers.contains_key("x-ratelimit-bucket"));
        assert_eq!(first["type"], 19);
        let (_, _, again) = send(
            &fake,
            reqwest::Method::POST,
            "/channels/7/messages",
            Some(card),
        )
        .await;
        assert_eq!(again["id"], first["id"]);
        assert_eq!(fake.messages("7").len(), 1);

        let id = first["id"].as_str().unwrap();
        let (status, _, edited) = send(
            &fake,
            reqwest::Method::PATCH,
            &format!("/channels/7/messages/{id}"),
            Some(json!({"components": []})),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(edited["components"], json!([]));
        let stored = fake.message(id).unwrap();
        assert_eq!(stored.edits, 1);
        assert_eq!(stored.embeds, [json!({"title": "Approval needed"})]);
        assert_eq!(stored.nonce.as_deref(), Some("outbox-1"));
        assert_eq!(fake.calls()[0].0, "POST /channels/7/messages");
        assert_eq!(fake.calls().len(), 3);
    }

    #[tokio::test]
    async fn refuses_and_fails_like_discord() {
        let fake = FakeDiscord::start().await;
        let unauthorized = client()
            .get(format!("{}/users/@me", fake.api_url()))
            .header("authorization", "Bot wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(unauthorized.status(), 401);
        assert_eq!(
            unauthorized.json::<Value>().await.unwrap(),
            json!({"message": "401: Unauthorized", "code": 0})
        );

        fake.fail_next("GET /users/@me", 429);
        let (status, headers, body) = send(&fake, reqwest::Method::GET, "/users/@me", None).await;
        assert_eq!(status, 429);
        assert_eq!(body["retry_after"], 0.5);
        assert_eq!(headers["x-ratelimit-remaining"], "0");
        let (status, _, me) = send(&fake, reqwest::Method::GET, "/users/@me", None).await;
        assert_eq!(status, 200);
        assert_eq!(me["id"], FakeDiscord::BOT_USER_ID);

        fake.fail_next("POST /channels/{channel}/messages", 503);
        let text = Some(json!({"content": "hi", "nonce": "n-2", "enforce_nonce": true}));
        let (status, _, _) = send(
            &fake,
            reqwest::Method::POST,
            "/channels/8/messages",
            text.clone(),
        )
        .await;
        assert_eq!(status, 503);
        assert!(fake.messages("8").is_empty());

        fake.store_then_fail_creates(1);
        let (status, _, _) = send(
            &fake,
            reqwest::Method::POST,
            "/channels/8/messages",
            text.clone(),
        )
        .await;
        assert_eq!(status, 500);
        let (status, _, retried) =
            send(&fake, reqwest::Method::POST, "/channels/8/messages", text).await;
        assert_eq!(status, 200);
        assert_eq!(retried["id"], fake.messages("8")[0].id);
        assert_eq!(fake.messages("8").len(), 1);

        let (status, _, body) = send(
            &fake,
            reqwest::Method::POST,
            "/channels/8/messages",
            Some(json!({"content": "x", "nonce": "n".repeat(26)})),
        )
        .await;
        assert_eq!((status, body["code"].as_u64()), (400, Some(50035)));
    }

    #[tokio::test]
    async fn opens_one_direct_message_channel_per_user() {
        let fake = FakeDiscord::start().await;
        let open = json!({"recipient_id": "4242"});
        let (status, _, first) = send(
            &fake,
            reqwest::Method::POST,
            "/users/@me/channels",
            Some(open.clone()),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(first["type"], 1);
        assert_eq!(first["recipients"][0]["id"], "4242");
        let (_, _, again) = send(
            &fake,
            reqwest::Method::POST,
            "/users/@me/channels",
            Some(open),
        )
        .await;
        assert_eq!(again["id"], first["id"]);
        assert_eq!(fake.dm_channel("4242").as_deref(), first["id"].as_str());
        let (status, _, _) = send(
            &fake,
            reqwest::Method::POST,
            "/users/@me/channels",
            Some(json!({"recipient_id": "dm:4242"})),
        )
        .await;
        assert_eq!(status, 400);
    }

    #[tokio::test]
    async fn records_followups_and_callbacks() {
        let fake = FakeDiscord::start().await;
        let path = format!("/webhooks/{}/tok", FakeDiscord::APPLICATION_ID);
        let (status, _, _) = send(
            &fake,
            reqwest::Method::POST,
            &path,
            Some(json!({"content": "Bo approved first", "flags": 64})),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            fake.followups(),
            [Followup {
                token: "tok".into(),
                content: "Bo approved first".into(),
                flags: 64
            }]
        );

        let path = "/interactions/99/tok/callback";
        let (status, _, _) =
            send(&fake, reqwest::Method::POST, path, Some(json!({"type": 6}))).await;
        assert_eq!(status, 204);
        let (status, _, body) =
            send(&fake, reqwest::Method::POST, path, Some(json!({"type": 6}))).await;
        assert_eq!((status, body["code"].as_u64()), (400, Some(40060)));
        assert_eq!(fake.callbacks().len(), 1);
        assert_eq!(fake.callbacks()[0].body, json!({"type": 6}));
    }
}
