//! The HTTP listener every service runs (`listen`, and `metrics_listen` when set), with the
//! limits a server on the open internet needs: webhooks arrive from anywhere, so a client
//! that opens connections and sends nothing, sends its headers a byte at a time, trickles
//! its body or stops reading its answer must not hold a connection (or the memory behind
//! it) for longer than the configured timeouts, and there are at most `max_connections`
//! of them at once.
//!
//! axum's own `serve` has no such knobs, so connections are served here with hyper-util's
//! builder: hyper times the request headers (HTTP/1), a watchdog per connection times the
//! first request and idleness, and each request body is read against a deadline.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// What one listener allows a client (`[server]`'s keys of the same names).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From a connection's first byte (or a kept-alive connection's previous answer) to
    /// the end of a request's headers.
    pub header_timeout: Duration,
    /// From a request's headers to the end of its body.
    pub body_timeout: Duration,
    /// No request in flight and no bytes either way.
    pub idle_timeout: Duration,
    /// Connections open at once; the next one is accepted when one closes.
    pub max_connections: usize,
}

/// `[server]`'s defaults.
impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
        }
    }
}

/// Serves `app` on `listener` until `shutdown`: then no connection is accepted, requests
/// in flight are answered, and this returns once every connection has closed (which the
/// timeouts bound).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    name: &'static str,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let mut told_full = false;
    loop {
        // A slot first: at the limit, connections wait in the listen backlog, unaccepted.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if !told_full {
                    tracing::warn!(
                        listener = name,
                        max_connections = limits.max_connections,
                        "the listener has as many connections as server.max_connections allows; new ones wait"
                    );
                    told_full = true;
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                    () = shutdown.cancelled() => break,
                }
            }
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(&e).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        told_full = false;
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Tracked {
            inner: stream,
            activity: activity.clone(),
        });
        let service = {
            let (app, activity) = (app.clone(), activity.clone());
            hyper::service::service_fn(move |request| {
                handle(app.clone(), activity.clone(), limits.body_timeout, request)
            })
        };
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _slot = slot;
            metrics::gauge!("gatehouse_http_connections", "listener" => name).increment(1);
            let connection = builder
                .serve_connection_with_upgrades(io, service)
                .into_owned();
            let connection = watcher.watch(connection);
            tokio::select! {
                served = connection => {
                    if let Err(e) = served {
                        tracing::debug!(listener = name, error = %e, "connection ended with an error");
                    }
                }
                cut = watchdog(&activity, limits) => {
                    metrics::counter!("gatehouse_http_connections_cut_total", "listener" => name, "reason" => cut)
                        .increment(1);
                    tracing::debug!(listener = name, reason = cut, "connection cut");
                }
            }
            metrics::gauge!("gatehouse_http_connections", "listener" => name).decrement(1);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// One request: its body read against `body_timeout`; when that passes before the body
/// is in, the answer is 408 and the connection closes, whatever the route made of the cut
/// body.
async fn handle(
    app: Router,
    activity: Arc<Activity>,
    body_timeout: Duration,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let _in_flight = activity.request_started();
    let expired = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        if body.is_end_stream() {
            Body::new(body)
        } else {
            Body::new(Deadline {
                inner: body,
                sleep: Box::pin(tokio::time::sleep(body_timeout)),
                timeout: body_timeout,
                expired: expired.clone(),
            })
        }
    });
    let response = match app.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    if expired.load(Ordering::Relaxed) {
        metrics::counter!("gatehouse_http_body_timeouts_total").increment(1);
        let mut response = Response::new(Body::from(format!(
            "the request body did not arrive within {body_timeout:?} (server.body_timeout)\n"
        )));
        *response.status_mut() = StatusCode::REQUEST_TIMEOUT;
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return Ok(response);
    }
    Ok(response)
}

/// Ends when the connection should be cut, saying why: no first request within
/// `header_timeout` of the accept (hyper times HTTP/1 headers only once it knows the
/// protocol, which takes the client's first bytes), or idle for `idle_timeout`.
async fn watchdog(activity: &Activity, limits: Limits) -> &'static str {
    loop {
        if !activity.started.load(Ordering::Relaxed) {
            let deadline = activity.accepted + limits.header_timeout;
            if Instant::now() >= deadline {
                return "header_timeout";
            }
            tokio::time::sleep_until(deadline).await;
            continue;
        }
        if activity.in_flight.load(Ordering::Relaxed) > 0 {
            tokio::time::sleep(limits.idle_timeout).await;
            continue;
        }
        let quiet = activity.quiet_for();
        if quiet >= limits.idle_timeout {
            return "idle_timeout";
        }
        tokio::time::sleep(limits.idle_timeout - quiet).await;
    }
}

/// An `accept` that failed: a connection reset before it was accepted is nothing; running
/// out of file descriptors passes, so wait a moment rather than spin.
async fn accept_failed(e: &io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; retrying in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// What the watchdog knows of a connection.
struct Activity {
    accepted: Instant,
    /// Milliseconds from `accepted` to the last byte read or written.
    last_io_ms: AtomicU64,
    /// A request reached the service.
    started: AtomicBool,
    /// Requests being answered.
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Self {
            accepted: Instant::now(),
            last_io_ms: AtomicU64::new(0),
            started: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_io_ms.store(ms, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_io_ms.load(Ordering::Relaxed));
        self.accepted.elapsed().saturating_sub(last)
    }

    fn request_started(self: &Arc<Self>) -> InFlight {
        self.started.store(true, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.touch();
        InFlight(self.clone())
    }
}

/// A request being answered; counted until its handler returns (or is dropped).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A connection's stream, noting when bytes move.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request body that fails once its deadline passes: the time limit is on the whole
/// body, not between two chunks, so a byte every few seconds does not keep it open.
struct Deadline {
    inner: Incoming,
    sleep: Pin<Box<Sleep>>,
    timeout: Duration,
    expired: Arc<AtomicBool>,
}

/// The body did not arrive within `server.body_timeout`.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
struct BodyTimeout(Duration);

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.expired.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(BodyTimeout(self.timeout).into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
