//! The ids on question card controls: `gq:VERB:QUESTION`, and [`Control`], either kind of
//! Gatehouse id as a click carries it.
//!
//! A question is answered once whatever attempt asked it (a re-run attempt adopts the
//! question), so its id alone names what a click answers. The longest id, `gq:approve:`
//! and a UUID, is 47 characters, well inside Discord's 100.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use crate::action::{ActionError, CardAction};

/// What a click on a question card asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionVerb {
    /// Yes: the agent goes on ("Approve", or "Allow once" for a tool call).
    Approve,
    /// No: the agent is told the reason, which the platform's dialog asks for.
    Deny,
}

impl QuestionVerb {
    fn as_str(self) -> &'static str {
        match self {
            QuestionVerb::Approve => "approve",
            QuestionVerb::Deny => "deny",
        }
    }
}

/// A question card control's meaning: an answer to one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuestionAction {
    /// The answer.
    pub verb: QuestionVerb,
    /// The question's id.
    pub question: Uuid,
}

impl QuestionAction {
    /// A control answering `question` with `verb`.
    pub fn new(verb: QuestionVerb, question: Uuid) -> Self {
        Self { verb, question }
    }

    /// The id to put on the control.
    pub fn encode(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for QuestionAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gq:{}:{}", self.verb.as_str(), self.question)
    }
}

impl FromStr for QuestionAction {
    type Err = ActionError;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        let bad = |why| ActionError {
            id: id.to_owned(),
            why,
        };
        let mut parts = id.split(':');
        if parts.next() != Some("gq") {
            return Err(bad("it does not start with `gq:`"));
        }
        let verb = match parts.next() {
            Some("approve") => QuestionVerb::Approve,
            Some("deny") => QuestionVerb::Deny,
            _ => return Err(bad("unknown verb")),
        };
        let question = parts
            .next()
            .and_then(|q| Uuid::parse_str(q).ok())
            .ok_or_else(|| bad("no question id"))?;
        if parts.next().is_some() {
            return Err(bad("trailing parts"));
        }
        Ok(Self { verb, question })
    }
}

/// Any Gatehouse control: a gate card's (`gh:`) or a question card's (`gq:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// A decision on a gate attempt.
    Gate(CardAction),
    /// An answer to an agent's question.
    Question(QuestionAction),
}

impl FromStr for Control {
    type Err = ActionError;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        if id.starts_with("gq:") {
            id.parse().map(Control::Question)
        } else {
            id.parse().map(Control::Gate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Verb;
    use proptest::prelude::*;

    const QUESTION: &str = "0192f0c1-7a2b-7c3d-8e4f-001122334455";

    #[test]
    fn encodes_and_decodes() {
        let question = Uuid::parse_str(QUESTION).unwrap();
        let deny = QuestionAction::new(QuestionVerb::Deny, question);
        assert_eq!(deny.encode(), format!("gq:deny:{QUESTION}"));
        assert_eq!(deny.encode().parse::<QuestionAction>().unwrap(), deny);
        let approve = QuestionAction::new(QuestionVerb::Approve, question).encode();
        assert_eq!(approve, format!("gq:approve:{QUESTION}"));
        assert!(approve.len() <= 100, "fits Discord's custom ids");
    }

    #[test]
    fn refuses_other_ids() {
        for id in [
            "",
            "gq",
            "gq:approve",
            "gq:allow:0192f0c1-7a2b-7c3d-8e4f-001122334455",
            "gq:approve:not-a-uuid",
            "gq:approve:0192f0c1-7a2b-7c3d-8e4f-001122334455:more",
            "gh:approve:0192f0c1-7a2b-7c3d-8e4f-001122334455",
            "GQ:approve:0192f0c1-7a2b-7c3d-8e4f-001122334455",
        ] {
            assert!(id.parse::<QuestionAction>().is_err(), "{id:?}");
        }
    }

    #[test]
    fn controls_tell_gates_and_questions_apart() {
        let question = Uuid::parse_str(QUESTION).unwrap();
        assert_eq!(
            format!("gq:deny:{QUESTION}").parse::<Control>().unwrap(),
            Control::Question(QuestionAction::new(QuestionVerb::Deny, question))
        );
        let gate = CardAction::new(Verb::Approve, question, "review", 2);
        assert_eq!(
            gate.encode().parse::<Control>().unwrap(),
            Control::Gate(gate)
        );
        // A malformed question id is not mistaken for a gate's.
        let err = "gq:deny:x".parse::<Control>().unwrap_err();
        assert_eq!(err.why, "no question id");
        assert!("click_one".parse::<Control>().is_err());
    }

    proptest! {
        #[test]
        fn round_trips(deny in any::<bool>(), question in any::<u128>()) {
            let verb = if deny { QuestionVerb::Deny } else { QuestionVerb::Approve };
            let action = QuestionAction::new(verb, Uuid::from_u128(question));
            prop_assert_eq!(action.encode().parse::<QuestionAction>().unwrap(), action);
            prop_assert_eq!(
                action.encode().parse::<Control>().unwrap(),
                Control::Question(action)
            );
        }
    }
}
