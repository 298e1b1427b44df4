//! The checked set of projects, and what each one allows.

use std::collections::{BTreeMap, BTreeSet};

use gatehouse_commands::is_repo_name;
use gatehouse_events::{RepositoryCheckout, RepositoryMode, RunWorkspace};
use gatehouse_sop::{check_person_or_group, names_person};

use crate::config::{ProjectConfig, RepositoryConfig, Right};
use crate::error::ConfigError;
use crate::remote::{Transport, transport};

/// The configured projects, checked: unique names, well-formed repositories and branches,
/// each channel in one project at most.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projects {
    projects: Vec<Project>,
}

/// One checked project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    config: ProjectConfig,
}

impl Projects {
    pub fn new(configs: Vec<ProjectConfig>) -> Result<Self, ConfigError> {
        let mut names = BTreeSet::new();
        let mut channels = BTreeMap::new();
        for project in &configs {
            check_project(project)?;
            if !names.insert(project.name.as_str()) {
                return Err(ConfigError(format!(
                    "two projects are named `{}`",
                    project.name
                )));
            }
            for channel in &project.channels {
                if let Some(other) = channels.insert(channel.as_str(), project.name.as_str()) {
                    return Err(ConfigError(format!(
                        "the channel `{channel}` is in projects `{other}` and `{}`; chat there must work on one",
                        project.name
                    )));
                }
            }
        }
        Ok(Self {
            projects: configs
                .into_iter()
                .map(|config| Project { config })
                .collect(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.projects.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Project> {
        self.projects.iter()
    }

    pub fn get(&self, name: &str) -> Option<&Project> {
        self.projects.iter().find(|p| p.config.name == name)
    }

    /// The projects listing `repo` (`owner/name`, compared without case, as GitHub does).
    pub fn of_repo(&self, repo: &str) -> Vec<&Project> {
        self.projects
            .iter()
            .filter(|p| p.repository(repo).is_some())
            .collect()
    }

    /// The project whose channels include `channel` (`slack:C0API`).
    pub fn of_channel(&self, channel: &str) -> Option<&Project> {
        self.projects
            .iter()
            .find(|p| p.config.channels.iter().any(|c| c == channel))
    }

    /// Every repository some project lists.
    pub fn repositories(&self) -> BTreeSet<&str> {
        self.projects
            .iter()
            .flat_map(|p| p.config.repositories.iter().map(|r| r.repo.as_str()))
            .collect()
    }

    /// The names, for messages.
    pub fn names(&self) -> String {
        if self.projects.is_empty() {
            return "none".into();
        }
        self.projects
            .iter()
            .map(|p| format!("`{}`", p.config.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Project {
    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &ProjectConfig {
        &self.config
    }

    /// Its entry for `repo`, compared without case.
    pub fn repository(&self, repo: &str) -> Option<&RepositoryConfig> {
        self.config
            .repositories
            .iter()
            .find(|r| r.repo.eq_ignore_ascii_case(repo))
    }

    /// Whether a run of it may use `sop`.
    pub fn allows_sop(&self, sop: &str) -> bool {
        self.config.sops.is_empty() || self.config.sops.iter().any(|s| s == sop)
    }

    /// Whether `person`, in `groups`, has `right` here. An empty list restricts nothing:
    /// the SOP's starters and the gate's approvers still apply. An empty `read` list is
    /// the others: whoever may run or converse here, or whom `approve` names, may read.
    /// An empty `approve` lets nobody read: it leaves deciding to each gate's own
    /// approvers rather than giving the right to everyone, so a project that closes `run`
    /// and `converse` is closed to readers too.
    pub fn grants(&self, right: Right, person: &str, groups: &[String]) -> bool {
        let list = self.people(right);
        if right == Right::Read && list.is_empty() {
            return self.grants(Right::Run, person, groups)
                || self.grants(Right::Converse, person, groups)
                || names_person(&self.config.approve, person, groups);
        }
        list.is_empty() || names_person(list, person, groups)
    }

    /// Who has `right`, as configured.
    pub fn people(&self, right: Right) -> &[String] {
        match right {
            Right::Run => &self.config.run,
            Right::Converse => &self.config.converse,
            Right::Approve => &self.config.approve,
            Right::Read => &self.config.read,
        }
    }

    /// The settings SOPs read: `test_command` and `settings`.
    pub fn settings(&self) -> BTreeMap<String, String> {
        let mut settings = self.config.settings.clone();
        if let Some(command) = &self.config.test_command {
            settings.insert("test_command".into(), command.clone());
        }
        settings
    }

    /// The workspace of a run on `repos` of this project (all of them when `None`), in the
    /// project's order.
    pub fn workspace(&self, repos: Option<&BTreeSet<String>>) -> RunWorkspace {
        let repositories = self
            .config
            .repositories
            .iter()
            .filter(|r| repos.is_none_or(|names| names.contains(&r.repo.to_ascii_lowercase())))
            .map(|r| RepositoryCheckout {
                repo: r.repo.clone(),
                branch: r.branch.clone(),
                mode: r.mode,
                branch_name: r.branch_name.clone(),
                url: r.url.clone(),
                forge: r.forge.clone(),
                path: r.forge.as_ref().map(|_| r.forge_path().to_owned()),
                history: self.config.history,
            })
            .collect();
        RunWorkspace {
            project: self.config.name.clone(),
            repositories,
            settings: self.settings(),
        }
    }

    /// The repositories, for messages.
    pub(crate) fn repository_names(&self) -> String {
        if self.config.repositories.is_empty() {
            return "none".into();
        }
        self.config
            .repositories
            .iter()
            .map(|r| r.repo.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn check_project(project: &ProjectConfig) -> Result<(), ConfigError> {
    let name = &project.name;
    let fail = |what: String| Err(ConfigError(format!("project `{name}`: {what}")));
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ConfigError(format!(
            "`{name}` is not a project name: use letters, digits, `-` and `_`"
        )));
    }
    if let Err(e) = gatehouse_agent::check_mcp_list(&project.mcp) {
        return fail(format!("`mcp`: {e}"));
    }
    let mut repos = BTreeSet::new();
    let mut dirs = BTreeSet::new();
    for repository in &project.repositories {
        let repo = &repository.repo;
        if !is_repo_name(repo) {
            return fail(format!(
                "`{repo}` is not owner/name (letters, digits, `-`, `_` and `.`; no globs)"
            ));
        }
        if !repos.insert(repo.to_ascii_lowercase()) {
            return fail(format!("{repo} is listed twice"));
        }
        let dir = repo.rsplit('/').next().unwrap_or(repo).to_ascii_lowercase();
        if !dirs.insert(dir.clone()) {
            return fail(format!(
                "two repositories are named `{dir}`; a workspace holds each under its name"
            ));
        }
        check_remote(repository)
            .map_err(|what| ConfigError(format!("project `{name}`: {repo}: {what}")))?;
        for branch in repository.branch.iter().chain(&repository.branch_name) {
            if !is_branch_name(branch) {
                return fail(format!("{repo}: `{branch}` is not a branch name"));
            }
        }
        match (repository.mode, &repository.branch_name) {
            (RepositoryMode::New | RepositoryMode::Existing, None) => {
                return fail(format!(
                    "{repo}: mode `{}` needs branch_name (the branch to {})",
                    repository.mode.as_str(),
                    if repository.mode == RepositoryMode::New {
                        "create"
                    } else {
                        "check out and push to"
                    }
                ));
            }
            (RepositoryMode::Auto | RepositoryMode::ReadOnly, Some(_)) => {
                return fail(format!(
                    "{repo}: branch_name is for modes `new` and `existing`; mode `{}` {}",
                    repository.mode.as_str(),
                    if repository.mode == RepositoryMode::Auto {
                        "names its branch after the requirement"
                    } else {
                        "is never pushed"
                    }
                ));
            }
            _ => {}
        }
    }
    for channel in &project.channels {
        let valid = match channel.split_once(':') {
            Some(("slack" | "discord", id)) => {
                !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric())
            }
            _ => false,
        };
        if !valid {
            return fail(format!(
                "`{channel}` is not a channel: write slack:<channel id> or discord:<channel id>"
            ));
        }
    }
    for key in project.settings.keys() {
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return fail(format!(
                "setting `{key}`: names are lowercase letters, digits and `_` (they become GATEHOUSE_PROJECT_<NAME>)"
            ));
        }
    }
    for (right, list) in [
        (Right::Run, &project.run),
        (Right::Converse, &project.converse),
        (Right::Approve, &project.approve),
        (Right::Read, &project.read),
    ] {
        for entry in list {
            check_person_or_group(entry)
                .map_err(|e| ConfigError(format!("project `{name}`: {}: {e}", right.as_str())))?;
        }
    }
    if let Some(sop) = &project.default_sop
        && !project.sops.is_empty()
        && !project.sops.contains(sop)
    {
        return fail(format!(
            "default_sop `{sop}` is not among its sops ({})",
            project.sops.join(", ")
        ));
    }
    Ok(())
}

/// `Err` saying what is wrong with a repository's own remote: a url that is no remote
/// Gatehouse clones from, a credential its transport does not take (a token is sent over
/// https, a deploy key over ssh; a file:// remote takes none), a path without a forge.
fn check_remote(repository: &RepositoryConfig) -> Result<(), String> {
    let transport = match &repository.url {
        Some(url) => Some(transport(url).map_err(|e| format!("url: {e}"))?),
        None => None,
    };
    let on = |t: Option<Transport>| match t {
        Some(Transport::File) => "a file:// url",
        Some(Transport::Ssh) => "an ssh url",
        Some(Transport::Http) => "an https url",
        None if repository.forge.is_some() => "a forge's derived https url",
        None => "GitHub (no url)",
    };
    if repository.token.is_some() && repository.deploy_key.is_some() {
        return Err("give `token` (https) or `deploy_key` (ssh), not both".into());
    }
    if repository.token.is_some() {
        let fits = match transport {
            Some(t) => t == Transport::Http,
            None => repository.forge.is_some(),
        };
        if !fits {
            return Err(format!(
                "`token` is sent over https, but the repository is on {}; {}",
                on(transport),
                if transport == Some(Transport::Ssh) {
                    "give it a `deploy_key` instead"
                } else if transport.is_none() {
                    "GitHub's token is [github]'s `token`"
                } else {
                    "a file:// remote takes no credential"
                }
            ));
        }
    }
    if repository.deploy_key.is_some() && transport != Some(Transport::Ssh) {
        return Err(format!(
            "`deploy_key` is for ssh, but the repository is on {}; {}",
            on(transport),
            if transport == Some(Transport::Http) {
                "give it a `token` instead"
            } else {
                "give it an ssh `url` (ssh://host/path or user@host:path)"
            }
        ));
    }
    if repository.known_hosts.is_some() && transport != Some(Transport::Ssh) {
        return Err(format!(
            "`known_hosts` is for ssh, but the repository is on {}",
            on(transport)
        ));
    }
    if let Some(forge) = &repository.forge
        && (forge.is_empty()
            || !forge
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    {
        return Err(format!(
            "`{forge}` is not a forge's name (the NAME of a [forges.NAME] section)"
        ));
    }
    if let Some(path) = &repository.path {
        if repository.forge.is_none() {
            return Err("`path` is the repository's path on its `forge`; name the forge".into());
        }
        let plain = |part: &str| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !path.split('/').all(plain) || !path.contains('/') {
            return Err(format!(
                "`{path}` is not a path on a forge (owner/name, or group/subgroup/name)"
            ));
        }
    }
    Ok(())
}

/// A branch name git takes (`git check-ref-format --branch`'s rules) that no command line
/// can read as an option: the one rule for branches in the configuration and those the
/// runner meets in a frozen workspace or on a remote.
pub fn is_branch_name(name: &str) -> bool {
    !name.starts_with('-')
        && !name.ends_with('/')
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("@{")
        && name.split('/').all(|part| {
            !part.is_empty()
                && !part.starts_with('.')
                && part.bytes().all(|b| {
                    b > b' ' && !matches!(b, b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\' | 0x7f)
                })
        })
}
