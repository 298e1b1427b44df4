//! The Discord gateway connection: mentions (and clicks) arrive over a websocket rather
//! than as webhooks, so ingest keeps one open for as long as it runs.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_ingest::{ApiState, DiscordSink};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

/// Longest wait between reconnection attempts.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// Where and as whom to connect.
pub struct DiscordGateway {
    /// The bot token.
    pub token: SecretString,
    /// Discord's REST API (the gateway's address is asked from it).
    pub api_url: String,
}

impl DiscordGateway {
    /// Stays connected until `shutdown`, reconnecting after failures with a doubling wait
    /// (one second at first, five minutes at most) so an outage is not hammered.
    pub(crate) async fn run(self, api: ApiState, shutdown: CancellationToken) {
        let sink: Arc<dyn gatehouse_discord::GatewaySink> = Arc::new(DiscordSink::new(api));
        let mut wait = Duration::from_secs(1);
        loop {
            let stop = shutdown.clone();
            let result = gatehouse_discord::run_gateway(
                self.token.clone(),
                &self.api_url,
                sink.clone(),
                async move { stop.cancelled().await },
            )
            .await;
            if shutdown.is_cancelled() {
                return;
            }
            match result {
                Ok(()) => tracing::warn!("the Discord gateway closed; reconnecting"),
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?wait, "the Discord gateway failed; reconnecting")
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(MAX_WAIT);
        }
    }
}
