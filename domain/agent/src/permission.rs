//! Permissions per role: which tool calls an agent may make on its own, which a person
//! must allow first, and which it may not make at all — one grammar for every executor.
//!
//! ```toml
//! [roles.dev]
//! permissions = { allow = ["Read", "Edit", "Bash(cargo test*)"], ask = ["Bash(git push*)", "mcp__*__write*"], deny = ["WebFetch"], default = "allow" }
//! ```
//!
//! A call is decided by the first list with a rule that applies, in the order deny, ask,
//! allow, and by `default` when none does (`allow` unless set: the sandbox is the boundary,
//! these rules narrow it). Rules are written as Claude Code writes them (`rule.rs`). Each
//! executor hands the policy to its CLI its own way (Claude Code's settings, the ACP shim's
//! `--permissions` file); [`acp`] maps an ACP agent's permission request to the same tool
//! names, so one policy answers them all.

pub mod acp;
mod glob;
pub mod hook;
pub mod prompt_tool;
mod rule;
mod shell;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

pub use rule::{MAX_RULE_BYTES, Rule, RuleError, TOOLS};
pub(crate) use rule::{Pattern, Side};

/// The most a `POST /permission` body (`{"tool", "input"}`) may hold. A hooked CLI asks
/// about every call, a whole file's content included, so this fits the largest hook event
/// ([`hook::MAX_EVENT_BYTES`]) with its text escaped again; smaller bounds would deny the
/// agent every large `Write`.
pub const MAX_PERMISSION_REQUEST_BYTES: usize = 2 * hook::MAX_EVENT_BYTES + 64 * 1024;

/// The most rules one list may hold: the policy travels in the `sh -c` command line, one
/// argument of at most 128 KiB, with [`MAX_RULE_BYTES`] per rule.
pub const MAX_RULES: usize = 64;

/// What happens to a tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// It runs.
    #[default]
    Allow,
    /// A person decides first; never allowed without one.
    Ask,
    /// It does not run; the agent is told so.
    Deny,
}

impl Decision {
    /// As the configuration and the trace write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// `permissions = { … }` on a role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    /// Calls that run without asking (unless a deny or ask rule applies too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<Rule>,
    /// Calls a person must allow first (unless a deny rule applies too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<Rule>,
    /// Calls that never run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<Rule>,
    /// What happens to a call no rule applies to.
    #[serde(default)]
    pub default: Decision,
}

/// One tool call as the agent asks to make it, named as Claude Code names its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// `Bash`, `Edit`, `mcp__github__create_issue`, …
    pub tool: String,
    /// The call's arguments, in Claude Code's names (`command`, `file_path`, `url`).
    #[serde(default)]
    pub input: Value,
}

/// A decision and the rule that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub decision: Decision,
    /// The rule as written; `None` when `default` decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// Which list of a role's `permissions` a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Allow,
    Ask,
    Deny,
}

impl List {
    /// As the configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// A rule that cannot be used, and where it is: `permissions.ask[1]`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PermissionsError {
    #[error("`permissions.{}[{index}]` {rule:?}: {problem}", list.as_str())]
    Rule {
        list: List,
        /// From 0, as TOML arrays are read.
        index: usize,
        rule: String,
        problem: RuleError,
    },
    #[error(
        "`permissions.{}` has {len} rules; at most {MAX_RULES} are allowed — use `*` to \
         cover several calls with one", list.as_str()
    )]
    TooMany { list: List, len: usize },
}

impl Permissions {
    /// The three lists with their names, in the order they are consulted.
    pub fn lists(&self) -> [(List, &[Rule]); 3] {
        [
            (List::Deny, &self.deny),
            (List::Ask, &self.ask),
            (List::Allow, &self.allow),
        ]
    }

    /// Refuses a rule that does not parse, naming its list and place.
    pub fn check(&self) -> Result<(), PermissionsError> {
        for (list, rules) in [
            (List::Allow, &self.allow),
            (List::Ask, &self.ask),
            (List::Deny, &self.deny),
        ] {
            if rules.len() > MAX_RULES {
                return Err(PermissionsError::TooMany {
                    list,
                    len: rules.len(),
                });
            }
            if let Some((index, rule)) = rules.iter().enumerate().find(|(_, r)| r.error().is_some())
            {
                return Err(PermissionsError::Rule {
                    list,
                    index,
                    rule: rule.as_str().to_owned(),
                    problem: rule.error().cloned().unwrap_or(RuleError::Empty),
                });
            }
        }
        Ok(())
    }

    /// What happens to `call`: the first deny, then ask, then allow rule that applies, else
    /// `default`.
    pub fn decide(&self, call: &ToolUse) -> Verdict {
        for (list, rules) in self.lists() {
            let side = match list {
                List::Allow => Side::Permit,
                List::Ask | List::Deny => Side::Restrict,
            };
            if let Some(rule) = rules.iter().find(|rule| rule.applies(call, side)) {
                return Verdict {
                    decision: match list {
                        List::Allow => Decision::Allow,
                        List::Ask => Decision::Ask,
                        List::Deny => Decision::Deny,
                    },
                    rule: Some(rule.as_str().to_owned()),
                };
            }
        }
        Verdict {
            decision: self.default,
            rule: None,
        }
    }

    /// The strictest verdict over several readings of one request (an ACP move names two
    /// paths); `default`'s for none.
    pub fn decide_all(&self, calls: &[ToolUse]) -> Verdict {
        calls
            .iter()
            .map(|call| self.decide(call))
            .max_by_key(|verdict| match verdict.decision {
                Decision::Allow => 0,
                Decision::Ask => 1,
                Decision::Deny => 2,
            })
            .unwrap_or(Verdict {
                decision: self.default,
                rule: None,
            })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Decision, List, Permissions, PermissionsError, RuleError, ToolUse, Verdict};

    fn policy(toml_like: serde_json::Value) -> Permissions {
        serde_json::from_value(toml_like).expect("permissions")
    }

    fn bash(command: &str) -> ToolUse {
        ToolUse {
            tool: "Bash".to_owned(),
            input: json!({ "command": command }),
        }
    }

    #[test]
    fn deny_beats_ask_beats_allow_beats_default() {
        let p = policy(json!({
            "allow": ["Read", "Bash(git *)"],
            "ask": ["Bash(git push*)"],
            "deny": ["Bash(git push --force*)"],
            "default": "deny",
        }));
        let verdict = |command: &str| p.decide(&bash(command));
        assert_eq!(
            verdict("git push --force origin"),
            Verdict {
                decision: Decision::Deny,
                rule: Some("Bash(git push --force*)".into())
            }
        );
        assert_eq!(verdict("git push origin").decision, Decision::Ask);
        assert_eq!(verdict("git status").decision, Decision::Allow);
        assert_eq!(
            verdict("rm -rf /"),
            Verdict {
                decision: Decision::Deny,
                rule: None
            }
        );
        let read = ToolUse {
            tool: "Read".into(),
            input: json!({"file_path": "/x"}),
        };
        assert_eq!(p.decide(&read).rule.as_deref(), Some("Read"));
        assert_eq!(
            p.decide_all(&[read, bash("git push")]).decision,
            Decision::Ask
        );
        assert_eq!(p.decide_all(&[]).decision, Decision::Deny);
    }

    #[test]
    fn the_default_default_is_allow_and_unknown_keys_are_refused() {
        assert_eq!(
            policy(json!({})).decide(&bash("x")).decision,
            Decision::Allow
        );
        let error = serde_json::from_value::<Permissions>(json!({"alow": []})).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `alow`"),
            "{error}"
        );
        let error = serde_json::from_value::<Permissions>(json!({"default": "maybe"})).unwrap_err();
        assert!(
            error.to_string().contains("unknown variant `maybe`"),
            "{error}"
        );
    }

    #[test]
    fn check_names_the_list_and_place_of_a_bad_rule() {
        let p = policy(json!({"ask": ["Bash(git push*)", "Bash(git push"]}));
        let error = p.check().unwrap_err();
        assert_eq!(
            error,
            PermissionsError::Rule {
                list: List::Ask,
                index: 1,
                rule: "Bash(git push".into(),
                problem: RuleError::Unbalanced
            }
        );
        assert!(
            error
                .to_string()
                .starts_with("`permissions.ask[1]` \"Bash(git push\": unbalanced"),
            "{error}"
        );
        let many = policy(json!({"deny": vec!["Read"; 65]}));
        assert!(matches!(
            many.check(),
            Err(PermissionsError::TooMany { len: 65, .. })
        ));
        // Round trip: a frozen role keeps its rules as written.
        let text = serde_json::to_value(&p).expect("json");
        assert_eq!(
            text,
            json!({"ask": ["Bash(git push*)", "Bash(git push"], "default": "allow"})
        );
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::json;

    use super::{Decision, Permissions, ToolUse};

    fn bash(command: &str) -> ToolUse {
        ToolUse {
            tool: "Bash".to_owned(),
            input: json!({ "command": command }),
        }
    }

    proptest! {
        /// A rule in deny wins over the same rule in ask and allow, whatever the call.
        #[test]
        fn deny_wins_wherever_else_the_rule_is(word in "[a-z]{1,6}", command in "[a-z ;&|]{0,30}") {
            let rule = format!("Bash({word}*)");
            let p: Permissions = serde_json::from_value(json!({
                "allow": [rule.clone(), "Bash"], "ask": [rule.clone()], "deny": [rule],
            })).expect("policy");
            let verdict = p.decide(&bash(&command));
            let mentioned = command
                .split([';', '&', '|'])
                .any(|part| part.trim().starts_with(word.as_str()));
            prop_assert_eq!(verdict.decision == Decision::Deny, mentioned || command.trim().starts_with(word.as_str()));
            prop_assert_ne!(verdict.decision, Decision::Ask);
        }

        /// A patterned allow never lets through a command joined to one it does not match.
        #[test]
        fn an_allow_covers_every_joined_command(
            allowed in "[a-z]{1,6}", other in "[a-z]{1,6}", op in prop::sample::select(vec![";", "&&", "||", "|", "&", "\n"])
        ) {
            prop_assume!(!other.starts_with(allowed.as_str()));
            let p: Permissions = serde_json::from_value(json!({
                "allow": [format!("Bash({allowed}*)")], "default": "deny",
            })).expect("policy");
            prop_assert_eq!(p.decide(&bash(&format!("{allowed} x {op} {other}"))).decision, Decision::Deny);
            prop_assert_eq!(p.decide(&bash(&format!("{allowed} x {op} {allowed} y"))).decision, Decision::Allow);
        }
    }
}
