//! Slack's v0 request signing: `v0=` + hex(HMAC-SHA256(signing secret,
//! `v0:TIMESTAMP:BODY`)) in `X-Slack-Signature`, over the raw body, so ingest can refuse
//! anything Slack did not send before it parses a byte of it.

use hmac::digest::Key;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The replay window (five minutes either way), shared with the other signed sources.
pub use gatehouse_webhook::MAX_SKEW_SECONDS;
use gatehouse_webhook::{SignatureError, check_timestamp};

/// The header the request's time is in.
const TIMESTAMP_HEADER: &str = "X-Slack-Request-Timestamp";
/// The header Slack signs its requests in.
const SIGNATURE_HEADER: &str = "X-Slack-Signature";

/// Checks the `X-Slack-Request-Timestamp` (`timestamp`) and `X-Slack-Signature`
/// (`signature`) headers against the raw `body`. `now_unix` is passed in so tests and
/// replays of recorded requests can fix the clock.
pub fn verify_request(
    signing_secret: &[u8],
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_unix: i64,
) -> Result<(), SignatureError> {
    let timestamp = timestamp.ok_or(SignatureError::Missing(TIMESTAMP_HEADER))?;
    let signature = signature.ok_or(SignatureError::Missing(SIGNATURE_HEADER))?;
    check_timestamp(TIMESTAMP_HEADER, timestamp, now_unix)?;

    let digest = signature
        .strip_prefix("v0=")
        .and_then(|h| hex::decode(h).ok())
        .filter(|d| d.len() == 32)
        .ok_or(SignatureError::Malformed {
            header: SIGNATURE_HEADER,
            shape: "`v0=` followed by 64 hex digits",
        })?;
    // The header's own text is hashed, not the parsed number: Slack signs what it sent.
    mac(signing_secret, timestamp, body)
        .verify_slice(&digest)
        .map_err(|_| SignatureError::Mismatch(SIGNATURE_HEADER))
}

/// The `X-Slack-Signature` Slack would send for `body` at `timestamp`; fakes and tests sign
/// their requests with it.
pub fn sign_request(signing_secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let digest = mac(signing_secret, &timestamp.to_string(), body).finalize();
    format!("v0={}", hex::encode(digest.into_bytes()))
}

fn mac(secret: &[u8], timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    // RFC 2104's key preparation (hash a key longer than a block, zero-pad the rest) done
    // here so the infallible constructor applies and no error path is left to handle.
    let mut key = Key::<Hmac<Sha256>>::default();
    if secret.len() > key.len() {
        let hashed = Sha256::digest(secret);
        key[..hashed.len()].copy_from_slice(&hashed);
    } else {
        key[..secret.len()].copy_from_slice(secret);
    }
    let mut mac = <Hmac<Sha256> as KeyInit>::new(&key);
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTORS: &str = include_str!("../../../tests/fixtures/slack/signature-vectors.json");

    struct Vector {
        secret: String,
        timestamp: String,
        body: String,
        signature: String,
    }

    /// The vectors in the fixture file, plus slack-morphism's own test vector, which
    /// SOURCES.txt records beside it (secret, timestamp, body and signature).
    fn vectors() -> Vec<Vector> {
        let file: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
        let mut all: Vec<Vector> = file["vectors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| Vector {
                secret: v["signing_secret"].as_str().unwrap().into(),
                timestamp: v["timestamp"].as_str().unwrap().into(),
                body: v["body"].as_str().unwrap().into(),
                signature: v["expected_signature"].as_str().unwrap().into(),
            })
            .collect();
        all.push(Vector {
            secret: "fa2c05deeef5a4077494e89f54394de0".into(),
            timestamp: "1531420618".into(),
            body: "test-body".into(),
            signature: "v0=baa91ef62d346e56607bbdd278a8acd570b91226854f15a382f43d33be42f666".into(),
        });
        all
    }

    fn check(v: &Vector, body: &[u8], secret: &[u8], now: i64) -> Result<(), SignatureError> {
        verify_request(secret, Some(&v.timestamp), Some(&v.signature), body, now)
    }

    #[test]
    fn accepts_the_published_vectors() {
        for v in vectors() {
            let now: i64 = v.timestamp.parse().unwrap();
            assert_eq!(
                check(&v, v.body.as_bytes(), v.secret.as_bytes(), now),
                Ok(())
            );
            assert_eq!(
                sign_request(v.secret.as_bytes(), now, v.body.as_bytes()),
                v.signature
            );
            // At the edge of the window, both ways.
            assert_eq!(
                check(&v, v.body.as_bytes(), v.secret.as_bytes(), now + 300),
                Ok(())
            );
            assert_eq!(
                check(&v, v.body.as_bytes(), v.secret.as_bytes(), now - 300),
                Ok(())
            );
        }
    }

    #[test]
    fn refuses_stale_tampered_and_foreign_requests() {
        for v in vectors() {
            let now: i64 = v.timestamp.parse().unwrap();
            let (body, secret) = (v.body.as_bytes(), v.secret.as_bytes());
            assert!(matches!(
                check(&v, body, secret, now + 301),
                Err(SignatureError::Stale { skew: 301, .. })
            ));
            assert!(matches!(
                check(&v, body, secret, now - 301),
                Err(SignatureError::Stale { .. })
            ));
            let mut tampered = body.to_vec();
            tampered.push(b'x');
            assert_eq!(
                check(&v, &tampered, secret, now),
                Err(SignatureError::Mismatch(SIGNATURE_HEADER))
            );
            assert_eq!(
                check(&v, body, b"not-the-signing-secret", now),
                Err(SignatureError::Mismatch(SIGNATURE_HEADER))
            );
        }
    }

    #[test]
    fn names_what_is_missing_or_malformed() {
        let body = b"test-body";
        let good = sign_request(b"s", 1_700_000_000, body);
        let now = 1_700_000_000;
        assert_eq!(
            verify_request(b"s", None, Some(&good), body, now),
            Err(SignatureError::Missing(TIMESTAMP_HEADER))
        );
        assert_eq!(
            verify_request(b"s", Some("1700000000"), None, body, now),
            Err(SignatureError::Missing(SIGNATURE_HEADER))
        );
        assert_eq!(
            verify_request(b"s", Some("soon"), Some(&good), body, now),
            Err(SignatureError::NotATime {
                header: TIMESTAMP_HEADER,
                value: "soon".into()
            })
        );
        for bad in ["", "v1=00", "v0=zz", "v0=abcd", &good[3..]] {
            assert!(
                matches!(
                    verify_request(b"s", Some("1700000000"), Some(bad), body, now),
                    Err(SignatureError::Malformed {
                        header: SIGNATURE_HEADER,
                        ..
                    })
                ),
                "{bad:?}"
            );
        }
        let message = SignatureError::Stale {
            timestamp: 1,
            now: 302,
            skew: 301,
        }
        .to_string();
        assert!(message.contains("replay"), "{message}");
    }

    #[test]
    fn long_secrets_follow_hmac() {
        // Secrets longer than SHA-256's block take RFC 2104's hashed-key path; this one
        // was signed with Python's hmac module.
        let secret = [b'k'; 100];
        assert_eq!(
            sign_request(&secret, 1, b"b"),
            "v0=5d707156eceb269b1c96700e8666b743233364f884fb76f7f6b2eb102fb60afd"
        );
    }
}
