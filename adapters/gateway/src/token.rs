//! Grant tokens: random, handed to the sandbox, and kept by the gateway only as hashes, so
//! its memory holds nothing a sandbox could replay if it leaked.

use rand::RngCore;
use sha2::{Digest, Sha256};

/// The prefix of every token, so one found in a log or a repository is recognised.
pub(crate) const PREFIX: &str = "gh-gw-";

/// The SHA-256 of a token: what the gateway stores and looks tokens up by.
pub(crate) type TokenHash = [u8; 32];

/// A fresh token: the prefix and 32 random bytes in hex.
pub(crate) fn fresh() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{PREFIX}{}", hex::encode(bytes))
}

pub(crate) fn hash(token: &str) -> TokenHash {
    let digest = Sha256::digest(token.as_bytes());
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&digest);
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_fresh_and_hashed_apart() {
        let (a, b) = (fresh(), fresh());
        assert!(a.starts_with(PREFIX));
        assert_eq!(a.len(), PREFIX.len() + 64);
        assert_ne!(a, b);
        assert_ne!(hash(&a), hash(&b));
        assert_eq!(hash(&a), hash(&a.clone()));
    }
}
