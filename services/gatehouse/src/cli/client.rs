//! The CLI's HTTP client for the API.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Talks to one Gatehouse server as one token.
pub struct Client {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Client {
    /// A client for `server` (e.g. `http://127.0.0.1:8080`). The token is the given one,
    /// else `<data_dir>/admin.token`.
    pub fn new(server: &str, token: Option<String>, data_dir: &Path) -> anyhow::Result<Self> {
        let token = match token {
            Some(token) => token,
            None => {
                let file = data_dir.join("admin.token");
                std::fs::read_to_string(&file)
                    .with_context(|| format!("no --token or GATEHOUSE_TOKEN given and {} cannot be read (is `gatehouse up` running with this data directory?)", file.display()))?
                    .trim()
                    .to_owned()
            }
        };
        Ok(Self {
            base: format!("{}/api/v1", server.trim_end_matches('/')),
            token,
            http: reqwest::Client::new(),
        })
    }

    /// GET a JSON resource.
    /// The server's address, without `/api/v1`: where its console is.
    pub fn server(&self) -> &str {
        self.base.trim_end_matches("/api/v1")
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    /// POST a JSON body.
    pub async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> anyhow::Result<T> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// GET raw bytes (an artifact).
    pub async fn get_bytes(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        self.exchange(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    /// DELETE a resource.
    pub async fn delete(&self, path: &str) -> anyhow::Result<()> {
        self.exchange(self.http.delete(format!("{}{path}", self.base)))
            .await
            .map(drop)
    }

    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> anyhow::Result<T> {
        let body = self.exchange(request).await?;
        serde_json::from_slice(&body).with_context(|| {
            format!(
                "unexpected response from the server: {}",
                String::from_utf8_lossy(&body)
            )
        })
    }

    /// Sends a request; the body of a success, or the server's error message.
    async fn exchange(&self, request: reqwest::RequestBuilder) -> anyhow::Result<Vec<u8>> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| format!("cannot reach the Gatehouse server at {}", self.base))?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            return Err(ApiFailure {
                status: status.as_u16(),
                message: error_message(&String::from_utf8_lossy(&body)),
            }
            .into());
        }
        Ok(body.to_vec())
    }

    /// GET raw bytes, reading at most `limit` of them: the bytes, and whether there were
    /// more. The body past the bound is never read into memory.
    pub async fn get_bytes_bounded(
        &self,
        path: &str,
        limit: usize,
    ) -> anyhow::Result<(Vec<u8>, bool)> {
        let mut response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| format!("cannot reach the Gatehouse server at {}", self.base))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.bytes().await?;
            return Err(ApiFailure {
                status: status.as_u16(),
                message: error_message(&String::from_utf8_lossy(&body)),
            }
            .into());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            let room = limit - bytes.len();
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                return Ok((bytes, true));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((bytes, false))
    }
}

/// The server refused a request: its status and its message, so a caller (the MCP
/// server) can say which it was; shown as the message with the status.
#[derive(Debug, thiserror::Error)]
#[error("{message} ({})", status_text(*status))]
pub struct ApiFailure {
    /// The HTTP status.
    pub status: u16,
    /// The API's `{"error": ...}` message, or the body as it came.
    pub message: String,
}

/// `403 Forbidden`, as reqwest writes a status.
fn status_text(status: u16) -> String {
    reqwest::StatusCode::from_u16(status)
        .map(|s| s.to_string())
        .unwrap_or_else(|_| status.to_string())
}

/// The API's `{"error": ...}` message, or the body as it came.
fn error_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.to_owned())
}

/// One URL path segment, percent-encoded: whatever a name holds stays one segment.
pub fn path_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
