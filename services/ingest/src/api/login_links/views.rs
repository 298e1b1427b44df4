//! Bodies of `/login-links`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::views::Scope;

/// `POST /login-links`
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct CreateLoginLink {
    /// Who the link signs in; the caller when omitted. Only an administrator asks for
    /// someone else's.
    #[serde(default)]
    pub person: Option<String>,
}

/// A login link; its secret is shown once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LoginLinkCreated {
    /// Who it signs in.
    pub person: String,
    /// The link's path on the console (`/login/...`), used once.
    pub path: String,
    /// The whole link, when `server.public_url` is set.
    pub url: Option<String>,
    /// What the session it starts may do.
    pub scopes: Vec<Scope>,
    /// After this it signs nobody in.
    pub expires_at: DateTime<Utc>,
}
