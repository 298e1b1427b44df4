//! The `[github]` settings ingest acts on.

use gatehouse_commands::is_repo_name;
use globset::{GlobSet, GlobSetBuilder};
use secrecy::{ExposeSecret, SecretString};

/// What ingest needs from `[github]`.
pub struct GithubSettings {
    /// Webhook secrets; several are accepted at once so a secret can be rotated.
    pub webhook_secrets: Vec<SecretString>,
    /// Labels that start SOPs.
    pub triggers: Vec<Trigger>,
    /// The bot's login, for `@login command` in comments; its own comments run none.
    pub bot_login: String,
    /// Larger deliveries are refused with 413.
    pub max_body_bytes: usize,
    /// Repositories Gatehouse may act on besides the triggers' (`[github] repositories`).
    pub repositories: Repositories,
}

impl GithubSettings {
    /// The secrets as bytes, for the signature check.
    pub(crate) fn secret_bytes(&self) -> Vec<&[u8]> {
        self.webhook_secrets
            .iter()
            .map(|s| s.expose_secret().as_bytes())
            .collect()
    }
}

/// `[[github.triggers]]`: a label that starts an SOP on issues and pull requests.
#[derive(Clone)]
pub struct Trigger {
    pub label: String,
    /// The SOP it starts.
    pub sop: String,
    /// Removing the label cancels the runs it started.
    pub cancel_on_unlabel: bool,
    /// Pull requests from forks may start it (their runs hold this deployment's
    /// credentials, so this is off unless configured).
    pub allow_forks: bool,
    /// The labelling user must be one of the people known to Gatehouse (issue templates
    /// apply labels for anyone who opens an issue).
    pub require_person: bool,
    /// Who may start it by labelling (people and `group:` entries); anyone when unset.
    pub starters: Option<Vec<String>>,
    /// Started by assigning an issue to the bot, not by `label`; with no `sop`, the
    /// project's `default_sop`.
    pub assigned: bool,
    /// Opens a conversation on the issue (its thread is the comments) instead of
    /// starting `sop`.
    pub conversation: bool,
    repos: Repositories,
}

impl Trigger {
    /// A trigger for repositories matching `repos` (`acme/*`, `acme/app`): at least one,
    /// each with a fixed owner, so what it starts and what reconciliation searches stay
    /// within repositories someone chose.
    pub fn new(
        label: &str,
        sop: &str,
        repos: &[String],
        cancel_on_unlabel: bool,
        allow_forks: bool,
    ) -> Result<Self, RepoPatternError> {
        if repos.is_empty() {
            return Err(RepoPatternError::None);
        }
        Ok(Self {
            label: label.to_owned(),
            sop: sop.to_owned(),
            cancel_on_unlabel,
            allow_forks,
            require_person: false,
            starters: None,
            assigned: false,
            conversation: false,
            repos: Repositories::new(repos)?,
        })
    }

    /// Started by assigning an issue to the bot instead of by its label.
    pub fn on_assignment(mut self, assigned: bool) -> Self {
        self.assigned = assigned;
        self
    }

    /// Opens a conversation on the issue instead of starting an SOP.
    pub fn opening_conversation(mut self, conversation: bool) -> Self {
        self.conversation = conversation;
        self
    }

    /// Only people known to Gatehouse may start it by labelling.
    pub fn requiring_person(mut self, require: bool) -> Self {
        self.require_person = require;
        self
    }

    /// Only these people and groups may start it by labelling.
    pub fn with_starters(mut self, starters: Option<Vec<String>>) -> Self {
        self.starters = starters;
        self
    }

    /// Whether the trigger covers `label` on `repo` (`owner/name`).
    pub fn matches(&self, label: &str, repo: &str) -> bool {
        !self.assigned && self.label == label && self.repos.allows(repo)
    }

    /// Whether the trigger starts on an assignment to the bot in `repo`.
    pub fn matches_assignment(&self, repo: &str) -> bool {
        self.assigned && self.repos.allows(repo)
    }

    pub fn repositories(&self) -> &Repositories {
        &self.repos
    }
}

/// A set of repository patterns (`owner/name`, `owner/*`, `owner/api-*`).
#[derive(Clone, Default)]
pub struct Repositories {
    patterns: Vec<String>,
    /// Empty by default: covers nothing.
    set: GlobSet,
}

/// Why a repository pattern was refused.
#[derive(Debug, thiserror::Error)]
pub enum RepoPatternError {
    /// A trigger with no repositories.
    #[error(
        "no `repos`: write repos = [\"owner/*\"] (or list the repositories, e.g. [\"acme/api\"]) so the label starts runs only there and reconciliation searches only there"
    )]
    None,
    /// Not `owner/name`.
    #[error("`{0}` is not owner/name (a name may be a glob such as `api-*`)")]
    Shape(String),
    /// The owner is a glob, so the search cannot be scoped.
    #[error(
        "`{0}` has a wildcard owner; name the owner (`acme/*`), so GitHub is searched only there"
    )]
    WildOwner(String),
    /// `.` or `..` as a segment.
    #[error("`{0}` has a `.` or `..` segment")]
    DotSegment(String),
    /// The glob does not compile.
    #[error("`{pattern}`: {source}")]
    Glob {
        pattern: String,
        /// Why.
        source: globset::Error,
    },
}

impl Repositories {
    /// The patterns, checked.
    pub fn new(patterns: &[String]) -> Result<Self, RepoPatternError> {
        let mut set = GlobSetBuilder::new();
        for pattern in patterns {
            let (owner, name) = pattern
                .split_once('/')
                .filter(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/'))
                .ok_or_else(|| RepoPatternError::Shape(pattern.clone()))?;
            if [owner, name].iter().any(|s| *s == "." || *s == "..") {
                return Err(RepoPatternError::DotSegment(pattern.clone()));
            }
            if owner.contains(['*', '?', '[', '{']) {
                return Err(RepoPatternError::WildOwner(pattern.clone()));
            }
            // GitHub's names are case-insensitive.
            let glob = globset::GlobBuilder::new(pattern)
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .map_err(|source| RepoPatternError::Glob {
                    pattern: pattern.clone(),
                    source,
                })?;
            set.add(glob);
        }
        let set = set.build().map_err(|source| RepoPatternError::Glob {
            pattern: patterns.join(", "),
            source,
        })?;
        Ok(Self {
            patterns: patterns.to_vec(),
            set,
        })
    }

    /// Whether `repo` (`owner/name`) is covered; never a name with a `.` or `..` segment.
    pub fn allows(&self, repo: &str) -> bool {
        is_repo_name(repo) && self.set.is_match(repo)
    }

    /// GitHub search qualifiers that cover these repositories and no others' owners:
    /// `repo:owner/name` for an exact name, `user:owner` for a glob (the results are
    /// filtered by the glob afterwards).
    pub fn search_qualifiers(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .patterns
            .iter()
            .filter_map(|p| {
                let (owner, name) = p.split_once('/')?;
                Some(if name.contains(['*', '?', '[', '{']) {
                    format!("user:{owner}")
                } else {
                    format!("repo:{p}")
                })
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

impl GithubSettings {
    /// Whether a comment by `login` with `body` is Gatehouse's own: written by `bot_login`
    /// (or, for a GitHub App, `bot_login[bot]`), or ending with the marker every comment
    /// Gatehouse posts carries, whichever account posted it. Its commands are never run:
    /// what Gatehouse writes quotes people and agents.
    pub(crate) fn is_own_comment(&self, login: &str, body: &str) -> bool {
        let bot = self.bot_login.as_str();
        login.eq_ignore_ascii_case(bot)
            || login
                .strip_suffix("[bot]")
                .is_some_and(|app| app.eq_ignore_ascii_case(bot))
            || gatehouse_github::is_gatehouse_comment(body)
    }

    /// Whether Gatehouse acts on `repo`: a trigger or `[github] repositories` names it.
    pub fn allows_repo(&self, repo: &str) -> bool {
        self.repositories.allows(repo) || self.triggers.iter().any(|t| t.repos.allows(repo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_globs() {
        let t = Trigger::new("sop:fix", "fix", &["acme/*".into()], false, false).unwrap();
        assert!(t.matches("sop:fix", "acme/app"));
        assert!(!t.matches("sop:fix", "other/app"));
        assert!(!t.matches("sop:other", "acme/app"));
        assert!(
            t.matches("sop:fix", "ACME/App"),
            "names are case-insensitive"
        );
        assert!(!t.matches("sop:fix", "acme/.."));
        assert!(!t.matches("sop:fix", "acme/app/x"));
        let refused = |repos: &[&str]| {
            let repos: Vec<String> = repos.iter().map(|r| r.to_string()).collect();
            Trigger::new("l", "s", &repos, false, false)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(refused(&[]).starts_with("no `repos`: write repos = [\"owner/*\"]"));
        assert!(refused(&["acme/["]).starts_with("`acme/[`:"));
        assert_eq!(
            refused(&["*/app"]),
            "`*/app` has a wildcard owner; name the owner (`acme/*`), so GitHub is searched only there"
        );
        assert_eq!(refused(&["acme/.."]), "`acme/..` has a `.` or `..` segment");
        assert_eq!(
            refused(&["acme"]),
            "`acme` is not owner/name (a name may be a glob such as `api-*`)"
        );
    }

    #[test]
    fn reconciliation_searches_only_the_configured_owners() {
        let repos =
            Repositories::new(&["acme/*".into(), "acme/api".into(), "beta/web".into()]).unwrap();
        assert_eq!(
            repos.search_qualifiers(),
            ["repo:acme/api", "repo:beta/web", "user:acme"]
        );
    }
}
