//! Waiting out an unreachable blob store. With blobs in NATS, a NATS restart makes every
//! upload and download fail for a few seconds; an attempt that gave up then would fail a
//! run over nothing. So such work is tried again, with backoff, for up to a minute.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use gatehouse_blobs::BlobError;

/// How long work waits, in all, for an unreachable blob store before it gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// An error that may go away by itself.
pub(crate) trait Transient: Display {
    fn is_transient(&self) -> bool;
}

impl Transient for BlobError {
    fn is_transient(&self) -> bool {
        matches!(self, Self::Nats { .. })
    }
}

/// Runs `work` until it succeeds, fails for good, or it has waited [`PATIENCE`].
pub(crate) async fn patiently<T, E, Fut>(what: &str, work: impl FnMut() -> Fut) -> Result<T, E>
where
    E: Transient,
    Fut: Future<Output = Result<T, E>>,
{
    let backoff = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(5))
        .without_max_times()
        .with_total_delay(Some(PATIENCE));
    work.retry(backoff)
        .when(E::is_transient)
        .notify(|err, delay| {
            tracing::warn!(what, error = %err, retry_in = ?delay, "the blob store is unavailable; retrying");
        })
        .await
}
