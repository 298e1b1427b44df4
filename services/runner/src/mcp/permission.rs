//! Permission requests decided by the role's `permissions`: Claude Code's
//! `--permission-prompt-tool` (the `permission` tool of Gatehouse's MCP server) and the ACP
//! shim's `POST /permission` ask here about a tool call their own rules left open or
//! marked `ask`. `allow` and `deny` are answered at once; `ask` becomes a question a person
//! answers ("the agent wants to run `git push --force origin main`" — allow once / deny),
//! and nothing runs until they do. Every decision joins the attempt's trace as a
//! `permission` entry; a person's is also a stored question, the audit trail's.

use gatehouse_agent::{Decision, ToolCall, ToolUse};
use gatehouse_events::QuestionKind;
use gatehouse_store::{MAX_EVIDENCE_BYTES, fit_bytes};

use super::AttemptTools;
use super::ask::ask;

/// What was decided about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decided {
    pub(crate) allow: bool,
    /// Why, in words the agent reads.
    pub(crate) reason: String,
    /// `policy`, or the person who answered.
    pub(crate) by: String,
}

/// Decides `call` by the attempt's role's permissions, asking a person when they say so,
/// and records the decision in the attempt's trace.
pub(crate) async fn decide(attempt: &AttemptTools, call: &ToolUse) -> Decided {
    let started_ms = attempt.elapsed_ms();
    let verdict = attempt
        .permissions
        .as_ref()
        .map(|permissions| permissions.decide(call));
    let rule = verdict
        .as_ref()
        .and_then(|v| v.rule.clone())
        .map(|rule| format!(" (rule `{rule}`)"))
        .unwrap_or_default();
    let decided = match verdict.map(|v| v.decision) {
        None | Some(Decision::Allow) => Decided {
            allow: true,
            reason: format!("allowed by the role's permissions{rule}"),
            by: "policy".to_owned(),
        },
        Some(Decision::Deny) => Decided {
            allow: false,
            reason: format!("denied by the role's permissions{rule}; do not try it another way"),
            by: "policy".to_owned(),
        },
        Some(Decision::Ask) => {
            let evidence = evidence(call);
            match ask(
                attempt,
                QuestionKind::Permission,
                &question(call),
                Some(&evidence),
            )
            .await
            {
                Ok(reply) => Decided {
                    allow: reply.approved(),
                    reason: reply.words(),
                    by: reply.by.clone().unwrap_or_else(|| "nobody".to_owned()),
                },
                Err(error) => Decided {
                    allow: false,
                    reason: format!("nobody could be asked, so it is denied: {error}"),
                    by: "policy".to_owned(),
                },
            }
        }
    };
    attempt.record(ToolCall {
        tool: "permission".to_owned(),
        summary: summary(call, &decided),
        started_ms,
        duration_ms: Some(attempt.elapsed_ms().saturating_sub(started_ms)),
        error: !decided.allow,
    });
    decided
}

/// The question a person is asked: what the agent wants to do, in a sentence.
fn question(call: &ToolUse) -> String {
    let field = |name: &str| call.input.get(name).and_then(|v| v.as_str());
    let what = match call.tool.as_str() {
        "Bash" => field("command").map(|c| format!("run `{}`", one_line(c))),
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => field("file_path")
            .or_else(|| field("notebook_path"))
            .map(|p| format!("change `{}` ({})", one_line(p), call.tool)),
        "Read" => field("file_path").map(|p| format!("read `{}`", one_line(p))),
        "WebFetch" => field("url").map(|u| format!("fetch `{}`", one_line(u))),
        _ => None,
    };
    match what {
        Some(what) => format!("The agent wants to {what}"),
        None => format!("The agent wants to use the tool `{}`", one_line(&call.tool)),
    }
}

/// The call's input as people read it, bounded.
fn evidence(call: &ToolUse) -> String {
    let text = serde_json::to_string_pretty(&call.input).unwrap_or_default();
    fit_bytes(&text, MAX_EVIDENCE_BYTES - 64)
}

/// The trace's line for a decision.
fn summary(call: &ToolUse, decided: &Decided) -> String {
    let verb = if decided.allow { "allow" } else { "deny" };
    let what = question(call);
    let what = what.strip_prefix("The agent wants to ").unwrap_or(&what);
    fit_bytes(&format!("{verb} {what} — {}", decided.reason), 240)
}

fn one_line(text: &str) -> String {
    fit_bytes(&text.replace(['\n', '\r'], " "), 300)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str, input: serde_json::Value) -> ToolUse {
        ToolUse {
            tool: tool.to_owned(),
            input,
        }
    }

    #[test]
    fn a_person_is_asked_in_a_sentence() {
        assert_eq!(
            question(&call(
                "Bash",
                json!({"command": "git push --force\norigin main"})
            )),
            "The agent wants to run `git push --force origin main`"
        );
        assert_eq!(
            question(&call("Edit", json!({"file_path": "src/lib.rs"}))),
            "The agent wants to change `src/lib.rs` (Edit)"
        );
        assert_eq!(
            question(&call("mcp__github__create_issue", json!({"title": "x"}))),
            "The agent wants to use the tool `mcp__github__create_issue`"
        );
        let long = "x".repeat(MAX_EVIDENCE_BYTES * 2);
        assert!(evidence(&call("Bash", json!({"command": long}))).len() <= MAX_EVIDENCE_BYTES);
    }
}
