//! Slack accepts about one message per second per channel; posting faster gets 429s that
//! delay every later call too, so one client spaces its own posts out instead.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// Slack's documented limit for `chat.postMessage` into one channel.
const INTERVAL: Duration = Duration::from_secs(1);

/// When each channel may next take a message.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pace {
    next: Arc<Mutex<HashMap<String, Instant>>>,
}

impl Pace {
    /// Waits for `channel`'s next slot and takes it; concurrent posts queue one interval
    /// apart.
    pub(crate) async fn wait(&self, channel: &str) {
        let start = {
            let mut next = self.next.lock().await;
            let now = Instant::now();
            // Slots in the past hold nobody back; dropping them keeps the map small.
            next.retain(|_, at| *at > now);
            let start = next.get(channel).copied().unwrap_or(now).max(now);
            next.insert(channel.to_owned(), start + INTERVAL);
            start
        };
        tokio::time::sleep_until(start).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn spaces_posts_per_channel() {
        let pace = Pace::default();
        let begin = Instant::now();
        pace.wait("C1").await;
        pace.wait("C2").await;
        assert_eq!(begin.elapsed(), Duration::ZERO);
        pace.wait("C1").await;
        assert_eq!(begin.elapsed(), INTERVAL);
        tokio::join!(pace.wait("C1"), pace.wait("C1"));
        assert_eq!(begin.elapsed(), 3 * INTERVAL);
        tokio::time::sleep(10 * INTERVAL).await;
        let later = Instant::now();
        pace.wait("C1").await;
        assert_eq!(later.elapsed(), Duration::ZERO);
    }
}
