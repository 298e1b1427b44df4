//! Signed requests from outside, whoever signs them: GitHub's webhooks (HMAC of the body),
//! Slack's requests (HMAC of a timestamp and the body) and Discord's interactions (Ed25519
//! over a timestamp and the body). Each adapter checks its own scheme; what can be wrong
//! with a request is the same list for all three, so it is one error type here, and ingest
//! answers every refusal the same way (401, with the reason naming the header at fault).
//!
//! The two schemes that sign a timestamp also share the replay window: a request signed
//! more than five minutes from now is refused however well signed, so a captured request
//! (a click that approves a gate) cannot be sent again later.
#![warn(missing_docs)]

/// How far a signed timestamp may be from now, in seconds, either way.
pub const MAX_SKEW_SECONDS: i64 = 300;

/// Why a signed request is not trusted. Every variant but [`SignatureError::BadKey`] (a
/// configuration error, found at start-up) means "answer 401".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Gatehouse holds no secret for this source, so it can trust no request from it.
    #[error("no webhook secret is configured")]
    NoSecret,
    /// The configured key cannot verify anything (Discord's public key).
    #[error("the public key is not valid: {0}")]
    BadKey(String),
    /// A header the scheme needs is absent.
    #[error("no {0} header")]
    Missing(&'static str),
    /// The header is not of the scheme's shape (`sha256=<hex>`, `v0=<hex>`, hex).
    #[error("the {header} header is not {shape}")]
    Malformed {
        /// The header at fault.
        header: &'static str,
        /// What it should look like.
        shape: &'static str,
    },
    /// The timestamp header is not a whole number of seconds.
    #[error("the {header} header `{value}` is not a Unix time in seconds")]
    NotATime {
        /// The header at fault.
        header: &'static str,
        /// What it held.
        value: String,
    },
    /// The signed timestamp is further from now than [`MAX_SKEW_SECONDS`]: an old request
    /// replayed, or a badly wrong clock.
    #[error(
        "the request was signed at {timestamp}, {skew} s away from now ({now}); \
         more than 300 s is refused as a possible replay"
    )]
    Stale {
        /// The request's timestamp.
        timestamp: i64,
        /// Our clock.
        now: i64,
        /// How far apart they are, in seconds.
        skew: i64,
    },
    /// Well formed, but no configured secret or key signed this body: forged, altered, or
    /// signed with another secret.
    #[error("the {0} header does not match the body (another secret, or an altered body)")]
    Mismatch(&'static str),
}

/// The signed time in `header`'s `value`, when it is within the window around `now_unix`
/// (passed in so tests and replays of recorded requests can fix the clock).
pub fn check_timestamp(
    header: &'static str,
    value: &str,
    now_unix: i64,
) -> Result<i64, SignatureError> {
    let seconds: i64 = value.trim().parse().map_err(|_| SignatureError::NotATime {
        header,
        value: value.to_owned(),
    })?;
    let skew = now_unix.saturating_sub(seconds).saturating_abs();
    if skew > MAX_SKEW_SECONDS {
        return Err(SignatureError::Stale {
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

    const HEADER: &str = "X-Timestamp";

    #[test]
    fn five_minutes_either_way() {
        assert_eq!(check_timestamp(HEADER, "1000", 1300), Ok(1000));
        assert_eq!(check_timestamp(HEADER, " 1300 ", 1000), Ok(1300));
        assert!(matches!(
            check_timestamp(HEADER, "1000", 1301),
            Err(SignatureError::Stale { skew: 301, .. })
        ));
        assert!(matches!(
            check_timestamp(HEADER, "1301", 1000),
            Err(SignatureError::Stale { .. })
        ));
        assert_eq!(
            check_timestamp(HEADER, "soon", 1000),
            Err(SignatureError::NotATime {
                header: HEADER,
                value: "soon".into()
            })
        );
    }

    #[test]
    fn refusals_name_the_header_and_a_replay() {
        let stale = check_timestamp(HEADER, "1000", 5000)
            .unwrap_err()
            .to_string();
        assert!(stale.contains("possible replay"), "{stale}");
        assert_eq!(
            SignatureError::Missing("X-Hub-Signature-256").to_string(),
            "no X-Hub-Signature-256 header"
        );
    }
}
