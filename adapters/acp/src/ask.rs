//! Asking the runner about a permission the role's policy leaves to a person:
//! `POST ${GATEHOUSE_TOOLS_URL}/permission` with `Authorization: Bearer
//! ${GATEHOUSE_TOOLS_TOKEN}` and `{"tool", "input"}`, answered `{"decision": "allow" |
//! "deny", "reason", "by"}` once a person has decided (the request long-polls meanwhile).
//! A hand-written HTTP/1.1 request over a `TcpStream` keeps the shim small and static; the
//! runner's endpoint is plain HTTP on the sandbox's loopback (the relay forwards it). Every
//! failure — no address, unreachable, a refusal, an answer that does not read — is a deny
//! whose reason says so: `ask` never becomes allow.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a person may take: a gate's own time-out is the runner's, this only stops a
/// shim waiting on a runner that went away without closing the connection.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The most of an answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The most of a request body sent, as much as the runner takes; a bigger call is denied
/// rather than asked about.
pub const MAX_QUESTION_BYTES: usize = gatehouse_agent::permission::MAX_PERMISSION_REQUEST_BYTES;

/// The runner's tools endpoint, as the sandbox's variables give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    host: String,
    port: u16,
    /// The URL's path, without a trailing `/`.
    base: String,
    token: String,
}

/// What a person (or the runner's policy) decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub allow: bool,
    pub reason: String,
    /// Who decided: a person's id, or `policy`.
    pub by: String,
}

impl Endpoint {
    /// From `GATEHOUSE_TOOLS_URL` and `GATEHOUSE_TOOLS_TOKEN`; `Err` says what is missing.
    pub fn from_env() -> Result<Self, String> {
        let url = std::env::var("GATEHOUSE_TOOLS_URL")
            .map_err(|_| "the sandbox has no GATEHOUSE_TOOLS_URL to ask a person through")?;
        let token = std::env::var("GATEHOUSE_TOOLS_TOKEN")
            .map_err(|_| "the sandbox has no GATEHOUSE_TOOLS_TOKEN to ask a person with")?;
        Self::parse(&url, token)
    }

    /// `http://host:port[/base]`.
    pub fn parse(url: &str, token: String) -> Result<Self, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("GATEHOUSE_TOOLS_URL {url:?} is not an http:// address"))?;
        let (authority, base) = rest.split_once('/').unwrap_or((rest, ""));
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse::<u16>()
                    .map_err(|_| format!("GATEHOUSE_TOOLS_URL {url:?} has no valid port"))?,
            ),
            None => (authority, 80),
        };
        if host.is_empty() || token.contains(['\r', '\n']) || base.contains(['\r', '\n', ' ']) {
            return Err(format!(
                "GATEHOUSE_TOOLS_URL {url:?} is not a usable address"
            ));
        }
        let base = base.trim_end_matches('/');
        Ok(Self {
            host: host.to_owned(),
            port,
            base: if base.is_empty() {
                String::new()
            } else {
                format!("/{base}")
            },
            token,
        })
    }

    /// Asks about one call; waits at most `timeout`.
    pub async fn ask(&self, tool: &str, input: &Value, timeout: Duration) -> Answer {
        let body = json!({"tool": tool, "input": input}).to_string();
        if body.len() > MAX_QUESTION_BYTES {
            return refused(format!(
                "the call is {} bytes, too large to ask a person about (at most {MAX_QUESTION_BYTES})",
                body.len()
            ));
        }
        match tokio::time::timeout(timeout, self.exchange(&body)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(why)) => refused(why),
            Err(_) => refused(format!("nobody answered within {} s", timeout.as_secs())),
        }
    }

    async fn exchange(&self, body: &str) -> Result<Answer, String> {
        let address = format!("{}:{}", self.host, self.port);
        let mut stream = TcpStream::connect(&address)
            .await
            .map_err(|e| format!("the runner's tools endpoint {address} is unreachable: {e}"))?;
        let request = format!(
            "POST {}/permission HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.base,
            self.token,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("cannot send to the runner's tools endpoint: {e}"))?;
        let mut raw = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let read = stream
                .read(&mut chunk)
                .await
                .map_err(|e| format!("the runner's tools endpoint broke off: {e}"))?;
            if read == 0 {
                break;
            }
            raw.extend_from_slice(&chunk[..read]);
            if raw.len() > MAX_ANSWER_BYTES {
                return Err("the runner's answer is too large".to_owned());
            }
        }
        read_answer(&raw)
    }
}

fn refused(reason: String) -> Answer {
    Answer {
        allow: false,
        reason,
        by: "gatehouse-acp".to_owned(),
    }
}

/// An HTTP/1.1 response: status 200 and a JSON body (plain or chunked).
fn read_answer(raw: &[u8]) -> Result<Answer, String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("the runner's answer is not HTTP")?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or("the runner's answer has no status")?;
    let chunked = lines.any(|line| {
        line.to_ascii_lowercase().starts_with("transfer-encoding:")
            && line.to_ascii_lowercase().contains("chunked")
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_owned()
    };
    if status != 200 {
        let said: String = body.trim().chars().take(200).collect();
        return Err(format!("the runner refused to ask (HTTP {status}: {said})"));
    }
    let value: Value =
        serde_json::from_str(&body).map_err(|e| format!("the runner's answer is not JSON: {e}"))?;
    let allow = match value.get("decision").and_then(Value::as_str) {
        Some("allow") => true,
        Some("deny") => false,
        _ => return Err("the runner's answer has no decision \"allow\" or \"deny\"".to_owned()),
    };
    let text = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(500)
            .collect::<String>()
    };
    Ok(Answer {
        allow,
        reason: text("reason"),
        by: text("by"),
    })
}

fn dechunk(mut body: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").ok_or("a chunk has no size line")?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "a chunk size is not hexadecimal")?;
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest.get(..size).ok_or("a chunk is cut short")?;
        out.push_str(chunk);
        body = rest.get(size..).unwrap_or("").trim_start_matches("\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::{Endpoint, read_answer};

    #[test]
    fn addresses_are_plain_http_with_a_port() {
        let e = Endpoint::parse("http://127.0.0.1:8720/x/", "t".into()).unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.base.as_str()),
            ("127.0.0.1", 8720, "/x")
        );
        assert!(Endpoint::parse("https://h:1", "t".into()).is_err());
        assert!(Endpoint::parse("http://h:port", "t".into()).is_err());
        assert!(Endpoint::parse("http://h:1", "t\r\nX: y".into()).is_err());
    }

    #[test]
    fn answers_are_read_plain_or_chunked_and_anything_else_is_an_error() {
        let plain =
            b"HTTP/1.1 200 OK\r\ncontent-length: 40\r\n\r\n{\"decision\":\"allow\",\"by\":\"ana\"}";
        assert!(read_answer(plain).unwrap().allow);
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"dec\r\n19\r\nision\":\"deny\",\"by\":\"b\"}\r\n0\r\n\r\n";
        let answer = read_answer(chunked).unwrap();
        assert!(!answer.allow);
        assert_eq!(answer.by, "b");
        assert!(
            read_answer(b"HTTP/1.1 401 Unauthorized\r\n\r\nno")
                .unwrap_err()
                .contains("401")
        );
        assert!(read_answer(b"HTTP/1.1 200 OK\r\n\r\n{\"decision\":\"yes\"}").is_err());
        assert!(read_answer(b"garbage").is_err());
    }
}
