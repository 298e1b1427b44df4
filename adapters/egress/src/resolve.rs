//! How the proxy turns an allowed name into addresses: once per request, the answer
//! checked and then used as it is. The system resolver is the default; a deployment (or a
//! test) may give another, e.g. one that asks a DNS server of its own.

use std::io;
use std::net::SocketAddr;

use async_trait::async_trait;

/// Resolves a host name to the addresses the proxy checks and connects to.
#[async_trait]
pub trait Resolve: Send + Sync + 'static {
    /// Every address of `host`, each with `port`.
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo` through tokio): `/etc/hosts`, then DNS.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolve for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}
