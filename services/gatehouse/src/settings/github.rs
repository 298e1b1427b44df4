//! `[github]` turned into what ingest, the runner and the notifier use.

use anyhow::Context;
use gatehouse_github::GithubClient;
use gatehouse_ingest::{GithubSettings, Repositories, Trigger};

use crate::config::{GithubConfig, GithubTrigger};

/// Ingest's webhook settings: secrets read, triggers and repository globs compiled. The
/// repositories of `projects` are reached as those of `[github] repositories` are.
pub fn ingest(
    github: &GithubConfig,
    projects: &[gatehouse_project::ProjectConfig],
) -> anyhow::Result<GithubSettings> {
    let webhook_secrets = github
        .webhook_secrets
        .iter()
        .map(|s| s.resolve().context("github.webhook_secrets"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if webhook_secrets.is_empty() {
        tracing::warn!("[github] has no webhook_secrets: every delivery will be refused with 401");
    }
    let triggers = github
        .triggers
        .iter()
        .map(|t| {
            t.to_trigger()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("github.triggers ({})", t.describe()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(GithubSettings {
        webhook_secrets,
        triggers,
        bot_login: github.bot_login.clone(),
        max_body_bytes: github.max_body_bytes,
        repositories: Repositories::new(&reached(github, projects))
            .context("github.repositories")?,
    })
}

/// `[github] repositories` and every repository on GitHub a project lists.
fn reached(github: &GithubConfig, projects: &[gatehouse_project::ProjectConfig]) -> Vec<String> {
    let listed = projects
        .iter()
        .flat_map(|p| p.repositories.iter().filter(|r| r.on_github()))
        .map(|r| r.repo.clone());
    github.repositories.iter().cloned().chain(listed).collect()
}

/// The client `[github]` asks for: a token, or a GitHub App (`app_id` + `private_key`);
/// none without either.
pub fn client(github: &GithubConfig) -> anyhow::Result<Option<GithubClient>> {
    if let Some(token) = &github.token {
        let token = token.resolve().context("github.token")?;
        return Ok(Some(
            GithubClient::new(&github.api_url, token).context("github.api_url")?,
        ));
    }
    match (github.app_id, &github.private_key) {
        (Some(app_id), Some(key)) => {
            let key = key.resolve().context("github.private_key")?;
            Ok(Some(GithubClient::app(&github.api_url, app_id, &key)?))
        }
        _ => Ok(None),
    }
}

impl GithubTrigger {
    /// The trigger in an error message: `label `ship``, or `assigned`.
    pub fn describe(&self) -> String {
        if self.assigned {
            "assigned".into()
        } else {
            format!("label `{}`", self.label)
        }
    }

    /// The trigger as ingest acts on it; the error says what to fix. Loading the
    /// configuration checks it, starting ingest builds it: one conversion for both.
    pub fn to_trigger(&self) -> Result<Trigger, String> {
        for entry in self.starters.iter().flatten() {
            gatehouse_sop::check_person_or_group(entry).map_err(|e| format!("starters: {e}"))?;
        }
        match (self.assigned, self.label.is_empty(), self.sop.is_empty()) {
            (true, false, _) => {
                return Err("give either `label` or `assigned = true`, not both".into());
            }
            (false, true, _) => {
                return Err("no `label`: name the label that starts the SOP, or write `assigned = true` to start it when an issue is assigned to the bot".into());
            }
            (_, _, false) if self.conversation => {
                return Err("give either `sop` or `conversation = true`, not both: the trigger starts an SOP run or opens a conversation".into());
            }
            (false, false, true) if !self.conversation => {
                return Err("no `sop`: name the SOP the label starts, or write `conversation = true` to open a conversation on the issue".into());
            }
            _ => {}
        }
        let trigger = Trigger::new(
            &self.label,
            &self.sop,
            &self.repos,
            self.cancel_on_unlabel,
            self.allow_forks,
        )
        .map_err(|e| e.to_string())?
        .on_assignment(self.assigned)
        .opening_conversation(self.conversation);
        Ok(trigger
            .requiring_person(self.require_person)
            .with_starters(self.starters.clone()))
    }
}
