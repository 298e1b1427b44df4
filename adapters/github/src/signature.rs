//! `X-Hub-Signature-256`: HMAC-SHA256 of the raw body with the webhook secret.

pub use gatehouse_webhook::SignatureError;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The header GitHub signs its deliveries in.
const SIGNATURE_HEADER: &str = "X-Hub-Signature-256";
/// A header that is not `sha256=` and 64 hex digits.
const MALFORMED: SignatureError = SignatureError::Malformed {
    header: SIGNATURE_HEADER,
    shape: "`sha256=<64 hex digits>`",
};

/// Checks `header` against the body under each secret (several during a rotation). The
/// comparison is constant-time (`Mac::verify_slice`).
pub fn verify_signature<S: AsRef<[u8]>>(
    secrets: &[S],
    header: Option<&str>,
    body: &[u8],
) -> Result<(), SignatureError> {
    if secrets.is_empty() {
        return Err(SignatureError::NoSecret);
    }
    let header = header.ok_or(SignatureError::Missing(SIGNATURE_HEADER))?;
    let hex_digest = header.trim().strip_prefix("sha256=").ok_or(MALFORMED)?;
    let expected = hex::decode(hex_digest).map_err(|_| MALFORMED)?;
    if expected.len() != 32 {
        return Err(MALFORMED);
    }
    for secret in secrets {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_ref()) else {
            continue;
        };
        mac.update(body);
        if mac.verify_slice(&expected).is_ok() {
            return Ok(());
        }
    }
    Err(SignatureError::Mismatch(SIGNATURE_HEADER))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GitHub Docs' published vector (fixtures/github/signature-vector.json).
    const SECRET: &str = "It's a Secret to Everybody";
    const HEADER: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    #[test]
    fn the_published_vector_verifies() {
        assert_eq!(
            verify_signature(&[SECRET], Some(HEADER), b"Hello, World!"),
            Ok(())
        );
    }

    #[test]
    fn any_of_several_secrets_verifies_for_rotation() {
        assert_eq!(
            verify_signature(&["old secret", SECRET], Some(HEADER), b"Hello, World!"),
            Ok(())
        );
    }

    #[test]
    fn refusals_say_why() {
        let body = b"Hello, World!";
        assert_eq!(
            verify_signature(&[SECRET], None, body),
            Err(SignatureError::Missing(SIGNATURE_HEADER))
        );
        assert_eq!(
            verify_signature(&[SECRET], Some("sha1=abc"), body),
            Err(MALFORMED)
        );
        assert_eq!(
            verify_signature(&[SECRET], Some("sha256=zz"), body),
            Err(MALFORMED)
        );
        assert_eq!(
            verify_signature(&[SECRET], Some(HEADER), b"Hello, World?"),
            Err(SignatureError::Mismatch(SIGNATURE_HEADER))
        );
        assert_eq!(
            verify_signature(&["wrong"], Some(HEADER), body),
            Err(SignatureError::Mismatch(SIGNATURE_HEADER))
        );
        assert_eq!(
            verify_signature::<&str>(&[], Some(HEADER), body),
            Err(SignatureError::NoSecret)
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_headers_never_panic(header in ".*", body in proptest::collection::vec(0u8.., 0..64)) {
            let _ = verify_signature(&[SECRET], Some(&header), &body);
        }
    }
}
