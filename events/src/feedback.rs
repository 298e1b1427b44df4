//! What a pull request Gatehouse opened asks for after delivery: a reviewer's changes, a
//! failing check, a conflict with its base. Ingest turns a GitHub event into a
//! [`Feedback`]; the scheduler sends an SOP run back with it (`on_review`,
//! `on_checks_failed`, `on_conflict` on the deliver node) or makes it a turn of the
//! conversation that delivered; the runner pushes the work to the same branch and answers
//! on the pull request.

use serde::{Deserialize, Serialize};

/// A pull request, as the place work is pushed to and answered on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PullRef {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
}

impl std::fmt::Display for PullRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.repo, self.number)
    }
}

/// What kind of feedback: which of the deliver node's rules it falls under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackKind {
    /// A review with changes requested, or a comment that mentions the bot (`on_review`).
    Review,
    /// A check suite or workflow run failed on the pull request's head
    /// (`on_checks_failed`).
    ChecksFailed,
    /// The pull request no longer merges cleanly into its base (`on_conflict`).
    Conflict,
}

impl FeedbackKind {
    /// The deliver node's rule for this kind, as the SOP names it.
    pub fn rule(self) -> &'static str {
        match self {
            Self::Review => "on_review",
            Self::ChecksFailed => "on_checks_failed",
            Self::Conflict => "on_conflict",
        }
    }
}

impl FeedbackKind {
    /// What whoever redoes the work is asked to do about this kind, after the feedback's
    /// text: the same words for an SOP run's rework and a conversation's turn.
    pub fn instruction(self) -> &'static str {
        match self {
            Self::Review => "Make the changes asked for.",
            Self::ChecksFailed => {
                "Fix the cause of the failure. Never skip, delete or weaken tests to make the \
                 checks pass."
            }
            Self::Conflict => {
                "Bring the base branch's changes into the work, resolve each conflict keeping \
                 what both sides meant, and make sure the tests still pass."
            }
        }
    }
}

impl std::fmt::Display for FeedbackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Review => "review",
            Self::ChecksFailed => "failing checks",
            Self::Conflict => "conflict",
        })
    }
}

/// One piece of feedback on a pull request, as work for whoever delivered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    pub kind: FeedbackKind,
    /// Names this piece of feedback (`review:123`, `checks:<sha>`, `conflict:<base sha>`):
    /// the same key again, under another delivery, changes nothing.
    pub key: String,
    /// The details, without a header ([`Feedback::prompt`] adds it): the reviewer's
    /// comments with file and line, the failing jobs with the tail of their logs, or the
    /// base that moved with how to rebase onto it. Written by people or CI; untrusted,
    /// bounded.
    pub text: String,
    /// The pull request it came from, where the work is pushed and answered.
    pub pull: PullRef,
    /// The GitHub login the answer is addressed to (the reviewer; empty for checks).
    #[serde(default)]
    pub from: String,
    /// The review comment whose thread the answer goes in (a line comment that asked);
    /// `None`: the answer is a comment on the pull request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<u64>,
}

impl Feedback {
    /// How this feedback is named wherever it is shown or handed on (a conversation's
    /// thread, the header of [`Feedback::prompt`]): `Review of acme/api#7 by @alice`,
    /// `Failing checks on acme/api#7`, `Conflict on acme/api#7`.
    pub fn label(&self) -> String {
        let pull = &self.pull;
        match self.kind {
            FeedbackKind::Review if self.from.is_empty() => format!("Review of {pull}"),
            FeedbackKind::Review => format!("Review of {pull} by @{}", self.from),
            FeedbackKind::ChecksFailed => format!("Failing checks on {pull}"),
            FeedbackKind::Conflict => format!("Conflict on {pull}"),
        }
    }

    /// What whoever redoes the work is given, in one wording for an SOP run's rework
    /// comment and a conversation's turn: the label as a header, the details as they came
    /// (people's or CI's words), and what to do about them.
    pub fn prompt(&self) -> String {
        let details = self.text.trim();
        let details = if details.is_empty() {
            "(no details were given)"
        } else {
            details
        };
        format!(
            "{}:\n\n{details}\n\n{}",
            self.label(),
            self.kind.instruction()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feedback(kind: FeedbackKind, from: &str, text: &str) -> Feedback {
        Feedback {
            kind,
            key: "k".into(),
            text: text.into(),
            pull: PullRef {
                repo: "acme/api".into(),
                number: 7,
            },
            from: from.into(),
            thread: None,
        }
    }

    #[test]
    fn labels_name_the_kind_the_pull_request_and_the_reviewer() {
        let label = |kind, from| feedback(kind, from, "").label();
        assert_eq!(
            label(FeedbackKind::Review, "alice"),
            "Review of acme/api#7 by @alice"
        );
        assert_eq!(label(FeedbackKind::Review, ""), "Review of acme/api#7");
        assert_eq!(
            label(FeedbackKind::ChecksFailed, ""),
            "Failing checks on acme/api#7"
        );
        assert_eq!(label(FeedbackKind::Conflict, ""), "Conflict on acme/api#7");
    }

    #[test]
    fn a_prompt_is_the_label_the_details_and_what_to_do() {
        let review = feedback(
            FeedbackKind::Review,
            "alice",
            "https://github.com/acme/api/pull/7#pullrequestreview-1\n\n> rename `x`\n",
        );
        assert_eq!(
            review.prompt(),
            "Review of acme/api#7 by @alice:\n\n\
             https://github.com/acme/api/pull/7#pullrequestreview-1\n\n> rename `x`\n\n\
             Make the changes asked for."
        );
        assert!(!review.prompt().contains("tests"));
    }

    #[test]
    fn failing_checks_are_fixed_at_their_cause_never_by_weakening_tests() {
        let checks = feedback(FeedbackKind::ChecksFailed, "", "### test (failure)\n");
        assert_eq!(
            checks.prompt(),
            "Failing checks on acme/api#7:\n\n### test (failure)\n\n\
             Fix the cause of the failure. Never skip, delete or weaken tests to make the \
             checks pass."
        );
    }

    #[test]
    fn feedback_without_details_still_says_what_to_do() {
        let conflict = feedback(FeedbackKind::Conflict, "", "  \n");
        assert_eq!(
            conflict.prompt(),
            "Conflict on acme/api#7:\n\n(no details were given)\n\n\
             Bring the base branch's changes into the work, resolve each conflict keeping \
             what both sides meant, and make sure the tests still pass."
        );
    }
}
