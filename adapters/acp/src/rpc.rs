//! JSON-RPC 2.0 over the agent's stdio, one message per line (ACP's stdio transport).
//!
//! Written here rather than taken from the `agent-client-protocol` crate: the shim needs
//! five requests, passes every update through verbatim, and must survive what a typed SDK
//! turns into errors it cannot see past — an agent that prints a banner or a log line on
//! stdout, a line of megabytes, a message of a newer protocol version. Messages are read as
//! plain JSON, so an unknown field or update kind is passed on, not refused.
//!
//! A reader task hands everything the agent sends — answers, its requests and
//! notifications, non-JSON lines — to the session in the order it arrived (so the updates a
//! prompt streams come before its answer), and its end by closing the channel. A writer
//! task owns the agent's stdin, so a write never blocks the session even when the agent
//! stops reading.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;

/// Lines longer than this are dropped (and reported as non-JSON): no protocol message comes
/// close, and the output's reader would not parse them either.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of a non-JSON line is quoted.
const EXCERPT_CHARS: usize = 160;

/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;

/// What the agent sent.
#[derive(Debug)]
pub enum Incoming {
    /// The answer to the shim's request with this id.
    Answer(u64, Reply),
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

/// The shim's end of the connection.
#[derive(Debug)]
pub struct Connection {
    writer: Option<mpsc::UnboundedSender<String>>,
    next_id: u64,
}

impl Connection {
    /// Starts the reader and writer tasks; what the agent sends comes out of the receiver,
    /// which ends when the agent's stdout does.
    pub fn start(
        stdin: ChildStdin,
        stdout: ChildStdout,
    ) -> (Self, mpsc::UnboundedReceiver<Incoming>) {
        let (incoming, receiver) = mpsc::unbounded_channel();
        tokio::spawn(read(stdout, incoming));
        let (writer, lines) = mpsc::unbounded_channel();
        tokio::spawn(write(stdin, lines));
        (
            Self {
                writer: Some(writer),
                next_id: 0,
            },
            receiver,
        )
    }

    /// Sends a request; its answer is the [`Incoming::Answer`] with the id returned.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
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

    /// A handle that answers one of the agent's requests later, from another task (a
    /// permission a person decides); it sends nothing once the connection is closed and
    /// the writer gone.
    pub fn responder(&self) -> Responder {
        Responder {
            writer: self.writer.clone(),
        }
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

/// Answers one request from elsewhere than the run's loop.
#[derive(Debug)]
pub struct Responder {
    writer: Option<mpsc::UnboundedSender<String>>,
}

impl Responder {
    /// As [`Connection::respond`].
    pub fn respond(&self, id: &Value, result: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
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

/// Reads the agent's stdout to its end, handing each message to the session.
async fn read(stdout: ChildStdout, incoming: mpsc::UnboundedSender<Incoming>) {
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
        if incoming.send(classify(&line)).is_err() {
            break;
        }
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

fn classify(line: &[u8]) -> Incoming {
    let garbage = || Incoming::Garbage(excerpt(line));
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(line) else {
        return garbage();
    };
    let params = message.remove("params").unwrap_or(Value::Null);
    match (message.remove("method"), message.remove("id")) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request { id, method, params },
        (Some(Value::String(method)), None) => Incoming::Notification { method, params },
        (None, Some(id)) => {
            // The shim's ids are numbers: any other answer is nobody's.
            let Some(id) = id.as_u64() else {
                return garbage();
            };
            if let Some(error) = message.remove("error") {
                Incoming::Answer(id, Err(rpc_error(error)))
            } else if let Some(result) = message.remove("result") {
                Incoming::Answer(id, Ok(result))
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

    use super::{Incoming, classify};

    #[test]
    fn lines_are_answers_requests_notifications_or_garbage() {
        let answer = classify(br#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
        assert!(matches!(answer, Incoming::Answer(3, Ok(ref v)) if v["stopReason"] == "end_turn"));
        let error = classify(br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Authentication required"}}"#);
        assert!(matches!(error, Incoming::Answer(2, Err(ref e)) if e.code == -32000));
        let request = classify(
            br#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}"#,
        );
        assert!(matches!(
            request,
            Incoming::Request { ref id, .. } if *id == json!(0)
        ));
        let update =
            classify(br#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{}}}"#);
        assert!(matches!(update, Incoming::Notification { .. }));
        for garbage in [
            &b"Loading..."[..],
            b"[1,2]",
            br#"{"id":"x","result":1}"#,
            b"{\"id\":1}",
        ] {
            assert!(matches!(classify(garbage), Incoming::Garbage(_)));
        }
    }
}
