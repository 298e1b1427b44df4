//! The ids on card buttons, select menus and dialogs: `gh:VERB:RUN:ATTEMPT:NODE[:TARGET]`.
//!
//! SOP node ids are letters, digits, `-`, `_` and `.`, so `:` separates safely. Discord
//! allows 100 characters in a custom id; [`CardAction::encode`] stays under that for node
//! ids of up to 20 characters each and attempts below 1000 (the `gh:` prefix, the longest
//! verb, a UUID and an attempt take 54).

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

/// What a click asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Approve the gate.
    Approve,
    /// Send the work back (to the action's target, or asks which).
    SendBack,
    /// Reject (the adapter asks for confirmation first).
    Reject,
}

impl Verb {
    fn as_str(self) -> &'static str {
        match self {
            Verb::Approve => "approve",
            Verb::SendBack => "send-back",
            Verb::Reject => "reject",
        }
    }
}

/// A card control's meaning: a verb on one attempt of one gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardAction {
    /// What to do.
    pub verb: Verb,
    /// The run.
    pub run: Uuid,
    /// The gate's node id.
    pub node: String,
    /// The gate attempt the card was posted for.
    pub attempt: u32,
    /// For a send-back already aimed: the node to redo.
    pub target: Option<String>,
}

/// An id that is not one of Gatehouse's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{id}` is not a Gatehouse action: {why}")]
pub struct ActionError {
    /// The id as received.
    pub id: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl CardAction {
    /// A control for `verb` on the gate `node` of `run` at `attempt`.
    pub fn new(verb: Verb, run: Uuid, node: &str, attempt: u32) -> Self {
        Self {
            verb,
            run,
            node: node.to_owned(),
            attempt,
            target: None,
        }
    }

    /// The same control aimed at `target` (a send-back whose target was chosen).
    pub fn with_target(mut self, target: &str) -> Self {
        self.target = Some(target.to_owned());
        self
    }

    /// The id to put on the control.
    pub fn encode(&self) -> String {
        self.to_string()
    }

    /// `run/node`, the gate's name in commands and the API.
    pub fn gate(&self) -> String {
        format!("{}/{}", self.run, self.node)
    }
}

impl fmt::Display for CardAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gh:{}:{}:{}:{}",
            self.verb.as_str(),
            self.run,
            self.attempt,
            self.node
        )?;
        if let Some(target) = &self.target {
            write!(f, ":{target}")?;
        }
        Ok(())
    }
}

impl FromStr for CardAction {
    type Err = ActionError;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        let bad = |why| ActionError {
            id: id.to_owned(),
            why,
        };
        let mut parts = id.split(':');
        if parts.next() != Some("gh") {
            return Err(bad("it does not start with `gh:`"));
        }
        let verb = match parts.next() {
            Some("approve") => Verb::Approve,
            Some("send-back") => Verb::SendBack,
            Some("reject") => Verb::Reject,
            _ => return Err(bad("unknown verb")),
        };
        let run = parts
            .next()
            .and_then(|r| Uuid::parse_str(r).ok())
            .ok_or_else(|| bad("no run id"))?;
        let attempt = parts
            .next()
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| bad("no attempt"))?;
        let node = parts
            .next()
            .filter(|n| is_node_id(n))
            .ok_or_else(|| bad("no node id"))?
            .to_owned();
        let target = match parts.next() {
            None => None,
            Some(t) if is_node_id(t) => Some(t.to_owned()),
            Some(_) => return Err(bad("bad target node id")),
        };
        if parts.next().is_some() {
            return Err(bad("trailing parts"));
        }
        Ok(Self {
            verb,
            run,
            node,
            attempt,
            target,
        })
    }
}

fn is_node_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encodes_and_decodes() {
        let run = Uuid::parse_str("0192f0c1-7a2b-7c3d-8e4f-001122334455").unwrap();
        let action = CardAction::new(Verb::SendBack, run, "review", 3).with_target("build");
        let id = action.encode();
        assert_eq!(
            id,
            "gh:send-back:0192f0c1-7a2b-7c3d-8e4f-001122334455:3:review:build"
        );
        assert_eq!(id.parse::<CardAction>().unwrap(), action);
        assert_eq!(action.gate(), format!("{run}/review"));
    }

    #[test]
    fn refuses_other_ids() {
        for id in [
            "",
            "click_one",
            "gh:merge:0192f0c1-7a2b-7c3d-8e4f-001122334455:1:review",
            "gh:approve:not-a-uuid:1:review",
            "gh:approve:0192f0c1-7a2b-7c3d-8e4f-001122334455:x:review",
            "gh:approve:0192f0c1-7a2b-7c3d-8e4f-001122334455:1:",
            "gh:approve:0192f0c1-7a2b-7c3d-8e4f-001122334455:1:review:a b",
            "gh:approve:0192f0c1-7a2b-7c3d-8e4f-001122334455:1:review:build:more",
        ] {
            assert!(id.parse::<CardAction>().is_err(), "{id:?}");
        }
    }

    #[test]
    fn short_node_ids_fit_discord() {
        let action = CardAction::new(Verb::SendBack, Uuid::now_v7(), &"n".repeat(20), 999)
            .with_target(&"t".repeat(20));
        assert!(action.encode().len() <= 100, "{}", action.encode().len());
    }

    proptest! {
        #[test]
        fn round_trips(
            verb in prop_oneof![Just(Verb::Approve), Just(Verb::SendBack), Just(Verb::Reject)],
            run in any::<u128>(),
            attempt in any::<u32>(),
            node in "[A-Za-z0-9._-]{1,20}",
            target in proptest::option::of("[A-Za-z0-9._-]{1,20}"),
        ) {
            let action = CardAction { verb, run: Uuid::from_u128(run), node, attempt, target };
            prop_assert_eq!(action.encode().parse::<CardAction>().unwrap(), action);
        }
    }
}
