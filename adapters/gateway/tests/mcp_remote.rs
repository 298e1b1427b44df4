//! A remote MCP server through [`RemoteMcp`], as the runner's tools endpoint mounts it at
//! `/mcp/<NAME>`: the configured secret arrives and the sandbox's token does not, an SSE
//! answer streams back frame by frame, sessions' GET and DELETE pass, and each refusal is
//! a JSON-RPC error saying why. The server is a fake speaking streamable HTTP on loopback.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use gatehouse_gateway::{RemoteMcp, RemoteMcpLimits};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use secrecy::SecretString;
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};

/// A body fed frame by frame from a channel, as a server streams SSE.
struct Channel(mpsc::UnboundedReceiver<Bytes>);

impl Body for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

type Boxed = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

/// What the fake server saw: each request's method, path and headers.
#[derive(Default)]
struct Seen(Mutex<Vec<(String, String, HeaderMap)>>);

/// The fake MCP server: POST answers an SSE stream whose second event waits for `go`;
/// GET with a session answers 405 (no server stream); DELETE 204; a request whose bearer
/// token is not `upstream-secret` gets 401.
async fn fake_server(seen: Arc<Seen>, go: Arc<Notify>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (seen, go) = (seen.clone(), go.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let (seen, go) = (seen.clone(), go.clone());
                    async move { Ok::<_, Infallible>(answer(request, &seen, go).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{address}/v1/mcp")
}

async fn answer(request: Request<Incoming>, seen: &Seen, go: Arc<Notify>) -> Response<Boxed> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    seen.0.lock().expect("lock").push((
        parts.method.to_string(),
        parts.uri.to_string(),
        parts.headers.clone(),
    ));
    let plain = |status: StatusCode, text: &'static str| {
        let mut response = Response::new(Full::new(Bytes::from(text)).boxed_unsync());
        *response.status_mut() = status;
        response
    };
    if parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        != Some("Bearer upstream-secret")
    {
        return plain(StatusCode::UNAUTHORIZED, "who are you");
    }
    match parts.method.as_str() {
        "POST" => {
            let request: serde_json::Value = serde_json::from_slice(&body).expect("JSON-RPC");
            let id = request["id"].clone();
            let (tx, rx) = mpsc::unbounded_channel();
            let progress = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
            tx.send(Bytes::from(format!("event: message\ndata: {progress}\n\n")))
                .expect("send");
            tokio::spawn(async move {
                go.notified().await;
                let result = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "found it"}]}});
                let _ = tx.send(Bytes::from(format!("event: message\ndata: {result}\n\n")));
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .header("mcp-session-id", "s-1")
                .header("connection", "keep-alive")
                .body(Channel(rx).boxed_unsync())
                .expect("response")
        }
        "DELETE" => plain(StatusCode::NO_CONTENT, ""),
        _ => plain(StatusCode::METHOD_NOT_ALLOWED, ""),
    }
}

/// The tools endpoint's stand-in: `/mcp/docs...` forwarded by `remote`.
async fn front(remote: RemoteMcp) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let remote = Arc::new(remote);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let remote = remote.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let remote = remote.clone();
                    async move {
                        let rest = request
                            .uri()
                            .path()
                            .strip_prefix("/mcp/docs")
                            .unwrap_or("")
                            .to_owned();
                        Ok::<_, Infallible>(remote.forward(request, &rest).await)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{address}/mcp/docs")
}

fn remote(url: &str, secret: &str) -> RemoteMcp {
    RemoteMcp::with_limits(
        "docs",
        url.parse().expect("url"),
        vec![
            (
                "Authorization".to_owned(),
                SecretString::from(format!("Bearer {secret}")),
            ),
            ("X-Team".to_owned(), SecretString::from("core")),
        ],
        RemoteMcpLimits {
            first_byte_timeout: Duration::from_secs(5),
            max_request_body: 64 * 1024,
            ..RemoteMcpLimits::default()
        },
    )
    .expect("valid")
}

async fn send(method: &str, url: &str, body: Vec<u8>) -> Response<Incoming> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = Request::builder()
        .method(method)
        .uri(url)
        .header("authorization", "Bearer sandbox-token")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", "s-1")
        .header("connection", "x-private")
        .header("x-private", "hop")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    client.request(request).await.expect("an answer")
}

async fn text(response: Response<Incoming>) -> String {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}"#;

#[tokio::test]
async fn the_secret_goes_in_the_token_stays_out_and_events_stream_as_sent() {
    let (seen, go) = (Arc::new(Seen::default()), Arc::new(Notify::new()));
    let upstream = fake_server(seen.clone(), go.clone()).await;
    let front = front(remote(&upstream, "upstream-secret")).await;

    let response = send(
        "POST",
        &format!("{front}?trace=1"),
        CALL.as_bytes().to_vec(),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["mcp-session-id"], "s-1");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert!(response.headers().get("connection").is_none());
    let mut body = response.into_body();
    // The first event arrives while the server still holds the second back.
    let first = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("the first event before the second is sent")
        .expect("a frame")
        .expect("data");
    let first = String::from_utf8(first.into_data().expect("data").to_vec()).expect("utf-8");
    assert!(first.contains("notifications/progress"), "{first}");
    go.notify_one();
    let rest = body.collect().await.expect("rest").to_bytes();
    let rest = String::from_utf8(rest.to_vec()).expect("utf-8");
    assert!(
        rest.contains(r#""id":7"#) && rest.contains("found it"),
        "{rest}"
    );

    let seen = seen.0.lock().expect("lock").clone();
    let (method, path, headers) = &seen[0];
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("POST", "/v1/mcp?trace=1")
    );
    assert_eq!(headers["authorization"], "Bearer upstream-secret");
    assert_eq!(headers["x-team"], "core");
    assert_eq!(headers["mcp-session-id"], "s-1");
    assert!(headers.get("x-private").is_none(), "{headers:?}");
    let all = format!("{headers:?}");
    assert!(!all.contains("sandbox-token"), "{all}");
}

#[tokio::test]
async fn sessions_end_with_delete_and_other_methods_and_big_bodies_are_refused() {
    let (seen, go) = (Arc::new(Seen::default()), Arc::new(Notify::new()));
    let upstream = fake_server(seen.clone(), go).await;
    let front = front(remote(&upstream, "upstream-secret")).await;

    assert_eq!(send("DELETE", &front, vec![]).await.status(), 204);
    assert_eq!(send("GET", &front, vec![]).await.status(), 405);
    let put = send("PUT", &front, vec![]).await;
    assert_eq!(put.status(), 405);
    assert!(text(put).await.contains("POST, GET and DELETE only"));
    let big = send("POST", &front, vec![b' '; 65 * 1024]).await;
    assert_eq!(big.status(), 413);
    assert!(text(big).await.contains("over 65536 bytes"));
    let climbing = send("POST", &format!("{front}/../admin"), CALL.into()).await;
    assert_eq!(climbing.status(), 404);
    let methods: Vec<String> = seen
        .0
        .lock()
        .expect("lock")
        .iter()
        .map(|s| s.0.clone())
        .collect();
    assert_eq!(
        methods,
        ["DELETE", "GET"],
        "refused requests never reach the server"
    );
}

#[tokio::test]
async fn a_refused_secret_and_an_unreachable_server_are_said_plainly() {
    let (seen, go) = (Arc::new(Seen::default()), Arc::new(Notify::new()));
    let upstream = fake_server(seen, go).await;
    let wrong = front(remote(&upstream, "stale")).await;
    let refused = send("POST", &wrong, CALL.into()).await;
    assert_eq!(refused.status(), 502);
    let message = text(refused).await;
    assert!(
        message.contains("refused Gatehouse's credentials (HTTP 401); its [mcp.docs] token or headers need changing"),
        "{message}"
    );
    assert!(message.contains("\"jsonrpc\":\"2.0\""), "{message}");

    // A port nothing listens on.
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let gone = format!("http://{}/mcp", closed.local_addr().expect("address"));
    drop(closed);
    let front = front(remote(&gone, "upstream-secret")).await;
    let unreachable = send("POST", &front, CALL.into()).await;
    assert_eq!(unreachable.status(), 502);
    assert!(
        text(unreachable)
            .await
            .contains("the MCP server `docs` cannot be reached")
    );
}
