//! The code a run works on: its project and the repositories checked out in its workspace.
//!
//! Resolved once, where the run is asked for (ingest for the API, chat and comments; the
//! scheduler for schedules and child runs), and frozen with the run: the runner prepares
//! and delivers from this, never from the configuration it happens to have, so a project
//! edited while a run waits at a gate does not change what that run pushes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A run's project and repositories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunWorkspace {
    /// The project's name.
    pub project: String,
    /// The repositories, in the project's order. One is cloned at the workspace root;
    /// several each under [`RepositoryCheckout::dir`].
    pub repositories: Vec<RepositoryCheckout>,
    /// The project's settings, for `{{ project.* }}` and `GATEHOUSE_PROJECT_*`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
}

/// One repository of a run's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepositoryCheckout {
    /// `owner/name`.
    pub repo: String,
    /// The branch work starts from and pull requests target; the repository's default
    /// branch when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    pub mode: RepositoryMode,
    /// The work branch for `new` (created) and `existing` (checked out and pushed to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_name: Option<String>,
    /// Its own git remote, when it is not on GitHub (nor given by its forge): frozen, so
    /// the run pushes where it cloned from. Its credential is the runner's to find.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The `[forges.NAME]` its merge requests open on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forge: Option<String>,
    /// Its project path on that forge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How much of its history the workspace gets.
    #[serde(default, skip_serializing_if = "History::is_full")]
    pub history: History,
}

/// How much of a repository's history a run's workspace holds: all of it (what `git log`,
/// `git blame` and merges with the base need), or only the commits it starts from, for
/// projects whose SOPs never look back and want the fastest first start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum History {
    #[default]
    Full,
    /// The tip of each branch it needs, as `git clone --depth 1` gives.
    Shallow,
}

impl History {
    /// Whether it is [`History::Full`], the default left out of the frozen workspace.
    pub fn is_full(&self) -> bool {
        *self == Self::Full
    }

    /// `full` or `shallow`, as configured.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Shallow => "shallow",
        }
    }
}

impl RepositoryCheckout {
    /// Its directory under the workspace when the run has several repositories: the
    /// repository's name (projects refuse two with one name).
    pub fn dir(&self) -> &str {
        self.repo.rsplit('/').next().unwrap_or(&self.repo)
    }

    /// Whether delivery may push to it.
    pub fn writable(&self) -> bool {
        self.mode != RepositoryMode::ReadOnly
    }
}

/// How a repository's work branch is chosen, and whether it is pushed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RepositoryMode {
    /// `gatehouse/<n>-<slug>`, named after the requirement.
    Auto,
    /// A new branch named `branch_name`, created from `branch`.
    New,
    /// The existing branch `branch_name`, checked out and pushed to.
    Existing,
    /// Cloned for reading, never pushed.
    ReadOnly,
}

impl RepositoryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::New => "new",
            Self::Existing => "existing",
            Self::ReadOnly => "read-only",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_spelled_as_the_configuration_spells_them() {
        let checkout: RepositoryCheckout =
            serde_json::from_str(r#"{"repo":"acme/shared","mode":"read-only"}"#).unwrap();
        assert_eq!(checkout.mode, RepositoryMode::ReadOnly);
        assert!(!checkout.writable());
        assert_eq!(checkout.dir(), "shared");
        assert_eq!(
            serde_json::to_string(&RepositoryMode::Existing).unwrap(),
            "\"existing\""
        );
    }
}
