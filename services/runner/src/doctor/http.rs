//! The two requests the checks make from the runner itself, over plain HTTP/1.1 on the
//! runner's loopback: a model list through the gateway (which swaps in the provider's real
//! key), and a `CONNECT` through the egress proxy. Written by hand, bounded in time and
//! size: the answers come from Gatehouse's own listeners, relaying whatever the provider
//! said.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most of an answer read.
const ANSWER_LIMIT: usize = 64 * 1024;
/// How much of a provider's error message a finding quotes.
const MESSAGE_CHARS: usize = 200;

/// An answer: its status and, for an error, the message its body carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Answer {
    pub(super) status: u16,
    /// `error.message` of a JSON body (Anthropic's and OpenAI's shapes alike), else the
    /// start of the body; empty when there is none.
    pub(super) message: String,
}

/// How a model provider's key goes with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyHeader {
    /// `x-api-key`, with `anthropic-version`.
    Anthropic,
    /// `Authorization: Bearer`.
    Bearer,
    /// `x-goog-api-key` (Google's Gemini API).
    Google,
}

/// `GET {base}/models` (OpenAI), `GET {base}/v1/models` (Anthropic) or
/// `GET {base}/v1beta/models` (Gemini) through the gateway at `base`
/// (`http://127.0.0.1:PORT/<provider>[/v1]`), presenting `token`.
pub(super) async fn list_models(
    base: &str,
    header: KeyHeader,
    token: &str,
    within: Duration,
) -> Result<Answer, String> {
    let url = url::Url::parse(base).map_err(|e| format!("the gateway's address {base}: {e}"))?;
    let address = address(&url)?;
    let root = url.path().trim_end_matches('/');
    let path = match header {
        KeyHeader::Anthropic => format!("{root}/v1/models"),
        KeyHeader::Bearer => format!("{root}/models"),
        KeyHeader::Google => format!("{root}/v1beta/models"),
    };
    let credential = match header {
        KeyHeader::Anthropic => format!("x-api-key: {token}\r\nanthropic-version: 2023-06-01\r\n"),
        KeyHeader::Bearer => format!("Authorization: Bearer {token}\r\n"),
        KeyHeader::Google => format!("x-goog-api-key: {token}\r\n"),
    };
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{credential}Accept: application/json\r\nConnection: close\r\n\r\n"
    );
    exchange(&address, &request, within, true).await
}

/// `CONNECT host:port` through the egress proxy at `proxy` (`http://gatehouse:TOKEN@ADDR`).
pub(super) async fn connect(
    proxy: &str,
    host: &str,
    port: u16,
    within: Duration,
) -> Result<Answer, String> {
    let url = url::Url::parse(proxy).map_err(|_| "the egress proxy's address".to_owned())?;
    let address = address(&url)?;
    let credential = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        url.username(),
        url.password().unwrap_or_default()
    ));
    let request = format!(
        "CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\nProxy-Authorization: Basic {credential}\r\n\r\n"
    );
    // An answer to a CONNECT that went through has no end: only its head is read.
    exchange(&address, &request, within, false).await
}

fn address(url: &url::Url) -> Result<String, String> {
    let host = url.host_str().ok_or("an address without a host")?;
    let port = url
        .port_or_known_default()
        .ok_or("an address without a port")?;
    Ok(format!("{host}:{port}"))
}

/// Sends `request` and reads the answer: to its end (`whole`), or only its head.
async fn exchange(
    address: &str,
    request: &str,
    within: Duration,
    whole: bool,
) -> Result<Answer, String> {
    let talk = async {
        let mut stream = TcpStream::connect(address)
            .await
            .map_err(|e| format!("connecting to {address}: {e}"))?;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("writing to {address}: {e}"))?;
        let mut answer = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let n = stream
                .read(&mut buffer)
                .await
                .map_err(|e| format!("reading from {address}: {e}"))?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..n]);
            let head_done = find(&answer, b"\r\n\r\n").is_some();
            if answer.len() >= ANSWER_LIMIT || (!whole && head_done) {
                break;
            }
        }
        Ok::<_, String>(answer)
    };
    let answer = tokio::time::timeout(within, talk)
        .await
        .map_err(|_| format!("no answer from {address} within {}s", within.as_secs()))??;
    parse(&answer)
}

/// The status and error message of a raw HTTP/1.1 answer.
pub(super) fn parse(answer: &[u8]) -> Result<Answer, String> {
    let head_end = find(answer, b"\r\n\r\n").ok_or("an answer without a complete head")?;
    let head = String::from_utf8_lossy(&answer[..head_end]);
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or("an answer without a status line")?;
    let chunked = lines.any(|line| {
        let line = line.to_ascii_lowercase();
        line.starts_with("transfer-encoding:") && line.contains("chunked")
    });
    let raw = &answer[head_end + 4..];
    let body = if chunked { dechunk(raw) } else { raw.to_vec() };
    Ok(Answer {
        status,
        message: message(&body),
    })
}

/// A chunked body's data, as far as it is complete.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(line_end) = find(raw, b"\r\n") {
        let size = String::from_utf8_lossy(&raw[..line_end]);
        let Ok(size) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
        else {
            break;
        };
        let start = line_end + 2;
        if size == 0 || raw.len() < start + size {
            break;
        }
        body.extend_from_slice(&raw[start..start + size]);
        raw = raw.get(start + size + 2..).unwrap_or_default();
    }
    body
}

/// `error.message` (or `message`) of a JSON body, else its start, on one line.
fn message(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(json) => json
            .pointer("/error/message")
            .or_else(|| json.get("message"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MESSAGE_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MESSAGE_CHARS - 1).collect();
    cut.push('…');
    cut
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_plain_or_chunked() {
        let plain = b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\r\n{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}";
        assert_eq!(
            parse(plain),
            Ok(Answer {
                status: 401,
                message: "invalid x-api-key".into()
            })
        );
        let chunked = b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"error\":{\"messa\r\n12\r\nge\":\"overloaded\"}}\r\n0\r\n\r\n";
        assert_eq!(
            parse(chunked).map(|a| (a.status, a.message)),
            Ok((503, "overloaded".into()))
        );
        let refused = b"HTTP/1.1 403 Forbidden\r\n\r\negress: example.com:443 is not in the egress allow-list\n";
        let answer = parse(refused).expect("an answer");
        assert_eq!(answer.status, 403);
        assert!(answer.message.starts_with("egress: example.com:443"));
        assert!(parse(b"HTTP/1.1 200").is_err(), "no complete head");
        let long = format!("HTTP/1.1 500 x\r\n\r\n{}", "y".repeat(1000));
        assert_eq!(
            parse(long.as_bytes()).map(|a| a.message.chars().count()),
            Ok(MESSAGE_CHARS)
        );
    }
}
