//! Pull requests, one per delivered repository. Every work branch is pushed first, then every pull request opened
//! (or updated: one per work branch) — on GitHub, or as a merge request (GitLab) or pull
//! request (Gitea) on the repository's forge; a repository on a git remote alone has its
//! branch pushed and recorded, for someone to merge there; when a delivery opens several, each body is then
//! updated to link the others, so a reviewer of one finds the rest; what they say is
//! [`super::messages`].

use gatehouse_forges::NewRequest;
use gatehouse_github::NewPull;
use gatehouse_project::remote::shown;

use super::branch::Repo;
use super::messages::body;
use super::{Delivered, DeliveredTo, Deliverer, Delivery, Host};

/// Pushes each repository's work branch, then opens or updates its pull request (none
/// when the work branch is the base itself), and links them to each other.
pub(super) async fn push_and_open(
    deliverer: &Deliverer,
    delivery: &Delivery<'_>,
    repos: &mut [&mut Repo<'_>],
) -> Result<Vec<Delivered>, String> {
    let mut pushed: Vec<String> = Vec::new();
    for repo in repos.iter_mut() {
        repo.push_branch()
            .await
            .map_err(|reason| with_done(reason, "pushed already", &pushed))?;
        pushed.push(repo.checkout.repo.clone());
    }
    let subject = &delivery.subject;
    let mut delivered = Vec::new();
    for repo in repos.iter() {
        let (name, branch, base) = (&repo.checkout.repo, repo.branch(), repo.base());
        let head = repo.commit.clone().unwrap_or_default();
        let text = || body(subject, name, &[]);
        let to = match &repo.remote.host {
            _ if branch == base => DeliveredTo::Pushed {
                branch: branch.to_owned(),
            },
            Host::Github(github) => {
                let text = text();
                let wanted = NewPull {
                    head: branch,
                    base,
                    title: subject.title,
                    body: &text,
                    draft: delivery.draft,
                };
                let pull = github
                    .open_or_update_pull_request(name, &wanted)
                    .await
                    .map_err(|e| {
                        format!(
                            "opening the pull request on {name}: {e} (the work branches are pushed)"
                        )
                    })?;
                DeliveredTo::Pull {
                    number: pull.number,
                    branch: branch.to_owned(),
                    url: pull.url,
                    draft: pull.draft,
                    opened: pull.opened,
                    head,
                }
            }
            Host::Forge {
                name: forge,
                access,
                path,
            } => {
                let text = text();
                let wanted = NewRequest {
                    head: branch,
                    base,
                    title: subject.title,
                    body: &text,
                    draft: delivery.draft,
                };
                let request = access
                    .api
                    .open_or_update(path, &wanted)
                    .await
                    .map_err(|e| {
                        format!(
                            "opening the {} on {name}: {e} (the work branches are pushed)",
                            access.api.request_noun()
                        )
                    })?;
                DeliveredTo::Request {
                    forge: (*forge).to_owned(),
                    number: request.number,
                    branch: branch.to_owned(),
                    url: request.url,
                    opened: request.opened,
                    head,
                    remote: shown(&repo.remote.url),
                }
            }
            Host::Plain => DeliveredTo::PushedBranch {
                branch: branch.to_owned(),
                commit: head,
                url: shown(&repo.remote.url),
            },
        };
        delivered.push((
            Delivered {
                repo: name.clone(),
                to,
            },
            branch,
            base,
        ));
    }
    let pulls: Vec<String> = delivered
        .iter()
        .filter_map(|(d, _, _)| match d.to {
            DeliveredTo::Pull { number, .. } => Some(format!("{}#{number}", d.repo)),
            _ => None,
        })
        .collect();
    if pulls.len() > 1 {
        for (d, branch, base) in &delivered {
            let DeliveredTo::Pull { number, .. } = d.to else {
                continue;
            };
            let own = format!("{}#{number}", d.repo);
            let others: Vec<String> = pulls.iter().filter(|p| **p != own).cloned().collect();
            let text = body(subject, &d.repo, &others);
            let Some(github) = &deliverer.github else {
                continue;
            };
            github
                .open_or_update_pull(&d.repo, branch, base, subject.title, &text)
                .await
                .map_err(|e| format!("linking the pull request {own} to the others: {e}"))?;
        }
    }
    Ok(delivered.into_iter().map(|(d, _, _)| d).collect())
}

/// `reason`, saying which repositories were already `what` when it happened.
pub(super) fn with_done(reason: String, what: &str, done: &[String]) -> String {
    if done.is_empty() {
        reason
    } else {
        format!("{reason} ({what}: {})", done.join(", "))
    }
}
