//! A pull request's feedback as a turn: the text the CLI is given. The feedback is worded
//! as everywhere ([`Feedback::prompt`]); the turn adds what Gatehouse does with the work
//! once the CLI replies.

use gatehouse_events::Feedback;

/// The turn's text for the CLI: the feedback's prompt, then that the reply is pushed and
/// answered on the pull request.
pub(crate) fn prompt(feedback: &Feedback) -> String {
    format!(
        "{} When you reply, Gatehouse pushes the workspace to the pull request's branch and \
         answers on {} with your reply; say briefly what you changed.",
        feedback.prompt(),
        feedback.pull
    )
}

#[cfg(test)]
mod tests {
    use gatehouse_events::{FeedbackKind, PullRef};

    use super::*;

    #[test]
    fn the_turn_says_what_happens_to_the_reply_after_the_feedback() {
        let feedback = Feedback {
            kind: FeedbackKind::Review,
            key: "review:1".into(),
            text: "> rename `x` to `count`\n".into(),
            pull: PullRef {
                repo: "acme/api".into(),
                number: 7,
            },
            from: "alice".into(),
            thread: None,
        };
        assert_eq!(
            prompt(&feedback),
            "Review of acme/api#7 by @alice:\n\n> rename `x` to `count`\n\n\
             Make the changes asked for. When you reply, Gatehouse pushes the workspace to \
             the pull request's branch and answers on acme/api#7 with your reply; say briefly \
             what you changed."
        );
    }
}
