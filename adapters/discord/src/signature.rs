//! Discord signs every HTTP interaction with the application's Ed25519 key over the
//! `X-Signature-Timestamp` header followed by the raw body; an endpoint that accepts an
//! unsigned or mis-signed request is removed from the application by Discord's own checks.
//! The signature never expires, so the timestamp must also be recent: a captured request
//! replayed later (a click that approves a gate) is refused like a forged one.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

/// The replay window (five minutes either way), shared with the other signed sources.
pub use gatehouse_webhook::MAX_SKEW_SECONDS;
use gatehouse_webhook::{SignatureError, check_timestamp};

/// The header the request's time is in.
const TIMESTAMP_HEADER: &str = "X-Signature-Timestamp";
/// The header Discord signs its interactions in.
const SIGNATURE_HEADER: &str = "X-Signature-Ed25519";
/// A signature that is not 64 bytes of hex.
const NOT_HEX: SignatureError = SignatureError::Malformed {
    header: SIGNATURE_HEADER,
    shape: "a hex Ed25519 signature",
};

/// The application's public key from the developer portal, checked once at start-up so a
/// bad key fails the configuration rather than every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Reads the key as the developer portal shows it: 64 hex digits.
    pub fn from_hex(hex_key: &str) -> Result<Self, SignatureError> {
        let bytes = hex::decode(hex_key.trim())
            .map_err(|e| SignatureError::BadKey(format!("not hex: {e}")))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| {
            SignatureError::BadKey(format!("{} bytes instead of 32", b.len()))
        })?;
        VerifyingKey::from_bytes(&bytes)
            .map(Self)
            .map_err(|e| SignatureError::BadKey(e.to_string()))
    }
}

/// Checks an interaction request before anything reads its body. `signature` and
/// `timestamp` are the `X-Signature-Ed25519` and `X-Signature-Timestamp` headers (Unix
/// seconds, which must be within [`MAX_SKEW_SECONDS`] of `now_unix`; passed in so tests
/// and replays of recorded requests can fix the clock).
///
/// Uses `verify_strict`, which also refuses the malleable and small-order signatures plain
/// Ed25519 verification lets through.
pub fn verify_interaction(
    key: &PublicKey,
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    now_unix: i64,
) -> Result<(), SignatureError> {
    let signature = signature.ok_or(SignatureError::Missing(SIGNATURE_HEADER))?;
    let timestamp = timestamp.ok_or(SignatureError::Missing(TIMESTAMP_HEADER))?;
    check_timestamp(TIMESTAMP_HEADER, timestamp, now_unix)?;

    let bytes: [u8; 64] = hex::decode(signature)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(NOT_HEX)?;
    key.0
        .verify_strict(
            &signed_message(timestamp, body),
            &Signature::from_bytes(&bytes),
        )
        .map_err(|_| SignatureError::Mismatch(SIGNATURE_HEADER))
}

/// Signs a request as Discord would, for tests and fakes that play Discord: returns the
/// `X-Signature-Ed25519` value.
pub fn sign_interaction(key: &SigningKey, timestamp: &str, body: &[u8]) -> String {
    hex::encode(key.sign(&signed_message(timestamp, body)).to_bytes())
}

fn signed_message(timestamp: &str, body: &[u8]) -> Vec<u8> {
    [timestamp.as_bytes(), body].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = include_bytes!(
        "../../../tests/fixtures/discord/interaction.ping.discord-interactions-js.json"
    );
    const TIMESTAMP: &str = "1700000000";
    const NOW: i64 = 1_700_000_000;

    fn keys() -> (SigningKey, PublicKey) {
        let signing = SigningKey::generate(&mut rand::rngs::OsRng);
        let public = PublicKey::from_hex(&hex::encode(signing.verifying_key().as_bytes()))
            .expect("a generated key reads back");
        (signing, public)
    }

    #[test]
    fn a_signed_fixture_verifies() {
        let (signing, public) = keys();
        let signature = sign_interaction(&signing, TIMESTAMP, BODY);
        verify_interaction(&public, Some(&signature), Some(TIMESTAMP), BODY, NOW).unwrap();
        // At the edge of the window, both ways.
        verify_interaction(&public, Some(&signature), Some(TIMESTAMP), BODY, NOW + 300).unwrap();
        verify_interaction(&public, Some(&signature), Some(TIMESTAMP), BODY, NOW - 300).unwrap();
    }

    #[test]
    fn a_correctly_signed_old_or_future_request_is_refused() {
        let (signing, public) = keys();
        let signature = sign_interaction(&signing, TIMESTAMP, BODY);
        let at = |now| verify_interaction(&public, Some(&signature), Some(TIMESTAMP), BODY, now);
        assert!(matches!(
            at(NOW + 301),
            Err(SignatureError::Stale { skew: 301, .. })
        ));
        assert!(matches!(at(NOW - 301), Err(SignatureError::Stale { .. })));
        let soon = sign_interaction(&signing, "soon", BODY);
        assert!(matches!(
            verify_interaction(&public, Some(&soon), Some("soon"), BODY, NOW),
            Err(SignatureError::NotATime { value, .. }) if value == "soon"
        ));
        let message = at(NOW + 3600).unwrap_err().to_string();
        assert!(message.contains("replay"), "{message}");
    }

    #[test]
    fn tampering_is_refused() {
        let (signing, public) = keys();
        let signature = sign_interaction(&signing, TIMESTAMP, BODY);
        let mut tampered = BODY.to_vec();
        tampered[BODY.len() - 2] ^= 1;
        let refused = |sig: Option<&str>, ts: Option<&str>, body: &[u8]| {
            verify_interaction(&public, sig, ts, body, NOW).unwrap_err()
        };
        assert!(matches!(
            refused(Some(&signature), Some(TIMESTAMP), &tampered),
            SignatureError::Mismatch(SIGNATURE_HEADER)
        ));
        assert!(matches!(
            refused(Some(&signature), Some("1700000001"), BODY),
            SignatureError::Mismatch(SIGNATURE_HEADER)
        ));
        assert!(matches!(
            refused(None, Some(TIMESTAMP), BODY),
            SignatureError::Missing(SIGNATURE_HEADER)
        ));
        assert!(matches!(
            refused(Some(&signature), None, BODY),
            SignatureError::Missing(TIMESTAMP_HEADER)
        ));
        assert!(matches!(
            refused(Some("zz"), Some(TIMESTAMP), BODY),
            SignatureError::Malformed { .. }
        ));
        assert!(matches!(
            refused(Some(&signature[..64]), Some(TIMESTAMP), BODY),
            SignatureError::Malformed { .. }
        ));
    }

    #[test]
    fn another_key_is_refused() {
        let (signing, _) = keys();
        let (_, other) = keys();
        let signature = sign_interaction(&signing, TIMESTAMP, BODY);
        assert!(matches!(
            verify_interaction(&other, Some(&signature), Some(TIMESTAMP), BODY, NOW),
            Err(SignatureError::Mismatch(SIGNATURE_HEADER))
        ));
    }

    #[test]
    fn bad_keys_say_why() {
        let short = PublicKey::from_hex("abcd").unwrap_err().to_string();
        assert!(short.contains("2 bytes instead of 32"), "{short}");
        let not_hex = PublicKey::from_hex("xyz").unwrap_err().to_string();
        assert!(not_hex.contains("not hex"), "{not_hex}");
        let (signing, _) = keys();
        let padded = format!(" {} ", hex::encode(signing.verifying_key().as_bytes()));
        PublicKey::from_hex(&padded).unwrap();
    }
}
