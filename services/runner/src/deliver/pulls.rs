//! Pull requests, one per delivered repository, and how commits and pull requests name
//! what they deliver. Every work branch is pushed first, then every pull request opened
//! (or updated: one per work branch); when a delivery opens several, each body is then
//! updated to link the others, so a reviewer of one finds the rest. The issue is closed by
//! the pull request in its own repository only ("Closes #N"); the others name it.

use gatehouse_github::NewPull;

use super::branch::Repo;
use super::{Delivered, DeliveredTo, Deliverer, Delivery, Subject};

/// The subject and body of the commit delivering `repo`.
pub(crate) fn commit_message(subject: &Subject<'_>, repo: &str) -> (String, String) {
    let title = match subject.issue {
        Some((issue_repo, number)) if issue_repo == repo => {
            format!("{} (#{number})", subject.title)
        }
        Some((issue_repo, number)) => format!("{} ({issue_repo}#{number})", subject.title),
        None => subject.title.to_owned(),
    };
    (
        title,
        format!(
            "Delivered by Gatehouse {} {}.",
            subject.by.kind(),
            subject.by.id()
        ),
    )
}

/// The body of `repo`'s pull request; `others` are the delivery's other pull requests
/// (`owner/name#N`).
pub(crate) fn body(subject: &Subject<'_>, repo: &str, others: &[String]) -> String {
    let mut body = match subject.issue {
        Some((issue_repo, number)) if issue_repo == repo => format!("Closes #{number}\n\n"),
        Some((issue_repo, number)) => format!("Part of {issue_repo}#{number}\n\n"),
        None => String::new(),
    };
    body.push_str(&format!(
        "Requirement: {}\n\nDelivered by Gatehouse {} `{}`.",
        subject.title,
        subject.by.kind(),
        subject.by.id()
    ));
    if !others.is_empty() {
        body.push_str("\n\nDelivered together with:\n");
        for other in others {
            body.push_str(&format!("- {other}\n"));
        }
    }
    body
}

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
        let to = if branch == base {
            DeliveredTo::Pushed {
                branch: branch.to_owned(),
            }
        } else {
            let text = body(subject, name, &[]);
            let wanted = NewPull {
                head: branch,
                base,
                title: subject.title,
                body: &text,
                draft: delivery.draft,
            };
            let pull = deliverer
                .github
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
            }
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
            deliverer
                .github
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_is_closed_in_its_own_repository_and_named_in_the_others() {
        let subject = Subject {
            by: crate::deliver::By::Run(uuid::Uuid::nil()),
            title: "Fix the checkout",
            issue: Some(("acme/api", 7)),
        };
        let own = body(&subject, "acme/api", &["acme/web#3".into()]);
        assert!(
            own.starts_with("Closes #7\n\nRequirement: Fix the checkout\n"),
            "{own}"
        );
        assert!(
            own.ends_with("Delivered together with:\n- acme/web#3\n"),
            "{own}"
        );
        let other = body(&subject, "acme/web", &[]);
        assert!(
            other.starts_with("Part of acme/api#7\n\nRequirement: Fix the checkout"),
            "{other}"
        );
        assert!(!other.contains("Closes"), "{other}");
        assert_eq!(
            commit_message(&subject, "acme/api").0,
            "Fix the checkout (#7)"
        );
        assert_eq!(
            commit_message(&subject, "acme/web").0,
            "Fix the checkout (acme/api#7)"
        );
    }
}
