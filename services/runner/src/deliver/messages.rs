//! What a delivery says: the message of the commit delivering a repository and the body
//! of its pull request. The issue is closed by the pull request in its own repository
//! only ("Closes #N"); the others name it.

use super::Subject;

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
