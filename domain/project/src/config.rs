//! `[[projects]]` as the configuration file spells it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gatehouse_events::{History, RepositoryMode};
use gatehouse_secret::Secret;
use serde::{Deserialize, Serialize};

/// One `[[projects]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// Unique; runs, requirements and reports are grouped by it.
    pub name: String,
    /// The code it works on; a run checks out all of them unless it names some.
    #[serde(default)]
    pub repositories: Vec<RepositoryConfig>,
    /// Chat channels that work on this project: `slack:C0API`, `discord:1234567890`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    /// The SOPs its runs may use; empty = all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sops: Vec<String>,
    /// What `run` without an SOP starts in the project's channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_sop: Option<String>,
    /// How the project's tests run; SOPs read it as `{{ project.test_command }}` and
    /// `$GATEHOUSE_PROJECT_TEST_COMMAND`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_command: Option<String>,
    /// Further settings SOPs read the same way (`{{ project.<key> }}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// Who may start runs on it (person ids, `group:<name>`); empty = anyone with run rights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run: Vec<String>,
    /// Who the assistant answers in its channels; empty = anyone known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub converse: Vec<String>,
    /// Who may decide its runs' gates, beside each gate's own approvers; empty = the gate
    /// alone decides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
    /// Who may read its runs, requirements, conversations, logs, artifacts and reports;
    /// empty = whoever has `run`, `converse` or `approve` on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// What one run of the project may spend at the model gateway (`"$5"`,
    /// `"200k tokens"`): the request past it is refused and its node fails saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<gatehouse_agent::Limit>,
    /// What the project may spend per UTC day over all its runs and conversations, in
    /// place of `[budget] daily`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_budget: Option<gatehouse_agent::Limit>,
    /// The `[skills.NAME]` every agent of the project gets, besides its role's and its
    /// repositories' own `.gatehouse/skills/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// The `[mcp.NAME]` servers every agent working on this project gets, beside its
    /// role's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<String>,
    /// How much history its workspaces get: `full` (the default) or `shallow` (the tip of
    /// each branch a run needs, for the fastest first start when no SOP looks back).
    #[serde(default, skip_serializing_if = "History::is_full")]
    pub history: History,
}

/// One repository of a project: on GitHub (`[github]`) unless it names its own `url` or
/// a `forge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepositoryConfig {
    /// `owner/name`: on GitHub, the repository itself; with a `url` or a `forge`, its name
    /// in Gatehouse (commands, records, the workspace folder of its last part).
    pub repo: String,
    /// The branch work starts from and pull requests target; the repository's default
    /// branch when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default = "auto")]
    pub mode: RepositoryMode,
    /// The work branch, for `new` and `existing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_name: Option<String>,
    /// Its own git remote, instead of GitHub: `file:///srv/git/app.git`,
    /// `https://git.example.com/team/app.git`, `ssh://git@host/team/app.git` or
    /// `git@host:team/app.git`. With a `forge`, where git reaches it on that forge (derived
    /// from the forge's `git_url` and `path` when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The token git authenticates with over https (sent as an HTTP header to this url
    /// only); a forge's repository takes the forge's token when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// The private key git authenticates with over ssh (OpenSSH format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_key: Option<Secret>,
    /// The ssh host keys to trust (a `known_hosts` file); without it the host's key is
    /// accepted the first time and held to afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_hosts: Option<PathBuf>,
    /// The `[forges.NAME]` where its merge requests (pull requests) open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forge: Option<String>,
    /// Its project path on the forge (`group/subgroup/app`); `repo` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl RepositoryConfig {
    /// Whether it is on GitHub: it names no url and no forge of its own.
    pub fn on_github(&self) -> bool {
        self.url.is_none() && self.forge.is_none()
    }

    /// Its path on its forge.
    pub fn forge_path(&self) -> &str {
        self.path.as_deref().unwrap_or(&self.repo)
    }
}

fn auto() -> RepositoryMode {
    RepositoryMode::Auto
}

/// What a project's people lists grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Right {
    /// Start runs on the project.
    Run,
    /// Talk to the assistant in its channels.
    Converse,
    /// Decide its runs' gates.
    Approve,
    /// Read what was done on it: runs, their logs and artifacts, requirements,
    /// conversations, schedules and reports.
    Read,
}

impl Right {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Converse => "converse",
            Self::Approve => "approve",
            Self::Read => "read",
        }
    }
}
