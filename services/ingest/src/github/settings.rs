//! The `[github]` settings ingest acts on.

use globset::{Glob, GlobSet, GlobSetBuilder};
use secrecy::{ExposeSecret, SecretString};

/// What ingest needs from `[github]`.
pub struct GithubSettings {
    /// Webhook secrets; several are accepted at once so a secret can be rotated.
    pub webhook_secrets: Vec<SecretString>,
    /// Labels that start SOPs.
    pub triggers: Vec<Trigger>,
    /// The bot's login, for `@login command` in comments.
    pub bot_login: String,
    /// Larger deliveries are refused with 413.
    pub max_body_bytes: usize,
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
    /// The label.
    pub label: String,
    /// The SOP it starts.
    pub sop: String,
    /// Removing the label cancels the runs it started.
    pub cancel_on_unlabel: bool,
    /// Pull requests from forks may start it (their runs hold this deployment's
    /// credentials, so this is off unless configured).
    pub allow_forks: bool,
    repos: Option<GlobSet>,
}

impl Trigger {
    /// A trigger for repositories matching `repos` (`acme/*`); none means every one.
    pub fn new(
        label: &str,
        sop: &str,
        repos: &[String],
        cancel_on_unlabel: bool,
        allow_forks: bool,
    ) -> Result<Self, globset::Error> {
        let repos = if repos.is_empty() {
            None
        } else {
            let mut set = GlobSetBuilder::new();
            for pattern in repos {
                set.add(Glob::new(pattern)?);
            }
            Some(set.build()?)
        };
        Ok(Self {
            label: label.to_owned(),
            sop: sop.to_owned(),
            cancel_on_unlabel,
            allow_forks,
            repos,
        })
    }

    /// Whether the trigger covers `label` on `repo` (`owner/name`).
    pub fn matches(&self, label: &str, repo: &str) -> bool {
        self.label == label && self.repos.as_ref().is_none_or(|set| set.is_match(repo))
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
        let any = Trigger::new("sop:fix", "fix", &[], false, false).unwrap();
        assert!(any.matches("sop:fix", "whoever/whatever"));
        assert!(Trigger::new("l", "s", &["acme/[".into()], false, false).is_err());
    }
}
