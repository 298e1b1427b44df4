//! An open tunnel: bytes copied both ways between the sandbox and the host, counted as
//! they are written, until both sides close, the tunnel sits idle too long, or the proxy
//! shuts down.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, copy_bidirectional};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How a tunnel ended, for the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Both sides closed (or one failed).
    Closed,
    /// Nothing moved for the idle timeout.
    Idle,
    /// The proxy shut down.
    Shutdown,
}

/// Bytes moved by a tunnel, and how it ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Moved {
    pub(crate) up: u64,
    pub(crate) down: u64,
    pub(crate) end: End,
}

/// Copies between `client` (the sandbox) and `upstream` (the host) until the tunnel ends.
pub(crate) async fn carry<C, U>(
    client: C,
    upstream: U,
    idle: Duration,
    stop: &CancellationToken,
) -> Moved
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let activity = Arc::new(Activity::new());
    let up = Arc::new(AtomicU64::new(0));
    let down = Arc::new(AtomicU64::new(0));
    let mut client = Metered {
        inner: client,
        written: Arc::clone(&down),
        activity: Arc::clone(&activity),
    };
    let mut upstream = Metered {
        inner: upstream,
        written: Arc::clone(&up),
        activity: Arc::clone(&activity),
    };
    let end = tokio::select! {
        result = copy_bidirectional(&mut client, &mut upstream) => {
            if let Err(error) = result {
                tracing::debug!(%error, "egress tunnel ended with an error");
            }
            End::Closed
        }
        () = activity.idle_for(idle) => End::Idle,
        () = stop.cancelled() => End::Shutdown,
    };
    Moved {
        up: up.load(Ordering::Relaxed),
        down: down.load(Ordering::Relaxed),
        end,
    }
}

/// When bytes last moved either way, in milliseconds since the tunnel opened.
struct Activity {
    opened: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// Resolves once nothing has moved for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let last = self.opened + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = last + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// A stream that counts the bytes written to it and notes activity both ways.
struct Metered<T> {
    inner: T,
    written: Arc<AtomicU64>,
    activity: Arc<Activity>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Metered<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Metered<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = poll {
            self.written.fetch_add(n as u64, Ordering::Relaxed);
            self.activity.touch();
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
