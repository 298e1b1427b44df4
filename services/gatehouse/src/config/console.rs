//! `[console]`: how people sign in to the web console.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// `[console]`. Login links always work; GitHub sign-in needs an OAuth App
/// (`github_client_id`, `github_client_secret`) and `server.public_url`, where GitHub
/// sends people back to (`{public_url}/auth/github/callback`, the App's callback URL).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleConfig {
    /// How long a session lasts after signing in.
    #[serde(with = "humantime_serde")]
    pub session_ttl: Duration,
    /// How long a login link may wait before it is used.
    #[serde(with = "humantime_serde")]
    pub login_link_ttl: Duration,
    /// The GitHub OAuth App's client id; empty: no GitHub sign-in.
    pub github_client_id: String,
    /// The OAuth App's client secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_client_secret: Option<Secret>,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        let defaults = gatehouse_ingest::ConsoleSettings::default();
        Self {
            session_ttl: defaults.session_ttl,
            login_link_ttl: defaults.login_link_ttl,
            github_client_id: String::new(),
            github_client_secret: None,
        }
    }
}
