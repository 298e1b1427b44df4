//! What the fake saw and sent: one [`Recorded`] per request.

use std::time::Instant;

use axum::http::HeaderMap;
use serde_json::Value;

/// One request the fake received, and what it answered.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The path, query included.
    pub path: String,
    /// The headers as they reached the provider (tests assert which key came).
    pub headers: HeaderMap,
    /// The body as JSON (`Null` when it was not JSON).
    pub body: Value,
    /// When the request arrived.
    pub received: Instant,
    /// The status answered.
    pub status: u16,
    /// Each event of a streamed answer, when it was handed to the connection.
    pub sent: Vec<Sent>,
}

impl Recorded {
    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// One event sent on a stream.
#[derive(Clone, Debug)]
pub struct Sent {
    /// The SSE event name (`data` for Chat Completions' unnamed events).
    pub event: String,
    pub at: Instant,
}
