//! An ACP agent's `session/request_permission`, read as Claude Code tool calls so one policy
//! answers every agent. The request's `toolCall` has a `kind` (the protocol's list), a
//! `title`, the paths it touches (`locations`) and, from most agents, the tool's own
//! arguments (`rawInput`):
//!
//! | kind | read as | main input |
//! |---|---|---|
//! | `execute` | `Bash` | `rawInput.command` (a string, or argv joined), else the title |
//! | `read` | `Read` | each path |
//! | `edit`, `delete`, `move` | `Edit` | each path (a move's source and target) |
//! | `search` | `Grep` | its path, if any |
//! | `fetch` | `WebFetch`, or `WebSearch` for a query without a URL | `url` / `query` |
//! | `think`, `switch_mode`, `other`, none | the title when it is an `mcp__…` name, else `Other` | — |
//!
//! A call with nothing for a rule to match (an edit naming no path) carries its `title`
//! alone: a patterned rule cannot vouch for it, and the trace can still say what it was.

use serde_json::{Value, json};

use super::ToolUse;

/// The most paths of one request read; past them the request is decided as one call
/// with no path (which a deny or ask rule about paths holds against).
const MAX_PATHS: usize = 16;

/// The keys agents put a path under in `rawInput`.
const PATH_KEYS: [&str; 6] = [
    "file_path",
    "filePath",
    "path",
    "absolute_path",
    "abs_path",
    "notebook_path",
];

/// A request's `params`, as the calls [`super::Permissions::decide_all`] decides: one per
/// path a file tool touches, else one.
pub fn tool_uses(params: &Value) -> Vec<ToolUse> {
    let call = params.get("toolCall").unwrap_or(&Value::Null);
    let raw = call.get("rawInput").unwrap_or(&Value::Null);
    let kind = call.get("kind").and_then(Value::as_str).unwrap_or("other");
    let title = call
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let one = |tool: &str, input: Value| {
        vec![ToolUse {
            tool: tool.to_owned(),
            input,
        }]
    };
    match kind {
        "execute" => {
            let command = match raw.get("command").or_else(|| raw.get("cmd")) {
                Some(Value::String(command)) => command.clone(),
                Some(Value::Array(argv)) => argv
                    .iter()
                    .map(|word| word.as_str().unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => title.to_owned(),
            };
            one("Bash", json!({ "command": command }))
        }
        "read" | "edit" | "delete" | "move" | "search" => {
            let tool = match kind {
                "read" => "Read",
                "search" => "Grep",
                _ => "Edit",
            };
            let paths = paths(call, raw);
            if paths.is_empty() || paths.len() > MAX_PATHS {
                // No path a rule could vouch for; the title says what it was, for the trace.
                return one(tool, json!({ "title": title }));
            }
            paths
                .into_iter()
                .map(|path| ToolUse {
                    tool: tool.to_owned(),
                    input: json!({ "file_path": path }),
                })
                .collect()
        }
        "fetch" => match (raw.get("url"), raw.get("query")) {
            (Some(Value::String(url)), _) => one("WebFetch", json!({ "url": url })),
            (_, Some(Value::String(query))) => one("WebSearch", json!({ "query": query })),
            _ => one("WebFetch", json!({ "title": title })),
        },
        _ if title.starts_with("mcp__") && !title.contains(char::is_whitespace) => {
            one(title, raw.clone())
        }
        _ => one("Other", json!({ "title": title })),
    }
}

/// Every path the call names, in `locations` and `rawInput`, without repeats.
fn paths(call: &Value, raw: &Value) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    let locations = call.get("locations").and_then(Value::as_array);
    let from_locations = locations
        .into_iter()
        .flatten()
        .filter_map(|location| location.get("path")?.as_str());
    let from_input = PATH_KEYS
        .iter()
        .chain(&[
            "source",
            "destination",
            "from",
            "to",
            "old_path",
            "new_path",
        ])
        .filter_map(|key| raw.get(key)?.as_str());
    for path in from_locations.chain(from_input) {
        if !paths.iter().any(|p| p == path) {
            paths.push(path.to_owned());
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::tool_uses;
    use crate::permission::{Decision, Permissions};

    #[test]
    fn each_kind_becomes_a_claude_code_tool() {
        let execute = json!({"toolCall": {"kind": "execute", "title": "git push", "rawInput": {"command": "git push --force"}}});
        assert_eq!(tool_uses(&execute)[0].tool, "Bash");
        assert_eq!(tool_uses(&execute)[0].input["command"], "git push --force");
        let argv =
            json!({"toolCall": {"kind": "execute", "rawInput": {"command": ["rm", "-rf", "x"]}}});
        assert_eq!(tool_uses(&argv)[0].input["command"], "rm -rf x");
        let titled = json!({"toolCall": {"kind": "execute", "title": "ls -la"}});
        assert_eq!(tool_uses(&titled)[0].input["command"], "ls -la");
        let moved = json!({"toolCall": {"kind": "move", "locations": [{"path": "/w/a"}], "rawInput": {"destination": "/w/secrets/a"}}});
        let uses = tool_uses(&moved);
        assert_eq!(uses.len(), 2);
        assert!(uses.iter().all(|u| u.tool == "Edit"));
        let fetch = json!({"toolCall": {"kind": "fetch", "rawInput": {"url": "https://x.io/"}}});
        assert_eq!(tool_uses(&fetch)[0].tool, "WebFetch");
        let search = json!({"toolCall": {"kind": "fetch", "rawInput": {"query": "rust"}}});
        assert_eq!(tool_uses(&search)[0].tool, "WebSearch");
        let mcp = json!({"toolCall": {"kind": "other", "title": "mcp__files__write_file"}});
        assert_eq!(tool_uses(&mcp)[0].tool, "mcp__files__write_file");
        assert_eq!(tool_uses(&json!("garbage"))[0].tool, "Other");
    }

    #[test]
    fn one_policy_answers_acp_requests() {
        let policy: Permissions = serde_json::from_value(json!({
            "allow": ["Edit(src/*)"],
            "ask": ["Bash(git push*)"],
            "deny": ["Edit(secrets/*)"],
            "default": "deny",
        }))
        .expect("policy");
        let decide = |params: serde_json::Value| policy.decide_all(&tool_uses(&params)).decision;
        assert_eq!(
            decide(json!({"toolCall": {"kind": "edit", "locations": [{"path": "/w/src/a.rs"}]}})),
            Decision::Allow
        );
        assert_eq!(
            decide(
                json!({"toolCall": {"kind": "move", "locations": [{"path": "/w/src/a"}], "rawInput": {"to": "/w/secrets/a"}}})
            ),
            Decision::Deny
        );
        assert_eq!(
            decide(
                json!({"toolCall": {"kind": "execute", "rawInput": {"command": "cd x && git push"}}})
            ),
            Decision::Ask
        );
        // An edit naming no path cannot be vouched for by a path rule.
        assert_eq!(
            decide(json!({"toolCall": {"kind": "edit"}})),
            Decision::Deny
        );
    }
}
