//! Codex's `PreToolUse` hook (0.171): the event and the answer.
//!
//! Codex sends `{"tool_name", "tool_input", "cwd", …}` on stdin before every tool it runs
//! itself, sub-agents' included (real events: `tests/fixtures/hooks/codex/`). Its names:
//!
//! | Codex | read as | input |
//! |---|---|---|
//! | `Bash` (`exec_command`) | `Bash` | `command` |
//! | `apply_patch` | `Write` (a patch adding one file) or `Edit` | `file_path`, from the patch's headers against `cwd` |
//! | `view_image` | `Read` | `file_path`, against `cwd` |
//! | `request_user_input` | `AskUserQuestion` | as given |
//! | `spawn_agent` | `Agent` | `subagent_type` (its `agent_type`), `prompt` (its `message`) |
//! | `send_input` | `SendMessage` | as given |
//! | `tool_search` | `ToolSearch` | as given |
//! | `mcp__SERVER__TOOL` | the same | as given |
//! | any other (`create_goal`, `wait_agent`, `read_mcp_resource`, …) | its own name | as given |
//!
//! A patch touching several files, or none Gatehouse can read, is an `Edit` with no
//! `file_path` (the paths go in `paths`, for the trace): a path rule that denies or asks
//! holds against it, one that allows cannot vouch for it.
//!
//! The answer: allow is exit 0 with nothing printed; deny is exit 2 with the reason on
//! stderr, which Codex hands the model ("Command blocked by PreToolUse hook: …"). Codex
//! runs the call on any other outcome — another exit status, a timeout, output it cannot
//! read, exit 2 with an empty stderr — so the deny always carries a reason, and the
//! command Codex runs ([`crate::executor`]'s Codex) turns every other exit of the shim
//! into exit 2 with a reason of its own.

use serde_json::{Map, Value, json};

use super::{HookAnswer, absolute, reason_given, tool_name};
use crate::permission::ToolUse;

/// The most of a patch shown with the call: the question to the runner is at most 64 KiB.
const MAX_PATCH_SHOWN: usize = 8 * 1024;

/// Paths of one patch read at most; past them it is decided as a patch with no path.
const MAX_PATHS: usize = 64;

pub(super) fn tool_use(event: &Value) -> Result<ToolUse, String> {
    let name = tool_name(event.get("tool_name"))?;
    let input = event.get("tool_input").cloned().unwrap_or(Value::Null);
    let cwd = event.get("cwd").and_then(Value::as_str);
    let call = |tool: &str, input: Value| ToolUse {
        tool: tool.to_owned(),
        input,
    };
    Ok(match name {
        "Bash" | "exec_command" | "shell" | "shell_command" | "local_shell" => {
            call("Bash", json!({ "command": command(&input)? }))
        }
        "apply_patch" => patch(&input, cwd),
        "view_image" => {
            let path = input.get("path").and_then(Value::as_str);
            match path.and_then(|path| absolute(path, cwd)) {
                Some(path) => call("Read", json!({ "file_path": path })),
                None => call("Read", json!({ "path_given": path })),
            }
        }
        "request_user_input" => call("AskUserQuestion", input),
        "spawn_agent" => {
            let mut agent = Map::new();
            if let Some(kind) = input.get("agent_type").and_then(Value::as_str) {
                agent.insert("subagent_type".to_owned(), kind.into());
            }
            if let Some(message) = input.get("message") {
                agent.insert("prompt".to_owned(), message.clone());
            }
            agent.insert("codex_input".to_owned(), input);
            call("Agent", Value::Object(agent))
        }
        "send_input" => call("SendMessage", input),
        "tool_search" => call("ToolSearch", input),
        other => call(other, input),
    })
}

pub(super) fn answer(allow: bool, reason: &str) -> HookAnswer {
    if allow {
        return HookAnswer::silent_allow();
    }
    HookAnswer {
        stdout: String::new(),
        stderr: reason_given(reason).to_owned(),
        exit: 2,
    }
}

/// A shell call's command: a string, or an argv joined by spaces.
fn command(input: &Value) -> Result<String, String> {
    match input.get("command").or_else(|| input.get("cmd")) {
        Some(Value::String(command)) => Ok(command.clone()),
        Some(Value::Array(argv)) => argv
            .iter()
            .map(|word| word.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(|words| words.join(" "))
            .ok_or_else(|| "the command's words are not all strings".to_owned()),
        _ => Err("the shell call carries no command".to_owned()),
    }
}

/// An `apply_patch` call: the files its headers name, as one `Write`/`Edit` when it is
/// one file.
fn patch(input: &Value, cwd: Option<&str>) -> ToolUse {
    let text = ["command", "input", "patch"]
        .iter()
        .find_map(|key| input.get(key)?.as_str())
        .unwrap_or_default();
    let mut paths: Vec<String> = Vec::new();
    let mut adds_only = true;
    let mut unreadable = false;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let (path, adds) = if let Some(path) = line.strip_prefix("*** Add File: ") {
            (path, true)
        } else if let Some(path) = ["*** Update File: ", "*** Delete File: ", "*** Move to: "]
            .iter()
            .find_map(|header| line.strip_prefix(header))
        {
            (path, false)
        } else {
            continue;
        };
        adds_only &= adds;
        match absolute(path.trim(), cwd) {
            Some(path) if !paths.contains(&path) => paths.push(path),
            Some(_) => {}
            None => unreadable = true,
        }
    }
    let tool = if adds_only && paths.len() == 1 {
        "Write"
    } else {
        "Edit"
    };
    let mut input = match paths.as_slice() {
        [one] if !unreadable => json!({ "file_path": one }),
        _ if paths.len() > MAX_PATHS => json!({ "paths": paths[..MAX_PATHS], "more_paths": true }),
        _ => json!({ "paths": paths }),
    };
    // What it would write, for the person asked and the trace; no rule reads it.
    input["patch"] = shown(text).into();
    ToolUse {
        tool: tool.to_owned(),
        input,
    }
}

/// The patch, cut at [`MAX_PATCH_SHOWN`] bytes (on a character's boundary).
fn shown(text: &str) -> String {
    if text.len() <= MAX_PATCH_SHOWN {
        return text.to_owned();
    }
    let mut end = MAX_PATCH_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{answer, tool_use};
    use crate::permission::{Decision, Permissions, ToolUse};

    /// Real events, one a line, written by Codex 0.171 (`codex exec` against a fake
    /// Responses API scripting each call, the hook a script appending its stdin to a file).
    const EVENTS: &str = include_str!("../../../tests/fixtures/hooks/codex/pre_tool_use.jsonl");

    fn events() -> Vec<Value> {
        EVENTS
            .lines()
            .map(|line| serde_json::from_str(line).expect("event"))
            .collect()
    }

    fn read(tool_name: &str) -> ToolUse {
        let event = events()
            .into_iter()
            .find(|event| event["tool_name"] == tool_name)
            .unwrap_or_else(|| panic!("no {tool_name} event"));
        tool_use(&event).expect("reads")
    }

    #[test]
    fn real_events_read_as_claude_code_calls() {
        let events = events();
        let cwd = events[0]["cwd"].as_str().expect("cwd").to_owned();
        let bash = read("Bash");
        assert_eq!(bash.tool, "Bash");
        assert_eq!(bash.input, json!({"command": "git push origin main"}));
        let patches: Vec<ToolUse> = events
            .iter()
            .filter(|event| event["tool_name"] == "apply_patch")
            .map(|event| tool_use(event).expect("patch"))
            .collect();
        assert_eq!(patches[0].tool, "Write");
        assert_eq!(
            patches[0].input["file_path"],
            format!("{cwd}/notes/new.txt")
        );
        assert!(
            patches[0].input["patch"]
                .as_str()
                .is_some_and(|p| p.contains("+hello"))
        );
        assert_eq!(patches[1].tool, "Edit");
        assert_eq!(patches[1].input.get("file_path"), None);
        assert_eq!(
            patches[1].input["paths"],
            json!([format!("{cwd}/notes/new.txt"), format!("{cwd}/other.txt")])
        );
        let image = read("view_image");
        assert_eq!(image.tool, "Read");
        assert_eq!(
            image.input,
            json!({"file_path": format!("{cwd}/img/logo.png")})
        );
        assert_eq!(read("request_user_input").tool, "AskUserQuestion");
        let mcp = read("mcp__files__decide");
        assert_eq!(mcp.tool, "mcp__files__decide");
        assert_eq!(mcp.input, json!({"tool_name": "x", "input": {"a": 1}}));
        let agent = read("spawn_agent");
        assert_eq!(agent.tool, "Agent");
        assert_eq!(agent.input["prompt"], "SUBAGENT please touch sub.txt");
        assert_eq!(read("tool_search").tool, "ToolSearch");
        assert_eq!(read("create_goal").tool, "create_goal");
        assert_eq!(
            read("multi_agent_v1wait_agent").tool,
            "multi_agent_v1wait_agent"
        );
    }

    #[test]
    fn one_policy_decides_codex_calls() {
        let policy: Permissions = serde_json::from_value(json!({
            "allow": ["Edit(notes/*)", "Read"],
            "ask": ["Bash(git push*)", "mcp__files"],
            "deny": ["Edit(/etc/*)"],
            "default": "deny",
        }))
        .expect("policy");
        let decide = |tool_name: &str| policy.decide(&read(tool_name)).decision;
        assert_eq!(decide("Bash"), Decision::Ask);
        assert_eq!(decide("mcp__files__decide"), Decision::Ask);
        assert_eq!(decide("view_image"), Decision::Allow);
        assert_eq!(decide("create_goal"), Decision::Deny);
        let patch = |text: &str| {
            let event =
                json!({"tool_name": "apply_patch", "cwd": "/w", "tool_input": {"command": text}});
            policy.decide(&tool_use(&event).expect("patch")).decision
        };
        assert_eq!(
            patch("*** Begin Patch\n*** Update File: notes/a.md\n@@\n-a\n+b\n*** End Patch\n"),
            Decision::Allow
        );
        // Two files: no single path an allow rule could vouch for.
        assert_eq!(
            patch(
                "*** Begin Patch\n*** Add File: notes/a\n+a\n*** Add File: notes/b\n+b\n*** End Patch"
            ),
            Decision::Deny
        );
        assert_eq!(
            patch(
                "*** Begin Patch\n*** Update File: notes/a\n*** Move to: /etc/passwd\n*** End Patch"
            ),
            Decision::Deny
        );
        assert_eq!(
            patch("*** Begin Patch\n*** Update File: ../../etc/shadow\n*** End Patch"),
            Decision::Deny
        );
    }

    #[test]
    fn odd_events_read_safely_or_not_at_all() {
        assert!(tool_use(&json!("garbage")).is_err());
        assert!(tool_use(&json!({"tool_name": ""})).is_err());
        assert!(tool_use(&json!({"tool_name": "Bash", "tool_input": {}})).is_err());
        assert!(tool_use(&json!({"tool_name": "Bash", "tool_input": {"command": [1]}})).is_err());
        let argv = json!({"tool_name": "shell", "tool_input": {"command": ["git", "push"]}});
        assert_eq!(tool_use(&argv).expect("argv").input["command"], "git push");
        // A relative path with no working directory to put it under names no file.
        let relative =
            json!({"tool_name": "apply_patch", "tool_input": {"command": "*** Update File: a\n"}});
        assert_eq!(
            tool_use(&relative).expect("patch").input["paths"],
            json!([])
        );
        let long = "x".repeat(3 * super::MAX_PATCH_SHOWN);
        let big = json!({"tool_name": "apply_patch", "tool_input": {"command": long}});
        let shown = tool_use(&big).expect("patch").input["patch"].to_string();
        assert!(shown.len() < 2 * super::MAX_PATCH_SHOWN && shown.contains("more bytes"));
        let deny: Permissions =
            serde_json::from_value(json!({"deny": ["Edit(/w/secrets/*)"]})).expect("policy");
        assert_eq!(
            deny.decide(&tool_use(&relative).expect("patch")).decision,
            Decision::Deny
        );
    }

    #[test]
    fn answers_are_what_codex_reads() {
        let allow = answer(true, "fine");
        assert_eq!(
            (allow.stdout.as_str(), allow.stderr.as_str(), allow.exit),
            ("", "", 0)
        );
        let deny = answer(false, "a person said no");
        assert_eq!(deny.exit, 2);
        assert_eq!(deny.stderr, "a person said no");
        // Exit 2 with an empty stderr would let the call run.
        assert_eq!(answer(false, "  ").stderr, super::super::NO_REASON);
    }
}
