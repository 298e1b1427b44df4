//! Serving the gateway on a TCP listener or on a Unix socket (the Docker sandbox reaches it
//! through a socket mounted into the container), HTTP/1 and HTTP/2, until shut down.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::gateway::Gateway;

/// A listener the gateway serves on: [`tokio::net::TcpListener`] or
/// [`tokio::net::UnixListener`].
pub trait Listener: Send {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection.
    fn accept(&mut self) -> impl Future<Output = std::io::Result<Self::Io>> + Send;
}

impl Listener for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    async fn accept(&mut self) -> std::io::Result<Self::Io> {
        let (stream, _) = tokio::net::TcpListener::accept(self).await?;
        // Events must leave as they come, not wait for a fuller packet.
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

impl Listener for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;

    async fn accept(&mut self) -> std::io::Result<Self::Io> {
        let (stream, _) = tokio::net::UnixListener::accept(self).await?;
        Ok(stream)
    }
}

impl Gateway {
    /// Serves until `shutdown` completes, then stops accepting and waits for the requests
    /// under way (a stream ends when its provider ends it). A failed accept (out of file
    /// descriptors, say) is logged and retried, so serving never ends on its own.
    pub async fn serve<L: Listener>(&self, mut listener: L, shutdown: impl Future<Output = ()>) {
        let builder = auto::Builder::new(TokioExecutor::new());
        let graceful = GracefulShutdown::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let io = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(io) => io,
                    Err(error) => {
                        // Out of descriptors and the like: wait, do not spin.
                        tracing::warn!("gateway accept failed: {error}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let gateway = self.clone();
            let service = service_fn(move |request| {
                let gateway = gateway.clone();
                async move { Ok::<_, Infallible>(gateway.handle(request).await) }
            });
            let connection = builder
                .serve_connection(TokioIo::new(io), service)
                .into_owned();
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!("gateway connection ended: {error}");
                }
            });
        }
        graceful.shutdown().await;
    }
}
