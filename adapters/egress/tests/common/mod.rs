//! What the proxy tests share: a local upstream that greets and echoes, a proxy started on
//! a loopback port with its records on a channel, and a raw client that speaks CONNECT.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_egress::{Admit, Connection, Egress, Limits, Resolve};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// What the upstream says first, before echoing.
pub const GREETING: &[u8] = b"hello from upstream\n";

/// A server on 127.0.0.1 that sends [`GREETING`], then echoes until the client closes.
pub async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind upstream");
    let address = listener.local_addr().expect("upstream address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                if stream.write_all(GREETING).await.is_err() {
                    return;
                }
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
                let _ = write.shutdown().await;
            });
        }
    });
    address
}

/// A proxy serving on a loopback port.
pub struct Proxy {
    pub address: SocketAddr,
    pub records: mpsc::UnboundedReceiver<Connection>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Proxy {
    pub async fn start(admit: impl Admit, limits: Limits) -> Self {
        Self::start_with(Egress::new(limits), admit).await
    }

    pub async fn start_with(egress: Egress, admit: impl Admit) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let address = listener.local_addr().expect("proxy address");
        let (records_tx, records) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            egress
                .serve(
                    listener,
                    admit,
                    move |c: Connection| {
                        let _ = records_tx.send(c);
                    },
                    async move {
                        let _ = stopped.await;
                    },
                )
                .await;
        });
        Self {
            address,
            records,
            stop: Some(stop),
            task,
        }
    }

    /// The next record, within five seconds.
    pub async fn record(&mut self) -> Connection {
        tokio::time::timeout(Duration::from_secs(5), self.records.recv())
            .await
            .expect("a record within 5 s")
            .expect("the proxy is running")
    }

    /// Shuts the proxy down and waits for `serve` to return.
    pub async fn shut_down(mut self) -> mpsc::UnboundedReceiver<Connection> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(5), &mut self.task)
            .await
            .expect("serve returns within 5 s")
            .expect("serve did not panic");
        self.records
    }

    pub async fn dial(&self) -> TcpStream {
        TcpStream::connect(self.address).await.expect("dial proxy")
    }
}

/// An answer's head and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// Sends `request` (a whole request head) and reads the answer's head, and its body when
/// it is not a 200 to a CONNECT.
pub async fn ask<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, request: &str) -> Answer {
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send request");
    read_answer(stream).await
}

/// Reads one answer from `stream`.
pub async fn read_answer<S: AsyncRead + Unpin>(stream: &mut S) -> Answer {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte))
            .await
            .expect("an answer within 5 s")
            .expect("read answer");
        assert!(
            n == 1,
            "the proxy closed mid-answer: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("a text head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.expect("read body");
    Answer {
        status,
        head,
        body: String::from_utf8(body).expect("a text body"),
    }
}

/// A CONNECT request head for `target`, with `extra` header lines (each ending in CRLF).
pub fn connect(target: &str, extra: &str) -> String {
    format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{extra}\r\n")
}

/// Reads exactly `n` bytes, within five seconds.
pub async fn read_n<S: AsyncRead + Unpin>(stream: &mut S, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut buf))
        .await
        .expect("bytes within 5 s")
        .expect("read bytes");
    buf
}

/// Reads until the peer closes, within five seconds.
pub async fn read_to_end<S: AsyncRead + Unpin>(stream: &mut S) -> Vec<u8> {
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf))
        .await
        .expect("closed within 5 s")
        .expect("read to end");
    buf
}

/// A resolver that gives its answers in turn (the last one again once they run out) and
/// counts how often it was asked.
pub struct Scripted {
    answers: Mutex<VecDeque<Vec<SocketAddr>>>,
    pub calls: Arc<AtomicUsize>,
}

impl Scripted {
    pub fn new(answers: Vec<Vec<SocketAddr>>) -> Self {
        Self {
            answers: Mutex::new(answers.into()),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }
}

#[async_trait::async_trait]
impl Resolve for Scripted {
    async fn resolve(&self, _host: &str, _port: u16) -> io::Result<Vec<SocketAddr>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock().expect("not poisoned");
        let answer = if answers.len() > 1 {
            answers.pop_front()
        } else {
            answers.front().cloned()
        };
        Ok(answer.unwrap_or_default())
    }
}
