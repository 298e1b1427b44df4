//! Time as the store keeps it: epoch milliseconds, for leases and visibility.

/// Current time as epoch milliseconds, the unit of every lease and visibility column.
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Saturating conversion for durations added to epoch milliseconds.
pub(crate) fn duration_ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
