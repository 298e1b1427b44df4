//! `[github]` and its `[[github.triggers]]`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// `[github]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubConfig {
    /// REST API root; GitHub Enterprise Server and test fakes change it.
    #[serde(default = "default_github_api")]
    pub api_url: String,
    /// Where people sign in to GitHub (the console's GitHub sign-in); empty = derived from
    /// `api_url`: github.com, or the Enterprise Server's host.
    #[serde(default)]
    pub web_url: String,
    /// A token, when not authenticating as an App.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// GitHub App id, with `private_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<u64>,
    /// GitHub App private key (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<Secret>,
    /// Webhook secrets; several are accepted at once for rotation.
    #[serde(default)]
    pub webhook_secrets: Vec<Secret>,
    /// Labels that start SOPs.
    #[serde(default)]
    pub triggers: Vec<GithubTrigger>,
    /// Repositories Gatehouse may act on besides the triggers' (`owner/name`, `owner/*`):
    /// where comment commands and chat's `on owner/name#N` may reach.
    #[serde(default)]
    pub repositories: Vec<String>,
    /// The bot's login: `@<login> command` in a comment is a command. Set it to the
    /// account Gatehouse's token (or App, as `<login>[bot]`) posts as: comments by it run
    /// no commands.
    #[serde(default = "default_bot_login")]
    pub bot_login: String,
    /// Deliveries larger than this are refused with 413. GitHub caps payloads at 25 MB;
    /// the events Gatehouse reads (issues, pull requests, comments) are a few KiB to a few
    /// hundred, so the default is 5 MiB.
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    /// Where repositories are cloned from and pushed to (`{git_url}/owner/name.git`);
    /// empty = derived from `api_url` (github.com, or GitHub Enterprise Server's host).
    #[serde(default)]
    pub git_url: String,
    /// The author of the commits `deliver` nodes make.
    #[serde(default = "default_commit_author")]
    pub commit_author: String,
    /// The email of that author.
    #[serde(default = "default_commit_email")]
    pub commit_email: String,
    /// How often open issues with trigger labels are checked for a missing run (labels
    /// added while Gatehouse was down).
    #[serde(default = "default_reconcile", with = "humantime_serde")]
    pub reconcile_interval: Duration,
}

fn default_commit_author() -> String {
    "Gatehouse".into()
}

fn default_commit_email() -> String {
    "gatehouse@localhost".into()
}

impl GithubConfig {
    /// Where people sign in: `web_url`, or the web host `api_url` belongs to.
    pub fn web_base(&self) -> String {
        if !self.web_url.is_empty() {
            return self.web_url.trim_end_matches('/').to_owned();
        }
        web_of(&self.api_url)
    }

    /// Where repositories live for git: `git_url`, or github.com for the public API, or
    /// the Enterprise Server host for `https://HOST/api/v3`.
    pub fn git_base(&self) -> String {
        if !self.git_url.is_empty() {
            return self.git_url.trim_end_matches('/').to_owned();
        }
        web_of(&self.api_url)
    }
}

/// github.com for the public API, the Enterprise Server's host for `https://HOST/api/v3`.
pub(crate) fn web_of(api_url: &str) -> String {
    let api = api_url.trim_end_matches('/');
    if api == "https://api.github.com" {
        return "https://github.com".into();
    }
    api.strip_suffix("/api/v3").unwrap_or(api).to_owned()
}

fn default_reconcile() -> Duration {
    Duration::from_secs(300)
}

fn default_bot_login() -> String {
    "gatehouse".into()
}

fn default_max_body() -> usize {
    5 * 1024 * 1024
}

fn default_github_api() -> String {
    "https://api.github.com".into()
}

/// `[[github.triggers]]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubTrigger {
    /// The label that starts it; empty for an `assigned` trigger.
    #[serde(default)]
    pub label: String,
    /// Assigning an issue to the bot's GitHub user (`bot_login`) starts it, instead of a
    /// label; unassigning it cancels the runs when `cancel_on_unlabel` is set.
    #[serde(default)]
    pub assigned: bool,
    /// The SOP it starts. An `assigned` trigger without one (and without `conversation`)
    /// starts the `default_sop` of the project.
    #[serde(default)]
    pub sop: String,
    /// Opens a conversation on the issue instead of starting an SOP: the assistant takes
    /// the issue as its first message and answers in comments; comments that mention the
    /// bot continue it, as messages in a chat thread do. Needs `[assistant]`.
    #[serde(default)]
    pub conversation: bool,
    /// Repository globs (`acme/*`, `acme/api`), each with a fixed owner; required, so a
    /// label starts runs only where someone chose and reconciliation searches only there.
    #[serde(default)]
    pub repos: Vec<String>,
    /// Only people known to Gatehouse may start it by labelling (GitHub issue templates
    /// apply labels for anyone who opens an issue).
    #[serde(default)]
    pub require_person: bool,
    /// Only these people and `group:` entries may start it by labelling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starters: Option<Vec<String>>,
    /// Removing the label (or, for an `assigned` trigger, the assignment) cancels the
    /// runs it started, or stops its conversation's turn.
    #[serde(default)]
    pub cancel_on_unlabel: bool,
    /// Pull requests from forks may start this SOP (its runs hold this deployment's
    /// credentials).
    #[serde(default)]
    pub allow_forks: bool,
}
