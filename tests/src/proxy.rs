//! A TCP proxy on loopback in front of a real service, which a test cuts and restores to
//! play its database or NATS going away and coming back, without touching the machine's
//! shared servers.

use std::net::SocketAddr;
use std::sync::Mutex;

use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::task::{JoinHandle, JoinSet};

/// Forwards connections on its own port to `target` while up. Cut, it refuses new
/// connections and drops every open one, as a stopped server would. It runs on its own
/// runtime, so tests that block their threads (driving processes) do not stall it.
pub struct Proxy {
    /// The port clients connect to.
    pub port: u16,
    target: SocketAddr,
    runtime: Option<Runtime>,
    serving: Mutex<Option<JoinHandle<()>>>,
}

impl Proxy {
    /// A proxy to `target` (`host:port`), up.
    pub fn start(target: &str) -> Self {
        let target = target.parse().expect("target address");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("proxy runtime");
        let proxy = Self {
            port,
            target,
            runtime: Some(runtime),
            serving: Mutex::new(None),
        };
        proxy.restore();
        proxy
    }

    /// `url` with its `host:port` (the target's) replaced by the proxy's.
    pub fn url(&self, url: &str) -> String {
        url.replacen(
            &self.target.to_string(),
            &format!("127.0.0.1:{}", self.port),
            1,
        )
    }

    /// Stops listening and drops every open connection; returns once connecting is refused.
    pub fn cut(&self) {
        if let Some(serving) = self.serving.lock().unwrap().take() {
            // The listener and the connections go when the aborted task is dropped.
            serving.abort();
            for _ in 0..500 {
                if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            panic!("the proxy on {} still accepts after being cut", self.port);
        }
    }

    /// Listens again on the same port.
    pub fn restore(&self) {
        let mut serving = self.serving.lock().unwrap();
        if serving.is_some() {
            return;
        }
        let listener = (0..500)
            .find_map(|_| {
                let bound = std::net::TcpListener::bind(("127.0.0.1", self.port)).ok();
                if bound.is_none() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                bound
            })
            .expect("the proxy's port is free again");
        listener.set_nonblocking(true).unwrap();
        let runtime = self.runtime.as_ref().unwrap();
        let _context = runtime.enter();
        let listener = TcpListener::from_std(listener).unwrap();
        let target = self.target;
        *serving = Some(runtime.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                while connections.try_join_next().is_some() {}
            }
        }));
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
