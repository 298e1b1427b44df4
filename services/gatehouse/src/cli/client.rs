//! The CLI's HTTP client for the API.

use anyhow::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cli::args::ClientArgs;
use crate::config::Config;

/// Talks to one Gatehouse server as one token.
pub struct Client {
    base: String,
    token: String,
    /// Where the server's address came from, for errors.
    server_from: String,
    /// Where the token came from, for errors.
    token_from: String,
    http: reqwest::Client,
}

impl Client {
    /// The client the verbs' arguments ask for. The server is `--server` (or
    /// `GATEHOUSE_SERVER`), else the address `gatehouse up` recorded in the data directory,
    /// else `http://<server.listen>`; the token is `--token` (or `GATEHOUSE_TOKEN`), else
    /// the data directory's `admin.token`. The data directory is `--data-dir`, else
    /// `server.data_dir`.
    pub fn for_args(args: &ClientArgs, config: &Config) -> anyhow::Result<Self> {
        let data_dir = args.data_dir.as_deref().unwrap_or(&config.server.data_dir);
        let (server, server_from) = match &args.server {
            Some(server) => (
                server.clone(),
                given("--server", "GATEHOUSE_SERVER", server),
            ),
            None => match crate::server_url::read(data_dir)? {
                Some(url) => (
                    url,
                    format!(
                        "{}, where gatehouse up records it",
                        crate::server_url::path(data_dir).display()
                    ),
                ),
                None => (
                    format!("http://{}", config.server.listen),
                    "server.listen in the configuration".to_owned(),
                ),
            },
        };
        let (token, token_from) = match &args.token {
            Some(token) => (token.clone(), given("--token", "GATEHOUSE_TOKEN", token)),
            None => {
                let file = data_dir.join("admin.token");
                let token = std::fs::read_to_string(&file)
                    .with_context(|| format!("no --token or GATEHOUSE_TOKEN given and {} cannot be read (is gatehouse up running with this data directory? else pass --data-dir DIR)", file.display()))?
                    .trim()
                    .to_owned();
                (token, file.display().to_string())
            }
        };
        Ok(Self {
            base: format!("{}/api/v1", server.trim_end_matches('/')),
            token,
            server_from,
            token_from,
            http: reqwest::Client::new(),
        })
    }

    /// The server's address, without `/api/v1`: where its console is.
    pub fn server(&self) -> &str {
        self.base.trim_end_matches("/api/v1")
    }

    /// GET a JSON resource.
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
            .with_context(|| self.unreachable())?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            return Err(self.refused(status, &body).into());
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
            .with_context(|| self.unreachable())?;
        let status = response.status();
        if !status.is_success() {
            let body = response.bytes().await?;
            return Err(self.refused(status, &body).into());
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

impl Client {
    /// Why the server could not be reached, with where its address came from.
    fn unreachable(&self) -> String {
        format!(
            "cannot reach the Gatehouse server at {} (from {})",
            self.server(),
            self.server_from
        )
    }

    /// The server's refusal; a 401 says which server was asked with which token, since
    /// the commonest cause is a token of one server shown to another.
    fn refused(&self, status: reqwest::StatusCode, body: &[u8]) -> ApiFailure {
        let hint = if status == reqwest::StatusCode::UNAUTHORIZED {
            format!(
                ": asked {} (from {}) with the token from {}; pass --server URL for the server \
                 that issued the token, or --data-dir DIR of the gatehouse up whose token \
                 this is, or --token with a token this server issued",
                self.server(),
                self.server_from,
                self.token_from
            )
        } else {
            String::new()
        };
        ApiFailure {
            status: status.as_u16(),
            message: error_message(&String::from_utf8_lossy(body)),
            hint,
        }
    }
}

/// `--flag` or `VARIABLE`, whichever gave `value` (clap reads both into one field).
fn given(flag: &str, variable: &str, value: &str) -> String {
    if std::env::var(variable).is_ok_and(|v| v == value) {
        variable.to_owned()
    } else {
        flag.to_owned()
    }
}

/// The server refused a request: its status and its message, so a caller (the MCP
/// server) can say which it was; shown as the message with the status, and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{message} ({}){hint}", status_text(*status))]
pub struct ApiFailure {
    /// The HTTP status.
    pub status: u16,
    /// The API's `{"error": ...}` message, or the body as it came.
    pub message: String,
    /// What the CLI adds: for a 401, which server was asked with which token.
    pub hint: String,
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
