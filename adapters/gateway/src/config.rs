//! The gateway's settings.

use std::time::Duration;

use url::Url;

/// How the gateway is reached and how long it waits.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// The gateway as sandboxes reach it; grants build their base URLs on it.
    pub public_url: Url,
    /// Time to open a connection (TCP and TLS) to a provider.
    pub connect_timeout: Duration,
    /// Time from sending a request to the provider's response headers; past it the CLI gets
    /// a 504 in the provider's error shape instead of waiting on a provider that never
    /// answers.
    pub first_byte_timeout: Duration,
    /// The largest request body forwarded; beyond it, 413.
    pub max_request_body: usize,
    /// The largest non-streamed answer copied aside to read its usage; a larger one passes
    /// through unmetered.
    pub max_metered_body: usize,
}

impl GatewayConfig {
    /// Defaults for a gateway reached at `public_url`: 10 s to connect, 5 min to the first
    /// byte (a long prompt takes a while), 32 MiB requests, 8 MiB metered answers.
    pub fn new(public_url: Url) -> Self {
        Self {
            public_url,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(300),
            max_request_body: 32 << 20,
            max_metered_body: 8 << 20,
        }
    }
}
