//! Bodies of `/tokens`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::rights::Scope;

/// `POST /tokens`
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct CreateToken {
    /// The person it acts for; the caller when omitted. Only an administrator creates
    /// tokens for others.
    #[serde(default)]
    pub person: Option<String>,
    /// A unique name (letters, digits, `.`, `_`, `-`); the person's id, or that with a
    /// number, when omitted.
    #[serde(default)]
    pub name: Option<String>,
    /// What it may do; `read`, `run` and `decide` (as far as the caller's token has them)
    /// when omitted. A token gives only scopes its creator's token has.
    #[serde(default)]
    pub scopes: Option<Vec<Scope>>,
    /// It stops working this long after creation (`30d`, `12h`); never when omitted.
    #[serde(default)]
    pub expires_in: Option<String>,
}

/// A new token, shown once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenCreated {
    /// Its name.
    pub name: String,
    /// The person it acts for.
    pub person: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When it stops working.
    pub expires_at: Option<DateTime<Utc>>,
    /// The token; only its hash is stored.
    pub token: String,
}

/// A token, without its secret.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenView {
    /// Its name.
    pub name: String,
    /// The person it acts for.
    pub person: String,
    /// Who created it.
    pub created_by: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// When it stops working.
    pub expires_at: Option<DateTime<Utc>>,
}
