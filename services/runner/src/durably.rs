//! Store writes an attempt cannot do without.

use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use gatehouse_store::StoreError;

/// Longest wait between two tries of a write.
const MAX_DELAY: Duration = Duration::from_secs(5);

/// Retries `write` for as long as the database is unavailable (it returns other errors at
/// once). Once an attempt has begun, what it did must reach the store: giving up would
/// hand the job back, and its redelivery could only report the attempt as interrupted.
/// The job's lease is renewed meanwhile, so no other runner takes it.
pub(crate) async fn durably<T, Fut>(what: &str, write: impl FnMut() -> Fut) -> Result<T, StoreError>
where
    Fut: Future<Output = Result<T, StoreError>>,
{
    let backoff = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(MAX_DELAY)
        .without_max_times();
    write
        .retry(backoff)
        .when(StoreError::is_unavailable)
        .notify(|err, delay| {
            tracing::warn!(what, error = %err, retry_in = ?delay, "the database is unavailable; retrying");
        })
        .await
}
