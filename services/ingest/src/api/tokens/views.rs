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
    /// For an agent to use (an assistant, a bot): it acts for the person but never
    /// decides a gate, whatever its scopes. A token made with an agent's token is always
    /// an agent's.
    #[serde(default)]
    pub for_agent: bool,
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
    /// Made for an agent: it never decides a gate.
    #[serde(default)]
    pub for_agent: bool,
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
    /// Made for an agent: it never decides a gate.
    #[serde(default)]
    pub for_agent: bool,
}

/// `GET /whoami`: who a token acts for and what it may do, so a client (such as
/// `gatehouse mcp`) offers only what the token can use.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WhoAmI {
    /// The person it acts for.
    pub person: String,
    /// Their groups.
    pub groups: Vec<String>,
    /// The token's name.
    pub token: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// Made for an agent: it never decides a gate.
    pub for_agent: bool,
    /// Whether it administers Gatehouse (an `admin` token of someone in `admins`).
    pub admin: bool,
}
