//! A question card: an agent, mid-run or mid-turn, waits for a person to say yes or no.
//! The question and evidence are the agent's own words — untrusted, shown as plain text
//! and cut to [`QUESTION_SHOWN`] and [`EVIDENCE_SHOWN`] characters (the full text is on the
//! run page); adapters escape them for their platform and cut further to its limits.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::card::Outcome;

/// Characters of the question a card shows.
pub const QUESTION_SHOWN: usize = 1500;
/// Characters of the evidence a card shows.
pub const EVIDENCE_SHOWN: usize = 1000;
/// Characters of the question's first line in a card's title.
const TITLE_SHOWN: usize = 100;

/// What made the agent ask, which decides the card's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// The agent called `request_approval`: "Approve" / "Deny".
    Approval,
    /// A tool call its role's permissions say to ask about: "Allow once" / "Deny".
    Permission,
}

/// Whose work waits on the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "owner", rename_all = "snake_case")]
pub enum Asker {
    /// An agent node of an SOP run.
    Run {
        /// The run.
        run: Uuid,
        /// The SOP it follows.
        sop: String,
        /// The agent node asking.
        node: String,
        /// The attempt that asked.
        attempt: u32,
    },
    /// A turn of a conversation with the assistant.
    Conversation {
        /// The conversation.
        conversation: Uuid,
        /// The turn (what was said, numbered) the agent is answering.
        turn: i64,
    },
}

/// A question card, as posted to a thread or channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionCard {
    /// The question's id, which its buttons carry.
    pub question: Uuid,
    /// Approval or permission. (Not `kind` in JSON: [`crate::Body`] is tagged by `kind`.)
    #[serde(rename = "question_kind")]
    pub kind: QuestionKind,
    /// The agent's question (untrusted, plain).
    pub text: String,
    /// What the agent showed with it (untrusted, plain).
    pub evidence: Option<String>,
    /// Whose work waits.
    pub asker: Asker,
    /// What the requirement is called, when the work is on one.
    pub requirement: Option<String>,
    /// Where the requirement lives (issue, thread), when known.
    pub requirement_url: Option<String>,
    /// The run's (or conversation's) page in the console, with `server.public_url`.
    pub page_url: Option<String>,
    /// The answer, once given: the card then shows it instead of buttons.
    pub outcome: Option<Outcome>,
}

impl QuestionCard {
    /// The card's title line: "The agent asks: <first line>" or, for a permission, "The
    /// agent wants to run a tool".
    pub fn title(&self) -> String {
        match self.kind {
            QuestionKind::Permission => "The agent wants to run a tool".to_owned(),
            QuestionKind::Approval => {
                let first = self.text.lines().find(|l| !l.trim().is_empty());
                format!(
                    "The agent asks: {}",
                    cut(first.unwrap_or("").trim(), TITLE_SHOWN)
                )
            }
        }
    }

    /// The question, cut to what a card shows.
    pub fn shown_text(&self) -> String {
        cut(self.text.trim(), QUESTION_SHOWN)
    }

    /// The evidence, cut to what a card shows; none when empty.
    pub fn shown_evidence(&self) -> Option<String> {
        self.evidence
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| cut(e, EVIDENCE_SHOWN))
    }

    /// The yes button's label.
    pub fn approve_label(&self) -> &'static str {
        match self.kind {
            QuestionKind::Approval => "Approve",
            QuestionKind::Permission => "Allow once",
        }
    }

    /// The no button's label.
    pub fn deny_label(&self) -> &'static str {
        "Deny"
    }

    /// Whose work waits, as a line: `Run 0192… (bug-fix), node build, attempt 2` or
    /// `Conversation 0192…, turn 4`.
    pub fn asker_line(&self) -> String {
        match &self.asker {
            Asker::Run {
                run,
                sop,
                node,
                attempt,
            } => format!("Run {run} ({sop}), node {node}, attempt {attempt}"),
            Asker::Conversation { conversation, turn } => {
                format!("Conversation {conversation}, turn {turn}")
            }
        }
    }

    /// What answering does, so nobody clicks without knowing.
    pub fn effect(&self) -> &'static str {
        match self.kind {
            QuestionKind::Approval => {
                "The agent waits for this answer: approve and it goes on; deny and it is told your reason."
            }
            QuestionKind::Permission => {
                "Allow once runs this one tool call; deny and the agent is told your reason."
            }
        }
    }
}

/// At most `max` characters of `text`, ending in `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn card(kind: QuestionKind) -> QuestionCard {
        QuestionCard {
            question: Uuid::nil(),
            kind,
            text: "\nMay I drop the `users` table?\nIt is empty.".into(),
            evidence: Some("  \n".into()),
            asker: Asker::Run {
                run: Uuid::nil(),
                sop: "bug-fix".into(),
                node: "build".into(),
                attempt: 2,
            },
            requirement: None,
            requirement_url: None,
            page_url: None,
            outcome: None,
        }
    }

    #[test]
    fn approvals_and_permissions_read_differently() {
        let ask = card(QuestionKind::Approval);
        assert_eq!(ask.title(), "The agent asks: May I drop the `users` table?");
        assert_eq!((ask.approve_label(), ask.deny_label()), ("Approve", "Deny"));
        let tool = card(QuestionKind::Permission);
        assert_eq!(tool.title(), "The agent wants to run a tool");
        assert_eq!(tool.approve_label(), "Allow once");
        assert!(
            tool.effect()
                .starts_with("Allow once runs this one tool call")
        );
        assert_eq!(
            ask.asker_line(),
            "Run 00000000-0000-0000-0000-000000000000 (bug-fix), node build, attempt 2"
        );
    }

    #[test]
    fn long_and_empty_texts_are_bounded() {
        let mut c = card(QuestionKind::Approval);
        assert_eq!(c.shown_evidence(), None, "blank evidence is none");
        c.text = "é".repeat(5000);
        c.evidence = Some("x".repeat(5000));
        assert_eq!(c.shown_text().chars().count(), QUESTION_SHOWN);
        assert!(c.shown_text().ends_with('…'));
        assert_eq!(c.shown_evidence().unwrap().chars().count(), EVIDENCE_SHOWN);
        assert_eq!(
            c.title().chars().count(),
            "The agent asks: ".len() + TITLE_SHOWN
        );
        c.text = String::new();
        assert_eq!(c.title(), "The agent asks: ");
        c.asker = Asker::Conversation {
            conversation: Uuid::nil(),
            turn: 4,
        };
        assert_eq!(
            c.asker_line(),
            "Conversation 00000000-0000-0000-0000-000000000000, turn 4"
        );
    }

    #[test]
    fn round_trips_as_json_as_a_message_body() {
        let c = card(QuestionKind::Permission);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<QuestionCard>(&json).unwrap(), c);
        // As stored for the notifier: the body's own tag must not clash with the card's.
        let body = crate::Body::Question(Box::new(c));
        let json = serde_json::to_string(&body).unwrap();
        assert_eq!(json.matches("\"kind\"").count(), 1, "{json}");
        assert_eq!(serde_json::from_str::<crate::Body>(&json).unwrap(), body);
    }
}
