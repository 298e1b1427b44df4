//! JSON-RPC 2.0 over the agent's stdio, one message per line (ACP's stdio transport).
//!
//! Written here rather than taken from the `agent-client-protocol` crate: the shim needs
//! five requests, passes every update through verbatim, and must survive what a typed SDK
//! turns into errors it cannot see past — an agent that prints a banner or a log line on
//! stdout, a line of megabytes, a message of a newer protocol version. Messages are read as
//! plain JSON, so an unknown field or update kind is passed on, not refused.
//!
//! A reader task routes each answer to the request waiting for it and hands everything else
//! (the agent's requests and notifications, non-JSON lines, the end of its output) to the
//! session in order. A writer task owns the agent's stdin, so a write never blocks the
//! session even when the agent stops reading.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};

/// Lines longer than this are dropped (and reported as non-JSON): no protocol message comes
/// close, and the output's reader would not parse them either.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of a non-JSON line is quoted.
const EXCERPT_CHARS: usize = 160;

/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;

/// What the agent sent that is not an answer to the shim.
#[derive(Debug)]
pub enum Incoming {
    /// A request the shim must answer (`session/request_permission`, …).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification (`session/update`).
    Notification { method: String, params: Value },
    /// A line that is not a JSON-RPC message, quoted (shortened).
    Garbage(String),
}

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Value,
}

/// The answer to a request.
pub type Reply = Result<Value, RpcError>;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>;

/// The shim's end of the connection.
#[derive(Debug)]
pub struct Connection {
    writer: Option<mpsc::UnboundedSender<String>>,
    next_id: u64,
    pending: Pending,
}

impl Connection {
    /// Starts the reader and writer tasks; what the agent sends that is not an answer comes
    /// out of the receiver, which ends when the agent's stdout does.
    pub fn start(
        stdin: ChildStdin,
        stdout: ChildStdout,
    ) -> (Self, mpsc::UnboundedReceiver<Incoming>) {
        let pending: Pending = Arc::default();
        let (incoming, receiver) = mpsc::unbounded_channel();
        tokio::spawn(read(stdout, Arc::clone(&pending), incoming));
        let (writer, lines) = mpsc::unbounded_channel();
        tokio::spawn(write(stdin, lines));
        (
            Self {
                writer: Some(writer),
                next_id: 0,
                pending,
            },
            receiver,
        )
    }

    /// Sends a request; its answer comes out of the receiver, which fails if the agent's
    /// output ends first.
    pub fn request(&mut self, method: &str, params: Value) -> oneshot::Receiver<Reply> {
        self.next_id += 1;
        let id = self.next_id;
        let (sender, receiver) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, sender);
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        receiver
    }

    /// Sends a notification (`session/cancel`).
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answers one of the agent's requests.
    pub fn respond(&self, id: &Value, reply: Reply) {
        let message = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": error.code, "message": error.message,
            }}),
        };
        self.send(&message);
    }

    /// Closes the agent's stdin once what was sent is written.
    pub fn close(&mut self) {
        self.writer = None;
    }

    fn send(&self, message: &Value) {
        if let Some(writer) = &self.writer {
            let _ = writer.send(format!("{message}\n"));
        }
    }
}

/// Writes each line to the agent's stdin until the connection closes or the agent stops
/// reading; then stdin is closed.
async fn write(mut stdin: ChildStdin, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(line) = lines.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
    let _ = stdin.shutdown().await;
}

/// Reads the agent's stdout to its end: answers go to their requests, the rest to the
/// session. At the end the requests still waiting are dropped, so they fail.
async fn read(stdout: ChildStdout, pending: Pending, incoming: mpsc::UnboundedSender<Incoming>) {
    let mut stdout = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut stdout)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            let excerpt = excerpt(&line);
            if skip_line(&mut stdout).await.is_err() {
                break;
            }
            let _ = incoming.send(Incoming::Garbage(format!(
                "{excerpt} (a line of more than {MAX_LINE_BYTES} bytes)"
            )));
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match classify(&line) {
            Message::Answer(id, reply) => {
                let waiting = pending.lock().ok().and_then(|mut p| p.remove(&id));
                if let Some(waiting) = waiting {
                    let _ = waiting.send(reply);
                }
            }
            Message::Other(message) => {
                let _ = incoming.send(message);
            }
        }
    }
    if let Ok(mut pending) = pending.lock() {
        pending.clear();
    }
}

/// Reads up to the next line's start.
async fn skip_line(stdout: &mut BufReader<ChildStdout>) -> std::io::Result<()> {
    loop {
        let buffer = stdout.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        if let Some(at) = buffer.iter().position(|byte| *byte == b'\n') {
            stdout.consume(at + 1);
            return Ok(());
        }
        let all = buffer.len();
        stdout.consume(all);
    }
}

enum Message {
    /// An answer to the shim's request with this id.
    Answer(u64, Reply),
    Other(Incoming),
}

fn classify(line: &[u8]) -> Message {
    let garbage = || Message::Other(Incoming::Garbage(excerpt(line)));
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(line) else {
        return garbage();
    };
    let params = message.remove("params").unwrap_or(Value::Null);
    match (message.remove("method"), message.remove("id")) {
        (Some(Value::String(method)), Some(id)) => {
            Message::Other(Incoming::Request { id, method, params })
        }
        (Some(Value::String(method)), None) => {
            Message::Other(Incoming::Notification { method, params })
        }
        (None, Some(id)) => {
            // An answer to an id the shim never sent is nobody's: dropped as garbage.
            let Some(id) = id.as_u64() else {
                return garbage();
            };
            if let Some(error) = message.remove("error") {
                Message::Answer(id, Err(rpc_error(error)))
            } else if let Some(result) = message.remove("result") {
                Message::Answer(id, Ok(result))
            } else {
                garbage()
            }
        }
        _ => garbage(),
    }
}

fn rpc_error(error: Value) -> RpcError {
    RpcError {
        code: error
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or_default(),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .chars()
            .take(1000)
            .collect(),
        data: error.get("data").cloned().unwrap_or(Value::Null),
    }
}

/// The line's start, for a message.
pub fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    let mut excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
    if excerpt.len() < text.len() {
        excerpt.push('…');
    }
    excerpt
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Incoming, Message, classify};

    #[test]
    fn lines_are_answers_requests_notifications_or_garbage() {
        let answer = classify(br#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
        assert!(matches!(answer, Message::Answer(3, Ok(ref v)) if v["stopReason"] == "end_turn"));
        let error = classify(br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Authentication required"}}"#);
        assert!(matches!(error, Message::Answer(2, Err(ref e)) if e.code == -32000));
        let request = classify(
            br#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}"#,
        );
        assert!(matches!(
            request,
            Message::Other(Incoming::Request { ref id, .. }) if *id == json!(0)
        ));
        let update =
            classify(br#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{}}}"#);
        assert!(matches!(
            update,
            Message::Other(Incoming::Notification { .. })
        ));
        for garbage in [
            &b"Loading..."[..],
            b"[1,2]",
            br#"{"id":"x","result":1}"#,
            b"{\"id\":1}",
        ] {
            assert!(matches!(
                classify(garbage),
                Message::Other(Incoming::Garbage(_))
            ));
        }
    }
}
