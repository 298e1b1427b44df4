//! OpenCode's tool calls, as the plugin Gatehouse writes for it
//! (`executor/opencode/permissions.js`) sends them: `{"tool": ID, "args": {...}, "mcp":
//! [SERVER, ...]}` — the tool's id and arguments exactly as OpenCode hands them to
//! `"tool.execute.before"`, and the role's MCP servers, whose tools OpenCode names
//! `SERVER_TOOL` (each name's characters other than `[A-Za-z0-9_-]` made `_`).
//!
//! | OpenCode | read as | input |
//! |---|---|---|
//! | `bash` | `Bash` | `command` (`description`, `workdir`, `timeout` kept) |
//! | `read` | `Read` | `file_path` ← `filePath` |
//! | `edit` | `Edit` | `file_path` ← `filePath`, `old_string`, `new_string` |
//! | `write` | `Write` | `file_path` ← `filePath`, `content` |
//! | `apply_patch` | `Edit` | the one file its patch touches, else no path |
//! | `glob` / `grep` / `list` | `Glob` / `Grep` / `LS` | `pattern`, `path` (`glob` ← `include`) |
//! | `webfetch` | `WebFetch` | `url` |
//! | `websearch`, `codesearch` | `WebSearch` | `query` |
//! | `task` | `Task` | `subagent_type`, `description`, `prompt` |
//! | `skill` | `Skill` | `skill` ← `name` |
//! | `todowrite` | `TodoWrite` | `todos` |
//! | `question` | `AskUserQuestion` | `questions` |
//! | `plan_exit` | `ExitPlanMode` | — |
//! | `SERVER_TOOL` | `mcp__SERVER__TOOL` | the arguments |
//! | anything else (`lsp`, `invalid`, `list_mcp_resources`, `read_mcp_resource`, …) | its own id | the arguments |
//!
//! An own id is no rule's tool name, so `default` decides such a call. A patch touching
//! several files carries no `file_path`: a patterned `Edit` rule holds it on the deny and
//! ask side only. The answer is `{"decision": "allow"}` with exit status 0, or `{"decision":
//! "deny", "reason": ...}` with status 2; the plugin allows nothing else.

use serde_json::{Map, Value, json};

use super::{HookAnswer, mcp_call, reason_given, tool_name};
use crate::permission::ToolUse;

/// The status of a deny (the plugin reads only 0 with an allow as allow).
const DENY_STATUS: i32 = 2;

/// The most files of a patch read for its path.
const MAX_PATCH_FILES: usize = 64;

/// The call an OpenCode event describes.
pub(super) fn tool_use(event: &Value) -> Result<ToolUse, String> {
    call(event, |_, _| None)
}

/// The call an event describes, `own` naming a fork's own tools first (from the tool's id
/// and arguments), then MCP tools, then OpenCode's.
pub(super) fn call(
    event: &Value,
    own: fn(&str, &Map<String, Value>) -> Option<ToolUse>,
) -> Result<ToolUse, String> {
    let tool = tool_name(event.get("tool"))?;
    let empty = Map::new();
    let args = match event.get("args") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(args)) => args,
        Some(_) => return Err(format!("the arguments of `{tool}` are not an object")),
    };
    let servers = match event.get("mcp") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(names)) => names
            .iter()
            .map(|name| name.as_str().ok_or("an MCP server's name is not a string"))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("the event's MCP servers are not a list".to_owned()),
    };
    if let Some(call) = mcp(tool, args, &servers) {
        return Ok(call);
    }
    if let Some(call) = own(tool, args) {
        return Ok(call);
    }
    builtin(tool, args)
}

/// `SERVER_TOOL` as `mcp__SERVER__TOOL`, for the longest server name that prefixes it
/// (OpenCode lets an MCP tool replace a built-in one of the same id, so MCP comes first).
fn mcp(tool: &str, args: &Map<String, Value>, servers: &[&str]) -> Option<ToolUse> {
    servers
        .iter()
        .filter_map(|server| {
            let rest = tool.strip_prefix(&format!("{}_", sanitize(server)))?;
            (!rest.is_empty()).then_some((server, rest))
        })
        .max_by_key(|(server, _)| server.len())
        .map(|(server, rest)| mcp_call(server, rest, Value::Object(args.clone())))
}

/// As OpenCode makes a server's name part of a tool id.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect()
}

/// OpenCode's own tools.
fn builtin(tool: &str, args: &Map<String, Value>) -> Result<ToolUse, String> {
    let call = |name: &str, input: Value| {
        Ok(ToolUse {
            tool: name.to_owned(),
            input,
        })
    };
    match tool {
        "bash" => {
            let command = text(args, "command").ok_or("`bash` has no command")?;
            let mut input = json!({ "command": command });
            copy(args, &mut input, &[("description", "description")]);
            copy(
                args,
                &mut input,
                &[("workdir", "workdir"), ("timeout", "timeout")],
            );
            call("Bash", input)
        }
        "read" => call(
            "Read",
            file(args, tool, &[("offset", "offset"), ("limit", "limit")])?,
        ),
        "edit" => call(
            "Edit",
            file(
                args,
                tool,
                &[
                    ("oldString", "old_string"),
                    ("newString", "new_string"),
                    ("replaceAll", "replace_all"),
                ],
            )?,
        ),
        "write" => call("Write", file(args, tool, &[("content", "content")])?),
        "apply_patch" => {
            let patch = text(args, "patchText").ok_or("`apply_patch` has no patch")?;
            let files = patch_files(patch);
            let input = match files.as_slice() {
                [one] => json!({ "file_path": one }),
                _ => json!({ "files": files }),
            };
            call("Edit", input)
        }
        "glob" => call(
            "Glob",
            renamed(args, &[("pattern", "pattern"), ("path", "path")]),
        ),
        "grep" => call(
            "Grep",
            renamed(
                args,
                &[
                    ("pattern", "pattern"),
                    ("path", "path"),
                    ("include", "glob"),
                ],
            ),
        ),
        "list" => call("LS", renamed(args, &[("path", "path")])),
        "webfetch" => call(
            "WebFetch",
            renamed(args, &[("url", "url"), ("format", "format")]),
        ),
        "websearch" | "codesearch" => call("WebSearch", renamed(args, &[("query", "query")])),
        "task" => call(
            "Task",
            renamed(
                args,
                &[
                    ("subagent_type", "subagent_type"),
                    ("description", "description"),
                    ("prompt", "prompt"),
                ],
            ),
        ),
        "skill" => call("Skill", renamed(args, &[("name", "skill")])),
        "todowrite" => call("TodoWrite", renamed(args, &[("todos", "todos")])),
        "question" => call("AskUserQuestion", Value::Object(args.clone())),
        "plan_exit" => call("ExitPlanMode", Value::Object(args.clone())),
        _ => call(tool, Value::Object(args.clone())),
    }
}

/// A string argument.
fn text<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// `{"file_path": filePath, ...}` for a file tool, which must name its file.
fn file(args: &Map<String, Value>, tool: &str, more: &[(&str, &str)]) -> Result<Value, String> {
    let path = text(args, "filePath").ok_or_else(|| format!("`{tool}` names no file"))?;
    let mut input = json!({ "file_path": path });
    copy(args, &mut input, more);
    Ok(input)
}

/// The arguments `names` names, under Claude Code's names.
fn renamed(args: &Map<String, Value>, names: &[(&str, &str)]) -> Value {
    let mut input = json!({});
    copy(args, &mut input, names);
    input
}

/// Copies each `(from, to)` argument present into `input` as `to`.
fn copy(args: &Map<String, Value>, input: &mut Value, names: &[(&str, &str)]) {
    if let Some(object) = input.as_object_mut() {
        for (from, to) in names {
            if let Some(value) = args.get(*from) {
                object.insert((*to).to_owned(), value.clone());
            }
        }
    }
}

/// The files a patch (`*** Add File: p`, `*** Update File: p`, `*** Delete File: p`,
/// `*** Move to: p`) touches, at most [`MAX_PATCH_FILES`] + 1 (more reads as several).
fn patch_files(patch: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for line in patch.lines() {
        let line = line.trim();
        let path = [
            "*** Add File:",
            "*** Update File:",
            "*** Delete File:",
            "*** Move to:",
        ]
        .iter()
        .find_map(|marker| line.strip_prefix(marker));
        if let Some(path) = path.map(str::trim).filter(|path| !path.is_empty()) {
            if !files.iter().any(|known| known == path) {
                files.push(path.to_owned());
            }
            if files.len() > MAX_PATCH_FILES {
                break;
            }
        }
    }
    files
}

/// What the plugin reads: an allow, or a deny with the reason the model is told.
pub(super) fn answer(allow: bool, reason: &str) -> HookAnswer {
    HookAnswer::decision(allow, reason_given(reason), DENY_STATUS)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{answer, tool_use};
    use crate::permission::{Permissions, ToolUse};

    /// Events the plugin sent from the real OpenCode 1.18.33 (the folder's README.md).
    const EVENTS: &str = include_str!("../../../tests/fixtures/hooks/opencode/events.jsonl");

    fn events() -> Vec<Value> {
        EVENTS
            .lines()
            .map(|line| serde_json::from_str(line).expect("an event"))
            .collect()
    }

    fn call(tool: &str, input: Value) -> ToolUse {
        ToolUse {
            tool: tool.to_owned(),
            input,
        }
    }

    #[test]
    fn real_events_read_as_claude_code_calls() {
        let calls: Vec<ToolUse> = events()
            .iter()
            .map(|event| tool_use(event).expect("reads"))
            .collect();
        let dir = "/tmp/okx/cap/work-opencode";
        assert_eq!(
            calls,
            [
                call(
                    "Bash",
                    json!({"command": "touch made.txt", "description": "Make a file", "workdir": "/tmp"})
                ),
                call("Read", json!({"file_path": format!("{dir}/notes.txt")})),
                call(
                    "Write",
                    json!({"file_path": format!("{dir}/new.txt"), "content": "hi"})
                ),
                call(
                    "Edit",
                    json!({"file_path": format!("{dir}/notes.txt"), "old_string": "hello", "new_string": "bye"})
                ),
                call("Glob", json!({"pattern": "*.txt"})),
                call("Grep", json!({"pattern": "bye", "glob": "*.txt"})),
                call(
                    "WebFetch",
                    json!({"url": "http://127.0.0.1:9/x", "format": "text"})
                ),
                call("mcp__every thing__echo", json!({"message": "hi"})),
                call("Skill", json!({"skill": "nothing"})),
                call(
                    "TodoWrite",
                    json!({"todos": [{"content": "a", "status": "pending", "priority": "high", "id": "1"}]})
                ),
            ]
        );
    }

    #[test]
    fn one_policy_reads_the_mapped_calls() {
        let permissions: Permissions = serde_json::from_value(json!({
            "allow": ["Bash(touch *)", "Edit(/tmp/**)", "mcp__*__echo"],
            "ask": ["WebFetch"],
            "deny": ["Read(*notes.txt)"],
            "default": "deny",
        }))
        .expect("permissions");
        let decisions: Vec<String> = events()
            .iter()
            .map(|event| {
                let call = tool_use(event).expect("reads");
                format!("{:?}", permissions.decide(&call).decision)
            })
            .collect();
        assert_eq!(
            decisions,
            [
                "Allow", "Deny", "Allow", "Allow", "Deny", "Deny", "Ask", "Allow", "Deny", "Deny"
            ]
        );
    }

    #[test]
    fn mcp_tools_take_the_longest_server_name_and_win_over_built_ins() {
        let event = json!({"tool": "git_hub_create_issue", "args": {"title": "x"}, "mcp": ["git", "git_hub"]});
        assert_eq!(
            tool_use(&event),
            Ok(call("mcp__git_hub__create_issue", json!({"title": "x"})))
        );
        let shadow = json!({"tool": "apply_patch", "args": {}, "mcp": ["apply"]});
        assert_eq!(tool_use(&shadow), Ok(call("mcp__apply__patch", json!({}))));
        let no_server = json!({"tool": "github_create_issue", "args": {}});
        assert_eq!(
            tool_use(&no_server),
            Ok(call("github_create_issue", json!({})))
        );
    }

    #[test]
    fn a_patch_names_its_one_file_and_several_name_none() {
        let one = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch";
        let event = json!({"tool": "apply_patch", "args": {"patchText": one}});
        assert_eq!(
            tool_use(&event),
            Ok(call("Edit", json!({"file_path": "src/a.rs"})))
        );
        let two = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n*** Move to: secrets/c.txt\n*** End Patch";
        let event = json!({"tool": "apply_patch", "args": {"patchText": two}});
        let read = tool_use(&event).expect("reads");
        assert_eq!(
            read.input,
            json!({"files": ["a.txt", "b.txt", "secrets/c.txt"]})
        );
        let permissions: Permissions =
            serde_json::from_value(json!({"allow": ["Edit"], "deny": ["Edit(secrets/*)"]}))
                .expect("permissions");
        assert_eq!(
            format!("{:?}", permissions.decide(&read).decision),
            "Deny",
            "a path rule cannot vouch for several files"
        );
    }

    #[test]
    fn events_that_do_not_read_are_errors() {
        for event in [
            json!(null),
            json!({}),
            json!({"tool": ""}),
            json!({"tool": 7}),
            json!({"tool": "bash", "args": "rm -rf /"}),
            json!({"tool": "bash", "args": {}}),
            json!({"tool": "bash", "args": {"command": ["rm"]}}),
            json!({"tool": "read", "args": {"path": "/etc/passwd"}}),
            json!({"tool": "apply_patch", "args": {}}),
            json!({"tool": "bash", "args": {"command": "ls"}, "mcp": "github"}),
            json!({"tool": "bash", "args": {"command": "ls"}, "mcp": [1]}),
        ] {
            assert!(tool_use(&event).is_err(), "{event}");
        }
    }

    #[test]
    fn only_an_allow_with_status_zero_is_an_allow() {
        let allow = answer(true, "");
        assert_eq!(allow.exit, 0);
        assert_eq!(
            serde_json::from_str::<Value>(&allow.stdout).expect("json"),
            json!({"decision": "allow"})
        );
        let deny = answer(false, "a person said no");
        assert_eq!(deny.exit, 2);
        assert_eq!(
            serde_json::from_str::<Value>(&deny.stdout).expect("json"),
            json!({"decision": "deny", "reason": "a person said no"})
        );
        assert_eq!(deny.stderr, "a person said no");
        let silent = answer(false, " ");
        assert!(silent.stdout.contains("Gatehouse denied the call"));
    }
}
