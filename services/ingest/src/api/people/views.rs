//! Bodies of `/people`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /people`
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct AddPerson {
    /// Gatehouse's id for them (letters, digits, `.`, `_`, `-`).
    pub id: String,
    /// GitHub login.
    #[serde(default)]
    pub github: Option<String>,
    /// Slack user id.
    #[serde(default)]
    pub slack: Option<String>,
    /// Discord user id.
    #[serde(default)]
    pub discord: Option<String>,
    /// Groups (gates name them as `group:<name>`; `admins` administer Gatehouse).
    #[serde(default)]
    pub groups: Vec<String>,
}

/// A person known to Gatehouse.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PersonView {
    /// Id.
    pub id: String,
    /// GitHub login.
    pub github: Option<String>,
    /// Slack user id.
    pub slack: Option<String>,
    /// Discord user id.
    pub discord: Option<String>,
    /// Groups.
    pub groups: Vec<String>,
    /// `config` (the configuration's `[[people]]`, or the built-in `admin`) or `api`.
    pub source: String,
}
