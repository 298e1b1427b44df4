//! The repositories that are not on GitHub turned into what the runner reaches them with:
//! each own remote's credential, each `[forges.NAME]`'s client; and what a start refuses
//! about where the projects' repositories are.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context;
use gatehouse_forges::{Forge, ForgeKind};
use gatehouse_github::GithubClient;
use gatehouse_runner::{Credential, Deliverer, ForgeAccess, Mirrors, Remotes};

use crate::config::Config;
use crate::secret::Secret;

/// Every problem with where the projects' repositories are, one per line: a repository on
/// GitHub with no `[github]` to reach it, a forge that is not configured (or a path it
/// cannot hold), one remote given two credentials.
pub fn refusals(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    type Given<'a> = (&'a Option<Secret>, &'a Option<Secret>);
    let mut credentials: BTreeMap<&str, (String, Given<'_>)> = BTreeMap::new();
    for project in &config.projects {
        for repository in &project.repositories {
            let at = format!("project `{}`: {}", project.name, repository.repo);
            if repository.on_github() {
                let lacking = match &config.github {
                    None => Some("there is no [github]"),
                    Some(g) if g.token.is_none() && g.app_id.is_none() => {
                        Some("[github] has no `token` or app to clone it with")
                    }
                    Some(_) => None,
                };
                if let Some(lacking) = lacking {
                    problems.push(format!(
                        "{at} is on GitHub (it names no `url` or `forge`), but {lacking}: give it its own `url = \"…\"` (file://, https:// or ssh://, any git remote), or configure [github] with a `token` or an app"
                    ));
                }
            }
            if let Some(name) = &repository.forge {
                match config.forges.get(name) {
                    None => problems.push(format!(
                        "{at} names the forge `{name}`, but there is no [forges.{name}]; {}",
                        known(config)
                    )),
                    Some(forge) if forge.kind == ForgeKind::Gitea => {
                        let path = repository.forge_path();
                        if path.split('/').count() != 2 {
                            problems.push(format!(
                                "{at}: `{path}` is no path on the Gitea forge `{name}`, whose repositories are owner/name"
                            ));
                        }
                    }
                    Some(_) => {}
                }
            }
            if let Some(url) = &repository.url {
                let said = (&repository.token, &repository.deploy_key);
                match credentials.get(url.as_str()) {
                    Some((other, before)) if *before != said => problems.push(format!(
                        "{at}: `{url}` is {other}'s remote too, with another credential; give the one remote one credential"
                    )),
                    Some(_) => {}
                    None => {
                        credentials.insert(url, (at.clone(), said));
                    }
                }
            }
        }
    }
    problems
}

/// The forges, for messages.
fn known(config: &Config) -> String {
    if config.forges.is_empty() {
        return "no forges are configured".into();
    }
    let names: Vec<&str> = config.forges.keys().map(String::as_str).collect();
    format!("the forges are {}", names.join(", "))
}

/// What the runner reaches the repositories that are not on GitHub with: the secrets
/// read, the forges' clients built.
pub fn remotes(config: &Config) -> anyhow::Result<Remotes> {
    let mut remotes = Remotes::default();
    for (name, forge) in &config.forges {
        let token = forge
            .token
            .resolve()
            .with_context(|| format!("forges.{name}.token"))?;
        let api = Forge::new(forge.kind, &forge.api_url, token.clone())
            .with_context(|| format!("forges.{name}"))?;
        let git_url = if forge.git_url.is_empty() {
            api.derived_git_url()
        } else {
            forge.git_url.trim_end_matches('/').to_owned()
        };
        remotes.forges.insert(
            name.clone(),
            ForgeAccess {
                api,
                git_url,
                token,
            },
        );
    }
    for project in &config.projects {
        for repository in &project.repositories {
            let Some(url) = &repository.url else {
                continue;
            };
            let at = |key: &str| {
                format!(
                    "projects.{}.repositories.{}.{key}",
                    project.name, repository.repo
                )
            };
            let credential = match (&repository.token, &repository.deploy_key) {
                (Some(token), _) => {
                    Credential::Token(token.resolve().with_context(|| at("token"))?)
                }
                (None, Some(key)) => Credential::DeployKey {
                    key: key.resolve().with_context(|| at("deploy_key"))?,
                    known_hosts: repository.known_hosts.clone(),
                },
                (None, None) => continue,
            };
            remotes.credentials.insert(url.clone(), credential);
        }
    }
    Ok(remotes)
}

/// What the runner clones and delivers with: GitHub when a client is configured, the
/// projects' own remotes and forges besides; `None` when it can reach no repository.
pub fn deliverer(
    config: &Config,
    github: Option<&GithubClient>,
) -> anyhow::Result<Option<Arc<Deliverer>>> {
    let remotes = remotes(config)?;
    let elsewhere = config
        .projects
        .iter()
        .flat_map(|p| &p.repositories)
        .any(|r| !r.on_github());
    let github = config.github.as_ref().zip(github);
    if github.is_none() && !elsewhere {
        return Ok(None);
    }
    let (author_name, author_email) = match &config.github {
        Some(g) => (g.commit_author.clone(), g.commit_email.clone()),
        None => ("Gatehouse".to_owned(), "gatehouse@localhost".to_owned()),
    };
    Ok(Some(Arc::new(Deliverer {
        github: github.map(|(_, client)| client.clone()),
        git_url: github
            .map(|(settings, _)| settings.git_base())
            .unwrap_or_default(),
        remotes,
        author_name,
        author_email,
        mirrors: match config.storage.mirror_limit.as_u64() {
            0 => None,
            limit => Some(Mirrors::new(config.server.data_dir.join("mirrors"), limit)),
        },
    })))
}

#[cfg(test)]
mod tests;
