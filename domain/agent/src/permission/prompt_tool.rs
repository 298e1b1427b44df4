//! Claude Code's `--permission-prompt-tool` in terms of [`super::Permissions`], for the
//! runner's `mcp__gatehouse__permission` tool: Claude Code calls it with `{"tool_name",
//! "input", "tool_use_id"}` for a call its settings neither allow nor deny (or mark
//! `ask`), and reads the tool's text result as `{"behavior": "allow", "updatedInput": …}`
//! or `{"behavior": "deny", "message": …}` — the shape the real CLI accepted in
//! tests/tests/agent_permissions.rs.

use serde_json::{Value, json};

use super::ToolUse;

/// The call Claude Code asks about, from the tool's arguments; `None` without a tool name.
pub fn tool_use(arguments: &Value) -> Option<ToolUse> {
    let tool = arguments.get("tool_name")?.as_str()?;
    if tool.is_empty() {
        return None;
    }
    Some(ToolUse {
        tool: tool.to_owned(),
        input: arguments.get("input").cloned().unwrap_or(Value::Null),
    })
}

/// The tool's text result: allow with the input unchanged, or deny saying why (the agent
/// reads `message`).
pub fn answer(allow: bool, call: &ToolUse, message: &str) -> String {
    if allow {
        json!({"behavior": "allow", "updatedInput": call.input})
    } else {
        json!({"behavior": "deny", "message": message})
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{answer, tool_use};

    #[test]
    fn claude_codes_question_and_the_answers() {
        let asked =
            json!({"tool_name": "Bash", "input": {"command": "git push"}, "tool_use_id": "t"});
        let call = tool_use(&asked).expect("call");
        assert_eq!(call.tool, "Bash");
        assert_eq!(
            answer(true, &call, ""),
            r#"{"behavior":"allow","updatedInput":{"command":"git push"}}"#
        );
        assert_eq!(
            answer(false, &call, "no"),
            r#"{"behavior":"deny","message":"no"}"#
        );
        assert!(tool_use(&json!({"input": {}})).is_none());
    }
}
