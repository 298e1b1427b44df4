//! The replay window both chat platforms sign into their requests: a request whose signed
//! timestamp is more than five minutes from now is refused however well signed, so a
//! captured request cannot be sent again later. One rule, read by both adapters.

/// How far a signed timestamp may be from now, in seconds, either way.
pub const MAX_SKEW_SECONDS: i64 = 300;

/// Why a signed timestamp is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skew {
    /// Not a Unix time in seconds.
    NotATime,
    /// Further from now than [`MAX_SKEW_SECONDS`].
    Stale {
        /// The signed time.
        timestamp: i64,
        /// Now.
        now: i64,
        /// How far apart, in seconds.
        skew: i64,
    },
}

/// The signed time, when it is within the window around `now_unix`.
pub fn check_timestamp(timestamp: &str, now_unix: i64) -> Result<i64, Skew> {
    let seconds: i64 = timestamp.trim().parse().map_err(|_| Skew::NotATime)?;
    let skew = now_unix.saturating_sub(seconds).saturating_abs();
    if skew > MAX_SKEW_SECONDS {
        return Err(Skew::Stale {
            timestamp: seconds,
            now: now_unix,
            skew,
        });
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_minutes_either_way() {
        assert_eq!(check_timestamp("1000", 1300), Ok(1000));
        assert_eq!(check_timestamp(" 1300 ", 1000), Ok(1300));
        assert!(matches!(
            check_timestamp("1000", 1301),
            Err(Skew::Stale { skew: 301, .. })
        ));
        assert!(matches!(
            check_timestamp("1301", 1000),
            Err(Skew::Stale { .. })
        ));
        assert_eq!(check_timestamp("soon", 1000), Err(Skew::NotATime));
    }
}
