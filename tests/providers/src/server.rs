//! The fake provider's server: routes, the key check, faults, and answers streamed event by
//! event with the delays a fault asks for, each recorded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::channel::mpsc;
use serde_json::Value;

use crate::record::{Recorded, Sent};
use crate::script::{Fault, Reply, Turn};
use crate::sse::Event;
use crate::{anthropic, chat, gemini, responses};

/// The three APIs the fake speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Messages,
    Responses,
    Chat,
    /// `generateContent` (`stream`: `streamGenerateContent`).
    Gemini {
        stream: bool,
    },
}

impl Api {
    fn of(method: &Method, path: &str) -> Option<Self> {
        if method != Method::POST {
            return None;
        }
        match path {
            "/v1/messages" => Some(Self::Messages),
            "/v1/responses" => Some(Self::Responses),
            "/v1/chat/completions" => Some(Self::Chat),
            _ => match gemini::route(path)? {
                (_, "generateContent") => Some(Self::Gemini { stream: false }),
                (_, "streamGenerateContent") => Some(Self::Gemini { stream: true }),
                _ => None,
            },
        }
    }

    /// The key a request of this API carries.
    fn presented<'a>(self, headers: &'a HeaderMap, uri: &'a Uri) -> Option<&'a str> {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        match self {
            Self::Messages => header("x-api-key"),
            Self::Responses | Self::Chat => {
                header("authorization").and_then(|v| v.strip_prefix("Bearer "))
            }
            Self::Gemini { .. } => header("x-goog-api-key").or_else(|| query_key(uri)),
        }
    }

    /// The error body in this API's shape.
    fn error(self, status: u16, message: &str) -> Value {
        match self {
            Self::Messages => anthropic::error(status, message),
            Self::Responses | Self::Chat => responses::error(status, message),
            Self::Gemini { .. } => gemini::error(status, message),
        }
    }
}

/// The text a side request (one offering no tools) gets in place of a scripted tool call.
pub const SIDE_ANSWER: &str = "Scripted work";

/// Whether a request offers the model tools: `tools` is a non-empty array in every API the
/// fake speaks (Gemini's holds `functionDeclarations`).
fn offers_tools(request: &Value) -> bool {
    request["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty())
}

/// Every tool name the request offers, whatever its API's shape (`tools[].name`,
/// `tools[].function.name`, Gemini's `tools[].functionDeclarations[].name`, namespaces).
fn offered_tool_names(request: &Value) -> Vec<String> {
    fn walk(value: &Value, names: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                if let Some(Value::String(name)) = object.get("name") {
                    names.push(name.clone());
                }
                object.values().for_each(|inner| walk(inner, names));
            }
            Value::Array(items) => items.iter().for_each(|inner| walk(inner, names)),
            _ => {}
        }
    }
    let mut names = Vec::new();
    walk(&request["tools"], &mut names);
    names
}

/// A [`Turn::offered_tool`] call named as the request offers its tool.
fn choose_offered(turn: &mut Turn, request: &Value) {
    let Reply::Tool { name, .. } = &mut turn.reply else {
        return;
    };
    let Some(suffix) = name.strip_prefix(crate::script::OFFERED).map(str::to_owned) else {
        return;
    };
    *name = offered_tool_names(request)
        .into_iter()
        .find(|offered| offered.ends_with(&suffix))
        .unwrap_or(suffix);
}

/// The request's last message as JSON text (Messages and Chat `messages`, Responses
/// `input`, Gemini `contents`), for [`FakeProvider::answer_when`].
fn last_message(request: &Value) -> String {
    ["messages", "input", "contents"]
        .iter()
        .find_map(|key| request[*key].as_array()?.last())
        .map(Value::to_string)
        .unwrap_or_default()
}

/// Gemini's other way of sending the key: `?key=...`.
fn query_key(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("key="))
}

#[derive(Default)]
struct Inner {
    key: String,
    turns: Vec<Turn>,
    faults: VecDeque<Fault>,
    requests: Vec<Recorded>,
    next_id: u64,
    /// Responses API ids → the turn they answered, for `previous_response_id`.
    responses: HashMap<String, usize>,
    /// Answers chosen by what the request's last message says, before the script's order.
    rules: Vec<(String, Turn)>,
    /// Whether a request offering no tools gets text in place of a scripted tool call.
    side_requests: bool,
}

/// A fake model provider on a free loopback port, for the rest of the test.
#[derive(Clone)]
pub struct FakeProvider {
    url: String,
    key: String,
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for FakeProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeProvider")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl FakeProvider {
    /// Serves the fake: requests must carry `key` (`x-api-key` for Anthropic,
    /// `Authorization: Bearer` for OpenAI); the n-th request of a conversation gets
    /// `turns[n]` (the last turn once the script is spent).
    pub async fn start(key: &str, turns: Vec<Turn>) -> Self {
        let inner = Arc::new(Mutex::new(Inner {
            key: key.to_owned(),
            turns,
            ..Inner::default()
        }));
        let app = Router::new().fallback(answer).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        // Events leave as they are written, as from a real provider, not held by Nagle.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            key: key.to_owned(),
            inner,
        }
    }

    /// The base URL, without `/v1`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The key the fake expects.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Queues a fault: the next request that gets past the key check commits it.
    pub fn push_fault(&self, fault: Fault) {
        lock(&self.inner).faults.push_back(fault);
    }

    /// From now on a request offering the model no tools — a CLI's side request: a title,
    /// a summary — gets text ([`SIDE_ANSWER`]) where the script has a tool call, as a model
    /// would answer, rather than a call to a tool it does not have.
    pub fn answer_side_requests_with_text(&self) {
        lock(&self.inner).side_requests = true;
    }

    /// From now on a request whose last message contains `needle` gets `turn`, whatever
    /// the script's order says: for a CLI whose requests hold example exchanges the order
    /// would count as turns (aider's edit-format examples).
    pub fn answer_when(&self, needle: &str, turn: Turn) {
        lock(&self.inner).rules.push((needle.to_owned(), turn));
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.inner).requests.clone()
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `GET /v1/models`, as a doctor's check asks: 401 without the key (in either header),
/// else a queued fault's status, else 200.
fn models_status(inner: &Mutex<Inner>, headers: &HeaderMap, key: &str) -> u16 {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let anthropic = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    if bearer != Some(key) && anthropic != Some(key) {
        return 401;
    }
    match lock(inner).faults.pop_front() {
        Some(Fault::Status(status)) => status,
        Some(Fault::RateLimited { .. }) => 429,
        _ => 200,
    }
}

fn json_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn answer(
    State(inner): State<Arc<Mutex<Inner>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (index, key) = {
        let mut state = lock(&inner);
        state.requests.push(Recorded {
            path: path.clone(),
            headers: headers.clone(),
            body: json.clone(),
            received: Instant::now(),
            status: 0,
            sent: Vec::new(),
        });
        (state.requests.len() - 1, state.key.clone())
    };
    let set_status = |status: u16| lock(&inner).requests[index].status = status;

    if method == Method::GET && uri.path() == "/v1beta/models" {
        let presented = Api::Gemini { stream: false }.presented(&headers, &uri);
        let status = if presented == Some(key.as_str()) {
            200
        } else {
            401
        };
        set_status(status);
        return match status {
            200 => json_response(
                200,
                &serde_json::json!({"models": [{"name": "models/fake-model", "displayName": "Fake"}]}),
            ),
            _ => json_response(
                401,
                &gemini::error(401, "API key not valid. Please pass a valid API key."),
            ),
        };
    }
    if method == Method::GET && uri.path() == "/v1/models" {
        let status = models_status(&inner, &headers, &key);
        set_status(status);
        let shape = if headers.contains_key("x-api-key") {
            Api::Messages
        } else {
            Api::Responses
        };
        return match status {
            200 => json_response(
                200,
                &serde_json::json!({"object": "list", "data": [{"id": "fake-model", "type": "model", "object": "model"}]}),
            ),
            401 => json_response(401, &shape.error(401, "invalid api key")),
            status => json_response(status, &shape.error(status, "the fake provider failed")),
        };
    }
    let Some(api) = Api::of(&method, uri.path()) else {
        set_status(404);
        let shape = if headers.contains_key("x-api-key") {
            Api::Messages
        } else {
            Api::Responses
        };
        return json_response(404, &shape.error(404, &format!("no route {path}")));
    };
    if api.presented(&headers, &uri) != Some(key.as_str()) {
        set_status(401);
        let message = match api {
            Api::Messages => "invalid x-api-key",
            Api::Gemini { .. } => "API key not valid. Please pass a valid API key.",
            _ => "Incorrect API key provided.",
        };
        return json_response(401, &api.error(401, message));
    }

    let fault = lock(&inner).faults.pop_front();
    match fault {
        Some(Fault::Status(status)) => {
            set_status(status);
            return json_response(status, &api.error(status, "the fake provider failed"));
        }
        Some(Fault::RateLimited { retry_after }) => {
            set_status(429);
            let mut response = json_response(429, &api.error(429, "rate limited"));
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from(retry_after));
            return response;
        }
        Some(Fault::Hang) => {
            std::future::pending::<()>().await;
        }
        _ => {}
    }

    let (turn, id) = {
        let mut state = lock(&inner);
        let n = match api {
            Api::Messages => anthropic::turn_index(&json),
            Api::Chat => chat::turn_index(&json),
            Api::Responses => {
                responses::turn_index(&json, |previous| state.responses.get(previous).copied())
            }
            Api::Gemini { .. } => gemini::turn_index(&json),
        };
        let last = last_message(&json);
        let ruled = state
            .rules
            .iter()
            .find(|(needle, _)| last.contains(needle.as_str()))
            .map(|(_, turn)| turn);
        let Some(mut turn) = ruled.or(state.turns.get(n)).or(state.turns.last()).cloned() else {
            drop(state);
            set_status(500);
            return json_response(500, &api.error(500, "the fake's script is empty"));
        };
        if state.side_requests && matches!(turn.reply, Reply::Tool { .. }) && !offers_tools(&json) {
            turn.reply = Reply::Text(SIDE_ANSWER.to_owned());
        }
        choose_offered(&mut turn, &json);
        state.next_id += 1;
        let id = state.next_id;
        if api == Api::Responses {
            state.responses.insert(responses::response_id(id), n);
        }
        (turn, id)
    };
    let model = match api {
        Api::Gemini { .. } => gemini::route(uri.path()).map_or("fake-model", |(m, _)| m),
        _ => json["model"].as_str().unwrap_or("fake-model"),
    }
    .to_owned();
    set_status(200);

    let streamed = match api {
        // Without `alt=sse` Gemini streams a JSON array, which no CLI asks for.
        Api::Gemini { stream } => stream && uri.query().is_some_and(|q| q.contains("alt=sse")),
        _ => json["stream"] == Value::Bool(true),
    };
    if !streamed {
        let object = match api {
            Api::Messages => anthropic::message(&turn, &model, id),
            Api::Responses => responses::object(&turn, &model, id),
            Api::Chat => chat::object(&turn, &model, id),
            Api::Gemini { .. } => gemini::object(&turn, &model, id),
        };
        return json_response(200, &object);
    }
    let events = match api {
        Api::Messages => anthropic::stream(&turn, &model, id),
        Api::Responses => responses::stream(&turn, &model, id),
        Api::Chat => chat::stream(
            &turn,
            &model,
            id,
            json["stream_options"]["include_usage"] == Value::Bool(true),
        ),
        Api::Gemini { .. } => gemini::stream(&turn, &model, id),
    };
    let (sender, receiver) = mpsc::unbounded::<Result<Bytes, std::io::Error>>();
    tokio::spawn(send_events(inner.clone(), index, events, fault, sender));
    let request_id = match api {
        Api::Messages => "request-id",
        _ => "x-request-id",
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header(request_id, format!("req_fake{id:08}"))
        .body(Body::from_stream(receiver))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Sends the events of a stream with the delays and the cut a fault asks for, recording when
/// each one left.
async fn send_events(
    inner: Arc<Mutex<Inner>>,
    index: usize,
    events: Vec<Event>,
    fault: Option<Fault>,
    sender: mpsc::UnboundedSender<Result<Bytes, std::io::Error>>,
) {
    for (n, event) in events.iter().enumerate() {
        match fault {
            Some(Fault::Slow(delay)) => tokio::time::sleep(delay).await,
            Some(Fault::Pause { after, pause }) if n == after => tokio::time::sleep(pause).await,
            Some(Fault::Cut { after }) if n == after => {
                // Let the connection write what was sent, or the cut would swallow it.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut");
                let _ = sender.unbounded_send(Err(cut));
                return;
            }
            _ => {}
        }
        if sender
            .unbounded_send(Ok(Bytes::from(event.render())))
            .is_err()
        {
            return;
        }
        lock(&inner).requests[index].sent.push(Sent {
            event: event.event.clone().unwrap_or_else(|| "data".to_owned()),
            at: Instant::now(),
        });
    }
}
