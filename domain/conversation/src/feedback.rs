//! A pull request's feedback as a turn: what the thread is told about it, and the text
//! the CLI is given. The feedback's own text was written by a reviewer or by CI, so the
//! prompt frames it as theirs and says what Gatehouse does with the work afterwards.

use gatehouse_events::{Feedback, FeedbackKind};

/// How the thread names a piece of feedback: `Review of acme/api#7 by @alice`,
/// `Failing checks on acme/api#7`, `Conflict on acme/api#7`.
pub(crate) fn label(feedback: &Feedback) -> String {
    let pull = &feedback.pull;
    match feedback.kind {
        FeedbackKind::Review if feedback.from.is_empty() => format!("Review of {pull}"),
        FeedbackKind::Review => format!("Review of {pull} by @{}", feedback.from),
        FeedbackKind::ChecksFailed => format!("Failing checks on {pull}"),
        FeedbackKind::Conflict => format!("Conflict on {pull}"),
    }
}

/// The turn's text for the CLI: a header naming the kind, the pull request and who asked,
/// the feedback as it came, and what to do with it.
pub(crate) fn prompt(feedback: &Feedback) -> String {
    let pull = &feedback.pull;
    let header = match feedback.kind {
        FeedbackKind::Review if feedback.from.is_empty() => {
            format!("A review of pull request {pull} asks for changes:")
        }
        FeedbackKind::Review => format!(
            "@{} reviewed pull request {pull} and asks for changes:",
            feedback.from
        ),
        FeedbackKind::ChecksFailed => format!("Checks failed on pull request {pull}:"),
        FeedbackKind::Conflict => {
            format!("Pull request {pull} no longer merges cleanly into its base branch:")
        }
    };
    let task = match feedback.kind {
        FeedbackKind::Review => "Make the changes asked for in the workspace.",
        FeedbackKind::ChecksFailed => {
            "Fix the cause of the failure in the workspace. Never skip, delete or weaken \
             tests to make the checks pass."
        }
        FeedbackKind::Conflict => {
            "Bring the base branch's changes into the work and resolve the conflicts in the \
             workspace, keeping what both sides meant."
        }
    };
    let body = feedback.text.trim();
    let body = if body.is_empty() {
        "(no details were given)"
    } else {
        body
    };
    format!(
        "{header}\n\n{body}\n\n{task} When you reply, Gatehouse pushes the workspace to the \
         pull request's branch and answers on {pull} with your reply; say briefly what you \
         changed."
    )
}

#[cfg(test)]
mod tests {
    use gatehouse_events::PullRef;

    use super::*;

    fn feedback(kind: FeedbackKind, from: &str) -> Feedback {
        Feedback {
            kind,
            key: "review:1".into(),
            text: "src/lib.rs:12: rename `x` to `count`\n".into(),
            pull: PullRef {
                repo: "acme/api".into(),
                number: 7,
            },
            from: from.into(),
        }
    }

    #[test]
    fn labels_name_the_kind_the_pull_request_and_the_reviewer() {
        let review = feedback(FeedbackKind::Review, "alice");
        assert_eq!(label(&review), "Review of acme/api#7 by @alice");
        let anonymous = feedback(FeedbackKind::Review, "");
        assert_eq!(label(&anonymous), "Review of acme/api#7");
        let checks = feedback(FeedbackKind::ChecksFailed, "");
        assert_eq!(label(&checks), "Failing checks on acme/api#7");
        let conflict = feedback(FeedbackKind::Conflict, "");
        assert_eq!(label(&conflict), "Conflict on acme/api#7");
    }

    #[test]
    fn a_review_prompt_quotes_the_comments_under_a_header() {
        let text = prompt(&feedback(FeedbackKind::Review, "alice"));
        assert!(
            text.starts_with(
                "@alice reviewed pull request acme/api#7 and asks for changes:\n\n\
                 src/lib.rs:12: rename `x` to `count`\n\nMake the changes asked for"
            ),
            "{text}"
        );
        assert!(!text.contains("tests"), "{text}");
    }

    #[test]
    fn failing_checks_are_fixed_at_their_cause_never_by_weakening_tests() {
        let text = prompt(&feedback(FeedbackKind::ChecksFailed, ""));
        assert!(
            text.starts_with("Checks failed on pull request acme/api#7:\n\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "Fix the cause of the failure in the workspace. Never skip, delete or weaken \
                 tests to make the checks pass."
            ),
            "{text}"
        );
    }

    #[test]
    fn feedback_without_details_still_says_what_to_do() {
        let mut empty = feedback(FeedbackKind::Conflict, "");
        empty.text = "  \n".into();
        let text = prompt(&empty);
        assert!(
            text.starts_with(
                "Pull request acme/api#7 no longer merges cleanly into its base branch:\n\n\
                 (no details were given)\n\nBring the base branch's changes"
            ),
            "{text}"
        );
    }
}
