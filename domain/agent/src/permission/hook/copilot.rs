//! Copilot CLI's `preToolUse` hook (1.0.102): the event and the answer.
//!
//! Copilot sends `{"toolName", "toolArgs", "cwd", …}` on stdin before every tool call, one
//! of a name it does not know included (real events: `tests/fixtures/hooks/copilot/`;
//! `toolArgs` is an object, or a JSON string in older releases). Its names:
//!
//! | Copilot | read as | input |
//! |---|---|---|
//! | `bash` | `Bash` | `command` |
//! | `write_bash` | `Bash` | what it types, as `command` |
//! | `read_bash`, `stop_bash` | `BashOutput`, `KillShell` | as given |
//! | `view` | `Read` | `file_path` (its `path`, against `cwd`) |
//! | `create` | `Write` | `file_path` |
//! | `edit` | `Edit` | `file_path` |
//! | `grep`, `glob` | `Grep`, `Glob` | `pattern`, and `path` |
//! | `task` | `Agent` | `subagent_type` (its `agent_type`), `prompt` |
//! | `skill` | `Skill` | `skill` |
//! | `web_fetch`, `web_search` | `WebFetch`, `WebSearch` | `url`, `query` |
//! | `write_agent`, `list_agents` | `SendMessage`, `ListAgents` | as given |
//! | `SERVER-TOOL` (an MCP tool) | `mcp__SERVER__TOOL` | as given |
//! | any other (`sql`, `list_bash`, …) | its own name | as given |
//!
//! Copilot names an MCP tool `SERVER-TOOL`; its own tools have no `-`. The server is
//! read as the part before the first `-`, so a role with `permissions` on Copilot may not
//! use a server whose name has one (`executor/copilot.rs` refuses it).
//!
//! The answer: allow is exit 0 with nothing printed; deny is
//! `{"permissionDecision":"deny","permissionDecisionReason":…}` and exit 2, which Copilot
//! reads as a deny either way (the JSON gives the model the reason). Copilot denies on
//! any other non-zero exit too, but runs the call when the hook times out or prints what
//! it cannot read with exit 0.

use serde_json::{Map, Value, json};

use super::{HookAnswer, absolute, mcp_call, reason_given, tool_name};
use crate::permission::ToolUse;

pub(super) fn tool_use(event: &Value) -> Result<ToolUse, String> {
    let name = tool_name(event.get("toolName"))?;
    let args = match event.get("toolArgs") {
        Some(Value::String(text)) => serde_json::from_str(text)
            .map_err(|e| format!("the tool's arguments do not read as JSON: {e}"))?,
        Some(args) => args.clone(),
        None => Value::Null,
    };
    let cwd = event.get("cwd").and_then(Value::as_str);
    let call = |tool: &str, input: Value| ToolUse {
        tool: tool.to_owned(),
        input,
    };
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let file = |tool: &str| match text("path").and_then(|path| absolute(path, cwd)) {
        Some(path) => call(tool, json!({ "file_path": path })),
        None => call(tool, json!({ "path_given": args.get("path") })),
    };
    Ok(match name {
        "bash" => match text("command") {
            Some(command) => call("Bash", json!({ "command": command })),
            None => return Err("the shell call carries no command".to_owned()),
        },
        "write_bash" => call(
            "Bash",
            json!({ "command": text("input").unwrap_or_default(), "shell": args.get("shellId") }),
        ),
        "read_bash" => call("BashOutput", args),
        "stop_bash" => call("KillShell", args),
        "view" => file("Read"),
        "create" => file("Write"),
        "edit" => file("Edit"),
        "grep" | "glob" => {
            let mut input = Map::new();
            if let Some(pattern) = text("pattern") {
                input.insert("pattern".to_owned(), pattern.into());
            }
            if let Some(path) = text("path").and_then(|path| absolute(path, cwd)) {
                input.insert("path".to_owned(), path.into());
            }
            call(if name == "grep" { "Grep" } else { "Glob" }, input.into())
        }
        "task" => {
            let mut agent = Map::new();
            if let Some(kind) = text("agent_type") {
                agent.insert("subagent_type".to_owned(), kind.into());
            }
            if let Some(prompt) = text("prompt") {
                agent.insert("prompt".to_owned(), prompt.into());
            }
            call("Agent", agent.into())
        }
        "skill" => call("Skill", json!({ "skill": text("skill") })),
        "web_fetch" => call("WebFetch", json!({ "url": text("url") })),
        "web_search" => call("WebSearch", json!({ "query": text("query") })),
        "write_agent" => call("SendMessage", args),
        "list_agents" => call("ListAgents", args),
        mcp if mcp.contains('-') => {
            let (server, tool) = mcp.split_once('-').unwrap_or((mcp, ""));
            mcp_call(server, tool, args)
        }
        other => call(other, args),
    })
}

pub(super) fn answer(allow: bool, reason: &str) -> HookAnswer {
    if allow {
        return HookAnswer::silent_allow();
    }
    let reason = reason_given(reason);
    HookAnswer {
        stdout: json!({"permissionDecision": "deny", "permissionDecisionReason": reason})
            .to_string(),
        stderr: reason.to_owned(),
        exit: 2,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{answer, tool_use};
    use crate::permission::{Decision, Permissions, ToolUse};

    /// Real events, one a line, written by Copilot CLI 1.0.102 (`copilot --output-format
    /// json --allow-all` against a fake Responses API scripting each call, the hook a
    /// script in `settings.json` appending its stdin to a file); `decide` is a name
    /// Copilot does not know, `files-decide` a stdio MCP server's tool.
    const EVENTS: &str = include_str!("../../../tests/fixtures/hooks/copilot/pre_tool_use.jsonl");

    fn read(tool_name: &str) -> ToolUse {
        let event: Value = EVENTS
            .lines()
            .map(|line| serde_json::from_str(line).expect("event"))
            .find(|event: &Value| event["toolName"] == tool_name)
            .unwrap_or_else(|| panic!("no {tool_name} event"));
        tool_use(&event).expect("reads")
    }

    #[test]
    fn real_events_read_as_claude_code_calls() {
        let bash = read("bash");
        assert_eq!(
            (bash.tool.as_str(), &bash.input),
            ("Bash", &json!({"command": "git push origin main"}))
        );
        let file = json!({"file_path": "/tmp/cx/c4/work/new.txt"});
        assert_eq!(
            (read("create").tool.as_str(), &read("create").input),
            ("Write", &file)
        );
        assert_eq!(
            (read("edit").tool.as_str(), &read("edit").input),
            ("Edit", &file)
        );
        assert_eq!(read("view").tool, "Read");
        assert_eq!(read("view").input["file_path"], "/tmp/cx/c4/work/notes.txt");
        assert_eq!(read("grep").tool, "Grep");
        assert_eq!(read("grep").input["path"], "/tmp/cx/c4/work");
        assert_eq!(read("glob").input, json!({"pattern": "**/*.txt"}));
        assert_eq!(read("task").tool, "Agent");
        assert_eq!(read("task").input["subagent_type"], "explore");
        assert_eq!(read("read_bash").tool, "BashOutput");
        assert_eq!(read("stop_bash").tool, "KillShell");
        assert_eq!(read("skill").tool, "Skill");
        assert_eq!(read("sql").tool, "sql");
        let mcp = read("files-decide");
        assert_eq!(mcp.tool, "mcp__files__decide");
        assert_eq!(mcp.input, json!({"tool_name": "x", "input": {"a": 1}}));
        assert_eq!(read("decide").tool, "decide");
    }

    #[test]
    fn one_policy_decides_copilot_calls() {
        let policy: Permissions = serde_json::from_value(json!({
            "allow": ["Read", "Edit(work/*)"],
            "ask": ["Bash(git push*)", "mcp__files"],
            "deny": ["Read(*.txt)"],
            "default": "deny",
        }))
        .expect("policy");
        let decide = |name: &str| policy.decide(&read(name)).decision;
        assert_eq!(decide("bash"), Decision::Ask);
        assert_eq!(decide("files-decide"), Decision::Ask);
        assert_eq!(decide("view"), Decision::Deny);
        assert_eq!(decide("create"), Decision::Allow);
        assert_eq!(decide("sql"), Decision::Deny);
        let typed =
            json!({"toolName": "write_bash", "toolArgs": {"shellId": "1", "input": "git push\n"}});
        assert_eq!(
            policy.decide(&tool_use(&typed).expect("typed")).decision,
            Decision::Ask
        );
    }

    #[test]
    fn odd_events_read_safely_or_not_at_all() {
        assert!(tool_use(&json!("garbage")).is_err());
        assert!(tool_use(&json!({"toolName": "bash", "toolArgs": {}})).is_err());
        assert!(tool_use(&json!({"toolName": "bash", "toolArgs": "{not json"})).is_err());
        let string = json!({"toolName": "bash", "toolArgs": "{\"command\":\"ls\"}"});
        assert_eq!(
            tool_use(&string).expect("string args").input["command"],
            "ls"
        );
        let relative = json!({"toolName": "edit", "toolArgs": {"path": "a.rs"}});
        let deny: Permissions =
            serde_json::from_value(json!({"deny": ["Edit(/w/*)"]})).expect("policy");
        assert_eq!(
            deny.decide(&tool_use(&relative).expect("edit")).decision,
            Decision::Deny
        );
    }

    #[test]
    fn answers_are_what_copilot_reads() {
        let allow = answer(true, "fine");
        assert_eq!((allow.stdout.as_str(), allow.exit), ("", 0));
        let deny = answer(false, "a person said no");
        assert_eq!(deny.exit, 2);
        let said: Value = serde_json::from_str(&deny.stdout).expect("JSON");
        assert_eq!(
            said,
            json!({"permissionDecision": "deny", "permissionDecisionReason": "a person said no"})
        );
        assert!(answer(false, "").stdout.contains(super::super::NO_REASON));
    }
}
