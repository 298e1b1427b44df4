//! Which sandbox a connection comes from, and so which policy applies and which attempt
//! its records belong to.
//!
//! The proxy asks an [`Admit`] for every request, handing it the token the client showed
//! in `Proxy-Authorization`. Two answers are built in:
//!
//! - an [`Admission`] admits everyone: one listener per attempt, where being able to
//!   connect to the listener is what identifies the sandbox;
//! - [`Grants`] admits by token: one listener for every sandbox, each given its own token
//!   (`gh-eg-…`, 256 random bits) in its proxy URL, the way the model gateway gives each
//!   attempt its own key. Clients send the URL's user and password as
//!   `Proxy-Authorization: Basic …` (curl, pip, npm, cargo and git all do); the token may
//!   be the password (the usual `http://gatehouse:TOKEN@proxy:port`) or the user, or come
//!   as `Bearer TOKEN`. A token stops working when its [`Grant`] is revoked or dropped: the
//!   runner holds the grant for as long as the attempt runs.
//!
//! Tokens are kept only as SHA-256 hashes, looked up by hash.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};
use tokio::sync::Semaphore;

use crate::policy::Policy;

/// The user name in the proxy URLs of [`Grant::proxy_url`]; the proxy ignores it.
pub const PROXY_USER: &str = "gatehouse";

/// What a connection is admitted under: whose it is (`label`, the attempt), what it may
/// reach, and the tunnels it holds. Clones share the tunnel count.
#[derive(Debug, Clone)]
pub struct Admission {
    label: Arc<str>,
    policy: Arc<Policy>,
    tunnels: Arc<Semaphore>,
}

impl Admission {
    /// An admission under `policy`, labelled `label` in the records (the attempt).
    pub fn new(label: impl Into<Arc<str>>, policy: Policy) -> Self {
        let tunnels = Arc::new(Semaphore::new(policy.max_tunnels()));
        Self {
            label: label.into(),
            policy: Arc::new(policy),
            tunnels,
        }
    }

    /// The label its connections are recorded with.
    pub fn label(&self) -> &Arc<str> {
        &self.label
    }

    /// The policy its connections are held to.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub(crate) fn tunnels(&self) -> &Arc<Semaphore> {
        &self.tunnels
    }
}

/// Decides, for each request, which admission it comes under: `token` is what the client
/// showed in `Proxy-Authorization` (`None` when it showed nothing usable). `None` refuses
/// the request with 407 ([`Refusal::NoCredential`](crate::Refusal::NoCredential) without a
/// token, [`Refusal::UnknownToken`](crate::Refusal::UnknownToken) with one). Any `Fn(Option<&str>) -> Option<Admission>` is one.
pub trait Admit: Send + Sync + 'static {
    /// The admission for a request showing `token`, if any.
    fn admit(&self, token: Option<&str>) -> Option<Admission>;
}

/// One listener per attempt: every connection to it is this attempt's.
impl Admit for Admission {
    fn admit(&self, _token: Option<&str>) -> Option<Admission> {
        Some(self.clone())
    }
}

impl<F> Admit for F
where
    F: Fn(Option<&str>) -> Option<Admission> + Send + Sync + 'static,
{
    fn admit(&self, token: Option<&str>) -> Option<Admission> {
        self(token)
    }
}

type TokenHash = [u8; 32];

fn hash(token: &str) -> TokenHash {
    Sha256::digest(token.as_bytes()).into()
}

/// The tokens of the sandboxes one listener serves. Clones share the same tokens.
#[derive(Clone, Default)]
pub struct Grants {
    tokens: Arc<Mutex<HashMap<TokenHash, Admission>>>,
}

impl fmt::Debug for Grants {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grants")
            .field("live", &self.lock().len())
            .finish()
    }
}

impl Grants {
    /// No tokens yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh token admitting connections under `policy`, recorded as `label`; valid
    /// until the returned grant is revoked or dropped.
    pub fn grant(&self, label: impl Into<Arc<str>>, policy: Policy) -> Grant {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let token = format!("gh-eg-{}", hex::encode(bytes));
        let hash = hash(&token);
        self.lock().insert(hash, Admission::new(label, policy));
        Grant {
            token,
            hash,
            grants: self.clone(),
        }
    }

    /// How many grants are live.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no grant is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TokenHash, Admission>> {
        // A panic while holding the map cannot leave it half-changed: inserts and removes
        // are single operations.
        self.tokens.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Admit for Grants {
    fn admit(&self, token: Option<&str>) -> Option<Admission> {
        let token = token?;
        self.lock().get(&hash(token)).cloned()
    }
}

/// One sandbox's token. Dropping it revokes the token; tunnels already open run on until
/// they close.
pub struct Grant {
    token: String,
    hash: TokenHash,
    grants: Grants,
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grant").field("token", &"gh-eg-…").finish()
    }
}

impl Grant {
    /// The token itself, for the sandbox only.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The proxy URL a sandbox is given: `http://gatehouse:TOKEN@{proxy}`, where `proxy`
    /// is the `host:port` at which the sandbox reaches the listener.
    pub fn proxy_url(&self, proxy: &str) -> String {
        format!("http://{PROXY_USER}:{}@{proxy}", self.token)
    }

    /// The environment that points a sandbox's tools at the proxy: `HTTPS_PROXY` and
    /// `HTTP_PROXY`, in both cases (curl reads only the lower-case `http_proxy`). Plain
    /// HTTP through it is refused with an explanation rather than failing to connect. The
    /// caller adds `NO_PROXY` for hosts reached directly (the model gateway).
    pub fn environment(&self, proxy: &str) -> Vec<(String, String)> {
        let url = self.proxy_url(proxy);
        ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"]
            .into_iter()
            .map(|name| (name.to_owned(), url.clone()))
            .collect()
    }

    /// Stops the token working now.
    pub fn revoke(&self) {
        self.grants.lock().remove(&self.hash);
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        self.revoke();
    }
}

/// The token in a `Proxy-Authorization` value: `Basic` (the password, or the user when the
/// password is empty) or `Bearer`. `None` when there is none or it cannot be read.
pub(crate) fn token_from_header(value: &str) -> Option<String> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return (!rest.is_empty()).then(|| rest.to_owned());
    }
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest)
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':').unwrap_or((decoded.as_str(), ""));
    let token = if password.is_empty() { user } else { password };
    (!token.is_empty()).then(|| token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_read_from_basic_and_bearer() {
        let basic = |s: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert_eq!(
            token_from_header(&basic("gatehouse:gh-eg-1")).as_deref(),
            Some("gh-eg-1")
        );
        assert_eq!(
            token_from_header(&basic("gh-eg-2:")).as_deref(),
            Some("gh-eg-2")
        );
        assert_eq!(
            token_from_header(&basic("gh-eg-3")).as_deref(),
            Some("gh-eg-3")
        );
        assert_eq!(
            token_from_header("bearer gh-eg-4").as_deref(),
            Some("gh-eg-4")
        );
        assert_eq!(token_from_header(&basic(":")), None);
        assert_eq!(token_from_header("Basic !!!"), None);
        assert_eq!(token_from_header("Digest x"), None);
        assert_eq!(token_from_header("Bearer"), None);
    }

    #[test]
    fn a_grant_admits_until_dropped_and_never_shows_its_token() {
        let grants = Grants::new();
        let grant = grants.grant("attempt-1", Policy::default());
        let token = grant.token().to_owned();
        assert!(token.starts_with("gh-eg-") && token.len() == 6 + 64);
        let admitted = grants.admit(Some(&token)).expect("admitted");
        assert_eq!(&**admitted.label(), "attempt-1");
        assert!(grants.admit(Some("gh-eg-other")).is_none());
        assert!(grants.admit(None).is_none());
        assert!(!format!("{grant:?} {grants:?}").contains(&token));
        let env = grant.environment("gateway:3128");
        assert!(env.contains(&(
            "HTTPS_PROXY".to_owned(),
            format!("http://gatehouse:{token}@gateway:3128")
        )));
        drop(grant);
        assert!(grants.admit(Some(&token)).is_none());
        assert!(grants.is_empty());
    }
}
