//! How `session/request_permission` is answered. Gatehouse's sandbox is the boundary, so
//! for now every request is allowed; the policy is a type of its own so per-role
//! allow/ask/deny (Gatehouse issue 40) is a new variant and a flag, not a rewrite.
//!
//! Every agent surveyed offers options of the kinds `allow_once`, `allow_always`,
//! `reject_once` (and the protocol adds `reject_always`); the answer names one by its
//! `optionId`, or is `cancelled` when none fits.

use serde_json::{Value, json};

/// What the shim answers permission requests with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Allow every tool call: `allow_once` when offered, else `allow_always`.
    #[default]
    Allow,
}

/// One answer, for the agent and for the output line.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The picked option's kind, or `cancelled`.
    pub kind: String,
    /// The picked option's id; `None` when cancelled.
    pub option_id: Option<String>,
}

impl Policy {
    /// As the output names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
        }
    }

    /// The answer to a request's `params`.
    pub fn decide(self, params: &Value) -> Decision {
        let options = params
            .get("options")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let preferred: &[&str] = match self {
            Self::Allow => &["allow_once", "allow_always"],
        };
        preferred
            .iter()
            .find_map(|kind| {
                options.iter().find_map(|option| {
                    let id = option.get("optionId")?.as_str()?;
                    (option.get("kind")?.as_str()? == *kind).then(|| Decision {
                        kind: (*kind).to_owned(),
                        option_id: Some(id.to_owned()),
                    })
                })
            })
            .unwrap_or(Decision {
                kind: "cancelled".to_owned(),
                option_id: None,
            })
    }
}

impl Decision {
    /// The JSON-RPC result for the agent.
    pub fn answer(&self) -> Value {
        match &self.option_id {
            Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
            None => json!({"outcome": {"outcome": "cancelled"}}),
        }
    }
}

/// The part of a request's `toolCall` worth recording: what it is, not its (possibly large)
/// content.
pub fn tool_call_brief(params: &Value) -> Value {
    let Some(call) = params.get("toolCall").and_then(Value::as_object) else {
        return Value::Null;
    };
    let mut brief = serde_json::Map::new();
    for key in ["toolCallId", "title", "kind"] {
        if let Some(value) = call.get(key) {
            brief.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(brief)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Decision, Policy, tool_call_brief};

    #[test]
    fn allow_picks_once_over_always_and_cancels_when_nothing_allows() {
        let gemini = json!({"options": [
            {"optionId": "proceed_always", "kind": "allow_always"},
            {"optionId": "proceed_once", "kind": "allow_once"},
            {"optionId": "cancel", "kind": "reject_once"},
        ]});
        assert_eq!(
            Policy::Allow.decide(&gemini),
            Decision {
                kind: "allow_once".to_owned(),
                option_id: Some("proceed_once".to_owned())
            }
        );
        let always = json!({"options": [{"optionId": "a", "kind": "allow_always"}]});
        assert_eq!(
            Policy::Allow.decide(&always).option_id.as_deref(),
            Some("a")
        );
        let none = json!({"options": [{"optionId": "r", "kind": "reject_once"}]});
        let decision = Policy::Allow.decide(&none);
        assert_eq!(decision.kind, "cancelled");
        assert_eq!(
            decision.answer(),
            json!({"outcome": {"outcome": "cancelled"}})
        );
        assert_eq!(Policy::Allow.decide(&json!("garbage")).kind, "cancelled");
    }

    #[test]
    fn only_what_the_call_is_is_recorded() {
        let params = json!({"toolCall": {"toolCallId": "t", "title": "Write", "kind": "edit", "content": ["big"]}});
        assert_eq!(
            tool_call_brief(&params),
            json!({"toolCallId": "t", "title": "Write", "kind": "edit"})
        );
        assert_eq!(tool_call_brief(&json!({})), serde_json::Value::Null);
    }
}
