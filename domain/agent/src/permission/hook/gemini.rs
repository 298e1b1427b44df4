//! Gemini CLI's `BeforeTool` hook (`@google/gemini-cli` 0.61).
//!
//! Before every tool call — its own, a sub-agent's, an MCP server's — the CLI runs each
//! command of `hooks.BeforeTool` in `~/.gemini/settings.json` under `bash -c`, with the
//! event on stdin:
//!
//! ```json
//! {"session_id": "…", "transcript_path": "…", "cwd": "/work", "hook_event_name": "BeforeTool",
//!  "timestamp": "…", "tool_name": "run_shell_command",
//!  "tool_input": {"command": "git push origin main", "description": "push", "dir_path": "src"}}
//! ```
//!
//! An MCP tool is `mcp_SERVER_TOOL` with `mcp_context: {server_name, tool_name, …}` beside it
//! (real events: `tests/fixtures/hooks/gemini/before_tool.jsonl`). The CLI reads the
//! command's stdout as JSON: `{"decision": "deny" | "block", "reason"}` refuses the call
//! and the model reads `Tool execution blocked: <reason>`; anything else lets it run. So
//! does almost every failure (`hookRunner.js`, `coreToolHookTriggers.js`): a time-out, a
//! hook that exits non-zero with nothing printed, exit 1 with text (a "warning"), stdout
//! that is not JSON under exit 0. Only exit 2 or more *with* text denies by itself. The
//! answer is therefore always exit 0 with the JSON decision, and the executor wraps the
//! command so that any other outcome prints a deny and exits 2
//! (`executor/gemini.rs`), and gives it a time-out the attempt never reaches.
//!
//! | Gemini tool | read as | input |
//! |---|---|---|
//! | `run_shell_command` | `Bash` | `command` (and `dir_path`, `description`) |
//! | `read_file` | `Read` | `file_path` |
//! | `read_many_files` | `Read` | `include` — no `file_path`, so only a bare `Read` allows it |
//! | `write_file` | `Write` | `file_path` |
//! | `replace` | `Edit` | `file_path` |
//! | `list_directory` | `LS` | `path` |
//! | `glob` | `Glob` | `pattern`, `path` |
//! | `grep_search` | `Grep` | `pattern`, `path` |
//! | `web_fetch` | `WebFetch` | `url` when its prompt names one URL, else `prompt` alone |
//! | `google_web_search` | `WebSearch` | `query` |
//! | `write_todos` | `TodoWrite` | as given |
//! | `invoke_agent` | `Task` | `subagent_type` = `agent_name`, `prompt` |
//! | `activate_skill` | `Skill` | `skill` = `name` |
//! | `ask_user`, `enter_plan_mode`, `exit_plan_mode` | `AskUserQuestion`, `EnterPlanMode`, `ExitPlanMode` | as given |
//! | `list_background_processes`, `read_background_output` | `BashOutput` | as given |
//! | `mcp_S_T` with `mcp_context` | `mcp__S__T` | as given |
//! | any other (`update_topic`, `complete_task`, `get_internal_docs`, `tracker_*`, …) | its own name | as given |
//!
//! Relative paths are made absolute against the event's `cwd`, as Claude Code gives them. A
//! tool under its own name matches no rule, so `default` decides it.

use serde_json::{Map, Value, json};

use super::{HookAnswer, mcp_call, tool_name};
use crate::permission::ToolUse;

/// As `gatehouse-acp hook` is given it.
pub(super) const NAME: &str = "gemini";

/// The call a `BeforeTool` event describes.
pub(super) fn tool_use(event: &Value) -> Result<ToolUse, String> {
    let event = event
        .as_object()
        .ok_or("Gemini CLI's hook event is not a JSON object")?;
    match event.get("hook_event_name").and_then(Value::as_str) {
        Some("BeforeTool") => {}
        other => return Err(format!("the hook event is {other:?}, not BeforeTool")),
    }
    let name = tool_name(event.get("tool_name"))?;
    let input = match event.get("tool_input") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(input)) => input.clone(),
        Some(_) => return Err(format!("the arguments of {name} are not a JSON object")),
    };
    let cwd = event.get("cwd").and_then(Value::as_str).unwrap_or_default();
    if let Some(context) = event.get("mcp_context") {
        return mcp(name, context, input);
    }
    if name.starts_with("mcp_") {
        // Without its server, `mcp_a_b_c` cannot be split into server and tool.
        return Err(format!(
            "{name} looks like an MCP tool but the event does not say its server"
        ));
    }
    let path = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .map(|p| absolute(cwd, p))
    };
    let (tool, input) = match name {
        "run_shell_command" => {
            let command = input
                .get("command")
                .and_then(Value::as_str)
                .ok_or("run_shell_command has no command")?;
            let mut bash = Map::new();
            bash.insert("command".to_owned(), json!(command));
            for key in ["description", "dir_path"] {
                if let Some(value) = input.get(key) {
                    bash.insert(key.to_owned(), value.clone());
                }
            }
            ("Bash", Value::Object(bash))
        }
        "read_file" => ("Read", with_path("file_path", path("file_path"), json!({}))),
        "read_many_files" => ("Read", json!({"include": input.get("include")})),
        "write_file" => (
            "Write",
            with_path("file_path", path("file_path"), json!({})),
        ),
        "replace" => ("Edit", with_path("file_path", path("file_path"), json!({}))),
        "list_directory" => ("LS", with_path("path", path("dir_path"), json!({}))),
        "glob" | "grep_search" => {
            let pattern = json!({"pattern": input.get("pattern")});
            let tool = if name == "glob" { "Glob" } else { "Grep" };
            (tool, with_path("path", path("dir_path"), pattern))
        }
        "web_fetch" => ("WebFetch", web_fetch(&input)),
        "google_web_search" => ("WebSearch", json!({"query": input.get("query")})),
        "invoke_agent" => (
            "Task",
            json!({"subagent_type": input.get("agent_name"), "prompt": input.get("prompt")}),
        ),
        "activate_skill" => ("Skill", json!({"skill": input.get("name")})),
        _ => {
            let tool = match name {
                "write_todos" => "TodoWrite",
                "ask_user" => "AskUserQuestion",
                "enter_plan_mode" => "EnterPlanMode",
                "exit_plan_mode" => "ExitPlanMode",
                "list_background_processes" | "read_background_output" => "BashOutput",
                own => own,
            };
            (tool, Value::Object(input))
        }
    };
    Ok(ToolUse {
        tool: tool.to_owned(),
        input,
    })
}

/// `mcp__SERVER__TOOL`, from the server and tool the event's `mcp_context` names.
fn mcp(name: &str, context: &Value, input: Map<String, Value>) -> Result<ToolUse, String> {
    let part = |key: &str| {
        context
            .get(key)
            .and_then(Value::as_str)
            .filter(|part| !part.is_empty())
            .ok_or_else(|| format!("the MCP call {name} does not say its {key}"))
    };
    let (server, tool) = (part("server_name")?, part("tool_name")?);
    Ok(mcp_call(server, tool, Value::Object(input)))
}

/// `base` with `key` = `path`, when there is one.
fn with_path(key: &str, path: Option<String>, mut base: Value) -> Value {
    if let (Some(path), Some(object)) = (path, base.as_object_mut()) {
        object.insert(key.to_owned(), json!(path));
    }
    base
}

/// `path` against the event's working directory, unless it is absolute already (or the
/// event gives no absolute directory).
fn absolute(cwd: &str, path: &str) -> String {
    if path.starts_with('/') || !cwd.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{path}", cwd.trim_end_matches('/'))
    }
}

/// `web_fetch` takes a prompt and fetches every word of it that holds `://` (split on
/// JavaScript's `\s`). One such word that reads as an http(s) URL is the call's `url`, in
/// the form the CLI fetches (host decoded and lower-cased, `\` read as `/`, no trailing
/// dot); with none or several, the call carries the prompt alone and no `url`, which a
/// domain rule cannot vouch for.
fn web_fetch(input: &Map<String, Value>) -> Value {
    let prompt = input
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let words: Vec<&str> = prompt
        .split(|c: char| c.is_whitespace() || c == '\u{feff}')
        .filter(|word| word.contains("://"))
        .collect();
    let url = match words.as_slice() {
        [one] => canonical_url(one),
        _ => None,
    };
    match url {
        Some(url) => json!({"url": url, "prompt": prompt}),
        None => json!({"prompt": prompt}),
    }
}

/// An http(s) URL as a browser reads it, its host without a trailing dot.
fn canonical_url(word: &str) -> Option<String> {
    let mut url = url::Url::parse(word).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.to_owned();
    let trimmed = host.trim_end_matches('.');
    if trimmed.is_empty() {
        return None;
    }
    if trimmed != host {
        url.set_host(Some(trimmed)).ok()?;
    }
    Some(url.to_string())
}

/// Exit 0 and the decision as JSON: the one shape the CLI reads as both allow and deny.
pub(super) fn answer(allow: bool, reason: &str) -> HookAnswer {
    HookAnswer::decision(allow, reason, 0)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{answer, tool_use};
    use crate::permission::{Decision, Permissions, ToolUse};

    /// Events the real Gemini CLI 0.61.0 gave a `BeforeTool` hook, one per line, in the
    /// order of the calls (the last, a sub-agent's).
    const EVENTS: &str = include_str!("../../../tests/fixtures/hooks/gemini/before_tool.jsonl");

    fn captured() -> Vec<ToolUse> {
        EVENTS
            .lines()
            .map(|line| {
                let event: Value = serde_json::from_str(line).expect("a captured event");
                tool_use(&event).expect("a captured event reads")
            })
            .collect()
    }

    #[test]
    fn each_captured_call_reads_as_claude_code_names_it() {
        let uses = captured();
        let named: Vec<&str> = uses.iter().map(|u| u.tool.as_str()).collect();
        assert_eq!(
            named,
            [
                "Bash",
                "Write",
                "Read",
                "Edit",
                "LS",
                "Glob",
                "Grep",
                "WebFetch",
                "WebSearch",
                "TodoWrite",
                "mcp__every__echo",
                "update_topic",
                "BashOutput",
                "Task",
                "Read",
            ]
        );
        let work = "/tmp/gemcap/work";
        assert_eq!(
            uses[0].input,
            json!({"command": "git push origin main", "description": "push", "dir_path": "src"})
        );
        assert_eq!(
            uses[1].input,
            json!({"file_path": format!("{work}/src/w.txt")})
        );
        assert_eq!(uses[2].input["file_path"], format!("{work}/src/w.txt"));
        assert_eq!(uses[3].input["file_path"], format!("{work}/src/w.txt"));
        assert_eq!(uses[4].input, json!({"path": format!("{work}/src")}));
        assert_eq!(
            uses[5].input,
            json!({"pattern": "**/*.txt", "path": format!("{work}/src")})
        );
        assert_eq!(uses[7].input["url"], "https://example.com/a");
        assert_eq!(uses[8].input, json!({"query": "rust hooks"}));
        assert_eq!(uses[10].input, json!({"message": "hello"}));
        assert_eq!(uses[13].input["subagent_type"], "codebase_investigator");
    }

    #[test]
    fn one_policy_decides_the_captured_calls() {
        let policy: Permissions = serde_json::from_value(json!({
            "allow": ["Read", "Edit(src/**)", "Bash(git status*)"],
            "ask": ["Bash(git push*)", "mcp__*__echo"],
            "deny": ["WebFetch(domain:example.com)"],
            "default": "deny",
        }))
        .expect("policy");
        let decisions: Vec<Decision> = captured()
            .iter()
            .map(|call| policy.decide(call).decision)
            .collect();
        use Decision::{Allow, Ask, Deny};
        assert_eq!(
            decisions,
            [
                Ask, Allow, Allow, Allow, Allow, Allow, Allow, Deny, Deny, Deny, Ask, Deny, Deny,
                Deny, Allow
            ]
        );
    }

    #[test]
    fn events_that_do_not_read_are_refused() {
        let event = |value: Value| tool_use(&value);
        assert!(event(json!("garbage")).is_err());
        assert!(event(json!({"hook_event_name": "AfterTool", "tool_name": "read_file"})).is_err());
        assert!(event(json!({"hook_event_name": "BeforeTool"})).is_err());
        assert!(
            event(json!({"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": {}}))
                .is_err()
        );
        assert!(
            event(json!({"hook_event_name": "BeforeTool", "tool_name": "read_file", "tool_input": "x"}))
                .is_err()
        );
        // An MCP-looking name without its server cannot be held against `mcp__…` rules.
        let error = event(
            json!({"hook_event_name": "BeforeTool", "tool_name": "mcp_gh_push", "tool_input": {}}),
        )
        .unwrap_err();
        assert!(error.contains("server"), "{error}");
        assert!(
            event(json!({"hook_event_name": "BeforeTool", "tool_name": "mcp_gh_push", "mcp_context": {"server_name": "gh"}}))
                .is_err()
        );
    }

    #[test]
    fn a_fetch_names_its_url_only_when_there_is_exactly_one() {
        let fetch = |prompt: &str| {
            tool_use(&json!({"hook_event_name": "BeforeTool", "tool_name": "web_fetch", "tool_input": {"prompt": prompt}}))
                .expect("reads")
                .input
        };
        assert_eq!(
            fetch("see https://Docs.RS./x please")["url"],
            "https://docs.rs/x"
        );
        assert!(fetch("https://a.io and https://b.io").get("url").is_none());
        assert!(fetch("no link at all").get("url").is_none());
        // JavaScript splits on U+FEFF, so these are two URLs to the CLI.
        assert!(
            fetch("https://a.io\u{feff}https://evil.io")
                .get("url")
                .is_none()
        );
        // The host the CLI would reach, however it is spelled.
        assert_eq!(fetch("https://evil%2Eio/x")["url"], "https://evil.io/x");
        assert_eq!(
            fetch("https://evil.io\\@good.io/")["url"],
            "https://evil.io/@good.io/"
        );
        assert!(fetch("ftp://x.io/f").get("url").is_none());
        let policy: Permissions = serde_json::from_value(json!({
            "allow": ["WebFetch(domain:good.io)"], "deny": ["WebFetch(domain:evil.io)"], "default": "deny",
        }))
        .expect("policy");
        let decide = |prompt: &str| {
            let call = ToolUse {
                tool: "WebFetch".into(),
                input: fetch(prompt),
            };
            policy.decide(&call).decision
        };
        assert_eq!(decide("https://good.io/a"), Decision::Allow);
        assert_eq!(decide("https://evil%2Eio/x"), Decision::Deny);
        assert_eq!(decide("https://evil.io\\@good.io/"), Decision::Deny);
        assert_eq!(
            decide("https://good.io/a https://good.io/b"),
            Decision::Deny
        );
    }

    #[test]
    fn answers_are_the_decision_document_under_exit_zero() {
        let allow = answer(true, "fine");
        assert_eq!(allow.exit, 0);
        assert_eq!(
            serde_json::from_str::<Value>(&allow.stdout).expect("json"),
            json!({"decision": "allow"})
        );
        let deny = answer(false, "a person said no");
        assert_eq!(deny.exit, 0);
        assert_eq!(
            serde_json::from_str::<Value>(&deny.stdout).expect("json"),
            json!({"decision": "deny", "reason": "a person said no"})
        );
        assert_eq!(deny.stderr, "a person said no");
    }
}
