//! The proxy itself: an HTTP/1 server (hyper) that answers only `CONNECT host:port`.
//!
//! For each request, in this order: a method other than `CONNECT` is refused (405); the
//! [`Admit`] names the sandbox from its token (407 when it cannot); a target no pattern of
//! its policy allows is refused (403); one over its tunnel limit too (503). Then the host is
//! resolved once and **every** address checked ([`Policy::forbidden`]): one private,
//! loopback or link-local address refuses the whole host (403). The proxy connects to the
//! checked addresses itself — nothing is resolved again, so a DNS answer that changes
//! between the check and the connection (rebinding) cannot swap another address in — then
//! answers 200 and copies bytes both ways until the tunnel ends. Every request, allowed or
//! refused, becomes one [`Connection`] record.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio_util::sync::CancellationToken;

use crate::admission::{Admission, Admit, token_from_header};
use crate::listener::Listener;
use crate::policy::Policy;
use crate::record::{Connection, Recorder, Refusal, Verdict};
use crate::resolve::{Resolve, SystemResolver};
use crate::target::{Host, Target};
use crate::tunnel::{End, carry};

/// The proxy's bounds. The defaults suit package managers over a sandbox's network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Resolving a host and connecting to it, together (default 10 s).
    pub connect_timeout: Duration,
    /// A tunnel through which nothing moved either way this long is closed (default 5 min).
    pub idle_timeout: Duration,
    /// A client must send its request head within this (default 10 s).
    pub header_read_timeout: Duration,
    /// The largest request head, request line included (default 16 KiB; 431 beyond).
    pub max_header_bytes: usize,
    /// The most header fields in a request (default 64; 431 beyond).
    pub max_headers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            max_headers: 64,
        }
    }
}

/// The egress proxy. One value serves any number of listeners.
#[derive(Clone, Default)]
pub struct Egress {
    limits: Limits,
    resolver: Option<Arc<dyn Resolve>>,
}

impl fmt::Debug for Egress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Egress")
            .field("limits", &self.limits)
            .field("own_resolver", &self.resolver.is_some())
            .finish()
    }
}

/// What every connection task of one [`Egress::serve`] shares.
struct Shared {
    limits: Limits,
    resolver: Arc<dyn Resolve>,
    admit: Box<dyn Admit>,
    recorder: Box<dyn Recorder>,
    stop: CancellationToken,
    /// Held by every task; `serve` waits for the last one to go.
    _live: mpsc::Sender<()>,
}

impl Egress {
    /// A proxy with these bounds.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            resolver: None,
        }
    }

    /// Resolves names with `resolver` instead of the system's.
    pub fn with_resolver(mut self, resolver: impl Resolve) -> Self {
        self.resolver = Some(Arc::new(resolver));
        self
    }

    /// Its bounds.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Serves `listener` until `shutdown` resolves: `admit` says whose each request is and
    /// what it may reach, `recorder` gets a [`Connection`] for every request. On shutdown
    /// it stops accepting, closes the open tunnels (each still recorded) and returns once
    /// every connection task has ended. Failing accepts (out of file descriptors) are
    /// logged and retried after a pause.
    pub async fn serve<L: Listener>(
        &self,
        mut listener: L,
        admit: impl Admit,
        recorder: impl Recorder,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        let (live, mut ended) = mpsc::channel::<()>(1);
        let shared = Arc::new(Shared {
            limits: self.limits.clone(),
            resolver: self
                .resolver
                .clone()
                .unwrap_or_else(|| Arc::new(SystemResolver)),
            admit: Box::new(admit),
            recorder: Box::new(recorder),
            stop: CancellationToken::new(),
            _live: live,
        });
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((io, peer)) => {
                        tokio::spawn(serve_connection(Arc::clone(&shared), io, peer));
                    }
                    Err(error) => {
                        tracing::warn!(%error, "egress proxy: accept failed");
                        tokio::select! {
                            () = &mut shutdown => break,
                            () = tokio::time::sleep(Duration::from_millis(100)) => {}
                        }
                    }
                },
            }
        }
        shared.stop.cancel();
        drop(shared);
        // Every task holds a sender inside its `Shared`: `None` once the last has ended.
        let _ = ended.recv().await;
    }
}

async fn serve_connection<I>(shared: Arc<Shared>, io: I, peer: String)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn({
        let shared = Arc::clone(&shared);
        move |request| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(handle(shared, request).await) }
        }
    });
    let limits = &shared.limits;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(limits.max_header_bytes)
        .max_headers(limits.max_headers)
        // hyper's minimum; a request head never needs more than the header bound.
        .max_buf_size(limits.max_header_bytes.max(8192));
    let connection = builder
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::select! {
        result = connection => {
            if let Err(error) = result {
                tracing::debug!(%error, %peer, "egress proxy: connection ended with an error");
            }
        }
        () = shared.stop.cancelled() => {}
    }
}

/// One request, from its head to its answer (a tunnel goes on in its own task).
async fn handle(shared: Arc<Shared>, mut request: Request<Incoming>) -> Response<Full<Bytes>> {
    let mut seen = Seen {
        started: Utc::now(),
        clock: Instant::now(),
        label: None,
        host: String::new(),
        port: 0,
    };
    let token = request
        .headers()
        .get(PROXY_AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(token_from_header);
    let admission = shared.admit.admit(token.as_deref());
    seen.label = admission.as_ref().map(|a| Arc::clone(a.label()));

    if request.method() != Method::CONNECT {
        (seen.host, seen.port) = plain_target(&request);
        let method = request.method().to_string();
        return refuse(&shared, seen, Refusal::NotConnect { method });
    }
    let authority = request
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let target = Target::parse_authority(&authority);
    match &target {
        Some(target) => {
            seen.host = target.host.to_string();
            seen.port = target.port;
        }
        None => seen.host = authority.clone(),
    }
    let Some(admission) = admission else {
        let refusal = if token.is_some() {
            Refusal::UnknownToken
        } else {
            Refusal::NoCredential
        };
        return refuse(&shared, seen, refusal);
    };
    let Some(target) = target else {
        return refuse(&shared, seen, Refusal::BadTarget { target: authority });
    };
    if !admission.policy().allows_target(&target) {
        return refuse(&shared, seen, Refusal::NotAllowed);
    }
    let Ok(permit) = Arc::clone(admission.tunnels()).try_acquire_owned() else {
        let limit = admission.policy().max_tunnels();
        return refuse(&shared, seen, Refusal::TooManyTunnels { limit });
    };
    let timeout = shared.limits.connect_timeout;
    let upstream = match tokio::time::timeout(
        timeout,
        connect(&*shared.resolver, admission.policy(), &target),
    )
    .await
    {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(refusal)) => return refuse(&shared, seen, refusal),
        Err(_) => return refuse(&shared, seen, Refusal::ConnectTimeout { after: timeout }),
    };
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(tunnel(
        Arc::clone(&shared),
        upgrade,
        upstream,
        permit,
        admission,
        seen,
    ));
    Response::new(Full::default())
}

/// What is known of a request so far, for its record.
struct Seen {
    started: chrono::DateTime<Utc>,
    clock: Instant,
    label: Option<Arc<str>>,
    host: String,
    port: u16,
}

impl Seen {
    fn record(self, verdict: Verdict, bytes_up: u64, bytes_down: u64) -> Connection {
        Connection {
            label: self.label,
            host: self.host,
            port: self.port,
            verdict,
            bytes_up,
            bytes_down,
            started: self.started,
            duration: self.clock.elapsed(),
        }
    }
}

/// Answers a refused request and records it.
fn refuse(shared: &Shared, seen: Seen, refusal: Refusal) -> Response<Full<Bytes>> {
    tracing::info!(
        label = seen.label.as_deref().unwrap_or("-"),
        host = %seen.host,
        port = seen.port,
        reason = %refusal,
        "egress refused"
    );
    let body = refusal.explain(&seen.host, seen.port);
    let status = refusal.status();
    shared
        .recorder
        .record(seen.record(Verdict::Refused(refusal), 0, 0));
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status == StatusCode::PROXY_AUTHENTICATION_REQUIRED {
        headers.insert(
            PROXY_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"gatehouse egress\""),
        );
    }
    response
}

/// The host and port a plain HTTP request was for, best effort, for its record.
fn plain_target(request: &Request<Incoming>) -> (String, u16) {
    let uri = request.uri();
    if let Some(host) = uri.host() {
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        return (host.to_ascii_lowercase(), port);
    }
    let host = request
        .headers()
        .get(HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    match host.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && port.parse::<u16>().is_ok() => {
            (name.to_ascii_lowercase(), port.parse().unwrap_or(80))
        }
        _ => (
            host.to_ascii_lowercase(),
            if host.is_empty() { 0 } else { 80 },
        ),
    }
}

/// Resolves the target once, refuses it if any address is forbidden, and connects to the
/// checked addresses in order.
async fn connect(
    resolver: &dyn Resolve,
    policy: &Policy,
    target: &Target,
) -> Result<TcpStream, Refusal> {
    let addresses: Vec<SocketAddr> =
        match &target.host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
            Host::Name(name) => resolver.resolve(name, target.port).await.map_err(|error| {
                Refusal::Unresolvable {
                    error: error.to_string(),
                }
            })?,
        };
    if addresses.is_empty() {
        return Err(Refusal::Unresolvable {
            error: "no addresses".into(),
        });
    }
    if let Some((address, range)) = addresses
        .iter()
        .find_map(|a| policy.forbidden(a.ip()).map(|range| (a.ip(), range)))
    {
        return Err(Refusal::PrivateAddress { address, range });
    }
    let mut last_error = None;
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => {
                // Tunnels carry interactive TLS handshakes: small writes must not wait.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(error) => last_error = Some(format!("{address}: {error}")),
        }
    }
    Err(Refusal::Unreachable {
        error: last_error.unwrap_or_default(),
    })
}

/// The tunnel's task: waits for hyper to hand over the client's connection, carries bytes
/// until the tunnel ends, then records it.
async fn tunnel(
    shared: Arc<Shared>,
    upgrade: hyper::upgrade::OnUpgrade,
    upstream: TcpStream,
    permit: OwnedSemaphorePermit,
    admission: Admission,
    seen: Seen,
) {
    let moved = match upgrade.await {
        Ok(client) => Some(
            carry(
                TokioIo::new(client),
                upstream,
                shared.limits.idle_timeout,
                &shared.stop,
            )
            .await,
        ),
        Err(error) => {
            tracing::debug!(%error, "egress proxy: the client left before its tunnel opened");
            None
        }
    };
    drop(permit);
    let (up, down, end) = moved.map_or((0, 0, End::Closed), |m| (m.up, m.down, m.end));
    tracing::debug!(
        label = %admission.label(),
        host = %seen.host,
        port = seen.port,
        up,
        down,
        ?end,
        "egress tunnel closed"
    );
    shared
        .recorder
        .record(seen.record(Verdict::Allowed, up, down));
}
