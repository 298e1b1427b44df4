//! How `session/request_permission` is answered. Without `--permissions` every request is
//! allowed (Gatehouse's sandbox is the boundary). With it, the role's policy decides each
//! request ([`gatehouse_agent::Permissions::decide_all`] on the request read as Claude Code
//! tool calls, [`gatehouse_agent::permission::acp`]): allow and deny at once, ask by
//! asking the runner (`ask.rs`), a person deciding.
//!
//! Every agent surveyed offers options of the kinds `allow_once`, `allow_always`,
//! `reject_once` (and the protocol adds `reject_always`); the answer names one by its
//! `optionId`, or is `cancelled` when none fits. A rule's decision is for this call only,
//! so `*_once` is preferred.

use std::path::Path;

use gatehouse_agent::permission::acp::tool_uses;
use gatehouse_agent::{Decision as Verdict, Permissions, ToolUse};
use serde_json::{Value, json};

use crate::ask::Endpoint;

/// The largest permissions file read; a role's policy is far smaller
/// (gatehouse_agent's `MAX_RULES` × `MAX_RULE_BYTES` × 3 lists).
const MAX_POLICY_BYTES: u64 = 256 * 1024;

/// How much of a call's input a decision line quotes.
const INPUT_CHARS: usize = 300;

/// What the shim answers permission requests with.
#[derive(Debug, Clone, Default)]
pub enum Policy {
    /// Allow every tool call: `allow_once` when offered, else `allow_always`.
    #[default]
    Allow,
    /// The role's rules; `ask` goes to the endpoint (or is denied, saying why, without one).
    Rules {
        permissions: Box<Permissions>,
        endpoint: Result<Endpoint, String>,
    },
}

/// One answer, for the agent and for the output line.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The picked option's kind, or `cancelled`.
    pub kind: String,
    /// The picked option's id; `None` when cancelled.
    pub option_id: Option<String>,
}

/// What the policy says about one request before anyone is asked.
#[derive(Debug, Clone)]
pub enum Ruling {
    /// Answered now: the answer and the `gatehouse.permission` line.
    Now(Decision, Value),
    /// A person must decide: the call to ask about, and the endpoint.
    Ask(ToolUse, Result<Endpoint, String>),
}

impl Policy {
    /// The policy in `path` (the role's `permissions` as JSON), checked as `config check`
    /// checks it.
    pub fn load(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(file, MAX_POLICY_BYTES + 1),
            &mut text,
        )
        .map_err(|e| e.to_string())?;
        if text.len() as u64 > MAX_POLICY_BYTES {
            return Err(format!("it is larger than {MAX_POLICY_BYTES} bytes"));
        }
        let permissions: Permissions = serde_json::from_str(&text)
            .map_err(|e| format!("it is not a role's permissions: {e}"))?;
        permissions.check().map_err(|e| e.to_string())?;
        Ok(Self::Rules {
            permissions: Box::new(permissions),
            endpoint: Endpoint::from_env(),
        })
    }

    /// As the output names it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Rules { .. } => "rules",
        }
    }

    /// The ruling on a request's `params`.
    pub fn rule(&self, params: &Value) -> Ruling {
        let Self::Rules {
            permissions,
            endpoint,
        } = self
        else {
            return Ruling::Now(pick(params, true), Value::Null);
        };
        let calls = tool_uses(params);
        let verdict = permissions.decide_all(&calls);
        // The call the verdict is about: the first one it holds for.
        let call = calls
            .iter()
            .find(|call| permissions.decide(call).decision == verdict.decision)
            .or(calls.first())
            .cloned()
            .unwrap_or(ToolUse {
                tool: "Other".to_owned(),
                input: Value::Null,
            });
        match verdict.decision {
            Verdict::Ask => Ruling::Ask(call, endpoint.clone()),
            decision => {
                let allow = decision == Verdict::Allow;
                let mut line = decision_line(&call, decision.as_str());
                line["rule"] = json!(verdict.rule.unwrap_or_else(|| "default".to_owned()));
                Ruling::Now(pick(params, allow), line)
            }
        }
    }
}

/// The `gatehouse.permission` line for a decision on `call`, without `rule` or `by`.
pub fn decision_line(call: &ToolUse, decision: &str) -> Value {
    json!({
        "type": "gatehouse.permission",
        "tool": call.tool,
        "input": summary(&call.input),
        "decision": decision,
    })
}

/// The option an answer picks from the request's: `*_once` first.
pub fn pick(params: &Value, allow: bool) -> Decision {
    let options = params
        .get("options")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let preferred: &[&str] = if allow {
        &["allow_once", "allow_always"]
    } else {
        &["reject_once", "reject_always"]
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

/// A call's input on one line, bounded: the command, path, URL or query it names, else its
/// JSON.
fn summary(input: &Value) -> String {
    let named = ["command", "file_path", "url", "query", "title"]
        .iter()
        .find_map(|key| input.get(key)?.as_str().map(str::to_owned));
    let text = named.unwrap_or_else(|| input.to_string());
    let mut short: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(INPUT_CHARS)
        .collect();
    if text.chars().count() > INPUT_CHARS {
        short.push('…');
    }
    short
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

    use super::{Decision, Policy, Ruling, pick, summary, tool_call_brief};

    #[test]
    fn allow_picks_once_over_always_and_cancels_when_nothing_allows() {
        let gemini = json!({"options": [
            {"optionId": "proceed_always", "kind": "allow_always"},
            {"optionId": "proceed_once", "kind": "allow_once"},
            {"optionId": "cancel", "kind": "reject_once"},
        ]});
        assert_eq!(
            pick(&gemini, true),
            Decision {
                kind: "allow_once".to_owned(),
                option_id: Some("proceed_once".to_owned())
            }
        );
        assert_eq!(pick(&gemini, false).option_id.as_deref(), Some("cancel"));
        let always = json!({"options": [{"optionId": "a", "kind": "allow_always"}]});
        assert_eq!(pick(&always, true).option_id.as_deref(), Some("a"));
        assert_eq!(pick(&always, false).kind, "cancelled");
        let none = json!({"options": [{"optionId": "r", "kind": "reject_once"}]});
        let decision = pick(&none, true);
        assert_eq!(decision.kind, "cancelled");
        assert_eq!(
            decision.answer(),
            json!({"outcome": {"outcome": "cancelled"}})
        );
        assert_eq!(pick(&json!("garbage"), true).kind, "cancelled");
        match Policy::Allow.rule(&gemini) {
            Ruling::Now(decision, _) => assert_eq!(decision.kind, "allow_once"),
            Ruling::Ask(..) => panic!("allow asks nobody"),
        }
    }

    #[test]
    fn only_what_the_call_is_is_recorded() {
        let params = json!({"toolCall": {"toolCallId": "t", "title": "Write", "kind": "edit", "content": ["big"]}});
        assert_eq!(
            tool_call_brief(&params),
            json!({"toolCallId": "t", "title": "Write", "kind": "edit"})
        );
        assert_eq!(tool_call_brief(&json!({})), serde_json::Value::Null);
        let long = summary(&json!({"command": "x".repeat(1000)}));
        assert_eq!(long.chars().count(), 301);
        assert_eq!(summary(&json!({"command": "a\nb"})), "a b");
    }
}
