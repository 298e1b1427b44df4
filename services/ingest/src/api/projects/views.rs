//! Bodies of `/projects`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A configured project.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ProjectView {
    pub name: String,
    /// In the order runs check them out.
    pub repositories: Vec<ProjectRepositoryView>,
    /// `slack:C…`, `discord:…`: chat there works on this project.
    pub channels: Vec<String>,
    /// The SOPs its runs may use; empty = all.
    pub sops: Vec<String>,
    pub default_sop: Option<String>,
    /// What its SOPs read as `{{ project.* }}` (`test_command` among them).
    pub settings: BTreeMap<String, String>,
    /// Who may start its runs; empty = anyone with run rights.
    pub run: Vec<String>,
    /// Who the assistant answers; empty = anyone known.
    pub converse: Vec<String>,
    /// Who may decide its gates beside the gates' approvers; empty = the gates alone.
    pub approve: Vec<String>,
    /// Who may read its runs, requirements, conversations and reports; empty = whoever
    /// may run, converse or approve on it.
    #[serde(default)]
    pub read: Vec<String>,
}

/// One repository of a project.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ProjectRepositoryView {
    /// `owner/name`.
    pub repo: String,
    /// The base branch; the repository's default when absent.
    pub branch: Option<String>,
    /// auto, new, existing or read-only.
    pub mode: String,
    /// The work branch of `new` and `existing`.
    pub branch_name: Option<String>,
    /// Its own git remote (no user name), when it is not on GitHub.
    #[serde(default)]
    pub url: Option<String>,
    /// The `[forges.NAME]` its merge requests open on.
    #[serde(default)]
    pub forge: Option<String>,
}
