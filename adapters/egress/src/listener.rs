//! The sockets the proxy serves on: TCP (a Docker sandbox's internal network) and Unix
//! sockets (mounted into a sandbox, or reached by a process sandbox's relay).

use std::future::Future;
use std::io;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// A listener the proxy accepts connections from.
pub trait Listener: Send + 'static {
    /// One accepted connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// The next connection, with a description of the peer for the logs.
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Io, String)>> + Send;
}

impl Listener for TcpListener {
    type Io = TcpStream;

    async fn accept(&mut self) -> io::Result<(TcpStream, String)> {
        let (stream, peer) = TcpListener::accept(self).await?;
        // Tunnels carry interactive TLS handshakes: small writes must not wait.
        stream.set_nodelay(true)?;
        Ok((stream, peer.to_string()))
    }
}

impl Listener for UnixListener {
    type Io = UnixStream;

    async fn accept(&mut self) -> io::Result<(UnixStream, String)> {
        let (stream, _) = UnixListener::accept(self).await?;
        Ok((stream, "unix socket".to_owned()))
    }
}
