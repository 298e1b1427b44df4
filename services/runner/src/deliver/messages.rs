//! What a delivery says: the message of the commit delivering a repository and the body
//! of its pull request. The issue is closed by the pull request in its own repository
//! only ("Closes #N"); the others name it. A delivery answering feedback says what it
//! answers instead ("Address review by @alice on #7").

use gatehouse_events::{Feedback, FeedbackKind};

use super::Subject;

/// The subject and body of the commit delivering `repo`; `answer`: the feedback the
/// delivery answers.
pub(crate) fn commit_message(
    subject: &Subject<'_>,
    repo: &str,
    answer: Option<&Feedback>,
) -> (String, String) {
    let title = match (answer, subject.issue) {
        (Some(feedback), _) => answering(feedback, repo),
        (None, issue) => titled(subject, issue, repo),
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

/// `Address review by @alice on #7`, `Fix failing checks on acme/api#7`, `Resolve
/// conflict on #7`: the pull request by number alone in its own repository.
fn answering(feedback: &Feedback, repo: &str) -> String {
    let pull = if feedback.pull.repo == repo {
        format!("#{}", feedback.pull.number)
    } else {
        feedback.pull.to_string()
    };
    match feedback.kind {
        FeedbackKind::Review if feedback.from.is_empty() => format!("Address review on {pull}"),
        FeedbackKind::Review => format!("Address review by @{} on {pull}", feedback.from),
        FeedbackKind::ChecksFailed => format!("Fix failing checks on {pull}"),
        FeedbackKind::Conflict => format!("Resolve conflict on {pull}"),
    }
}

/// The requirement's title, naming its issue.
fn titled(subject: &Subject<'_>, issue: Option<(&str, u64)>, repo: &str) -> String {
    match issue {
        Some((issue_repo, number)) if issue_repo == repo => {
            format!("{} (#{number})", subject.title)
        }
        Some((issue_repo, number)) => format!("{} ({issue_repo}#{number})", subject.title),
        None => subject.title.to_owned(),
    }
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
            commit_message(&subject, "acme/api", None).0,
            "Fix the checkout (#7)"
        );
        assert_eq!(
            commit_message(&subject, "acme/web", None).0,
            "Fix the checkout (acme/api#7)"
        );
    }

    #[test]
    fn a_commit_answering_feedback_says_what_it_answers() {
        let subject = Subject {
            by: crate::deliver::By::Conversation(uuid::Uuid::nil()),
            title: "Fix the checkout",
            issue: Some(("acme/api", 1)),
        };
        let mut feedback = Feedback {
            kind: FeedbackKind::Review,
            key: "review:1".into(),
            text: "rename it".into(),
            pull: gatehouse_events::PullRef {
                repo: "acme/api".into(),
                number: 7,
            },
            from: "alice".into(),
            thread: None,
        };
        let (title, body) = commit_message(&subject, "acme/api", Some(&feedback));
        assert_eq!(title, "Address review by @alice on #7");
        assert!(
            body.starts_with("Delivered by Gatehouse conversation "),
            "{body}"
        );
        assert_eq!(
            commit_message(&subject, "acme/web", Some(&feedback)).0,
            "Address review by @alice on acme/api#7"
        );
        feedback.kind = FeedbackKind::ChecksFailed;
        assert_eq!(
            commit_message(&subject, "acme/api", Some(&feedback)).0,
            "Fix failing checks on #7"
        );
        feedback.kind = FeedbackKind::Conflict;
        assert_eq!(
            commit_message(&subject, "acme/api", Some(&feedback)).0,
            "Resolve conflict on #7"
        );
    }
}
