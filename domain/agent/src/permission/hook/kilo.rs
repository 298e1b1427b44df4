//! Kilo's tool calls: OpenCode's event and tools ([`super::opencode`]), and Kilo's own
//! (7.7.7's tool list, as its requests to the model name them):
//!
//! | Kilo | read as | input |
//! |---|---|---|
//! | `background_process` `start` | `Bash` | `command` (`workdir`, `description` kept) |
//! | `background_process` `restart` | `Bash` | no `command` (the process `id`) |
//! | `background_process` `list`, `status`, `logs` | `BashOutput` | the arguments |
//! | `background_process` `stop` | `KillShell` | the arguments |
//! | `schedule_wakeup` | `ScheduleWakeup` | the arguments |
//! | `board_post` | `SendMessage` | the arguments |
//! | `board_read`, `cancel_wakeup`, `kilo_local_recall` | their own ids | the arguments |
//!
//! A restart runs a command the event does not show: no patterned `Bash` rule allows it,
//! and every patterned deny or ask rule holds it.

use serde_json::{Map, Value};

use crate::permission::ToolUse;

/// The call a Kilo event describes.
pub(super) fn tool_use(event: &Value) -> Result<ToolUse, String> {
    super::opencode::call(event, own)
}

/// Kilo's tools that OpenCode has not.
fn own(tool: &str, args: &Map<String, Value>) -> Option<ToolUse> {
    let named = |name: &str, input: Map<String, Value>| {
        Some(ToolUse {
            tool: name.to_owned(),
            input: Value::Object(input),
        })
    };
    match tool {
        "background_process" => match args.get("action").and_then(Value::as_str) {
            Some("list" | "status" | "logs") => named("BashOutput", args.clone()),
            Some("stop") => named("KillShell", args.clone()),
            // `start` and `restart` run a command; anything else is read as the same.
            _ => {
                let mut input = args.clone();
                if input
                    .get("command")
                    .is_some_and(|command| !command.is_string())
                {
                    input.remove("command");
                }
                if args.get("action").and_then(Value::as_str) != Some("start") {
                    input.remove("command");
                }
                named("Bash", input)
            }
        },
        "schedule_wakeup" => named("ScheduleWakeup", args.clone()),
        "board_post" => named("SendMessage", args.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::tool_use;
    use crate::permission::ToolUse;

    /// Events the plugin sent from the real Kilo 7.7.7 (the folder's README.md).
    const EVENTS: &str = include_str!("../../../tests/fixtures/hooks/kilo/events.jsonl");

    fn call(tool: &str, input: Value) -> ToolUse {
        ToolUse {
            tool: tool.to_owned(),
            input,
        }
    }

    #[test]
    fn real_events_read_as_claude_code_calls() {
        let calls: Vec<ToolUse> = EVENTS
            .lines()
            .map(|line| tool_use(&serde_json::from_str(line).expect("json")).expect("reads"))
            .collect();
        assert_eq!(
            calls,
            [
                call(
                    "Bash",
                    json!({"command": "touch made.txt", "description": "Make a file"})
                ),
                call(
                    "Bash",
                    json!({"action": "start", "command": "sleep 30", "description": "sleeper"})
                ),
                call("BashOutput", json!({"action": "list"})),
                call(
                    "Write",
                    json!({"file_path": "/tmp/okx/cap/work-kilo/new.txt", "content": "hi"})
                ),
                call("mcp__every thing__get-sum", json!({"a": 1, "b": 2})),
                call(
                    "ScheduleWakeup",
                    json!({"prompt": "later", "delay": "1h", "reason": "wait"})
                ),
                call("board_read", json!({})),
                call("list_mcp_resources", json!({"server": "every thing"})),
            ]
        );
    }

    #[test]
    fn a_restart_shows_no_command_a_rule_could_vouch_for() {
        let restart = json!({"tool": "background_process", "args": {"action": "restart", "id": "p1", "command": "ls"}});
        assert_eq!(
            tool_use(&restart),
            Ok(call("Bash", json!({"action": "restart", "id": "p1"})))
        );
        let stop = json!({"tool": "background_process", "args": {"action": "stop", "id": "p1"}});
        assert_eq!(tool_use(&stop).map(|c| c.tool), Ok("KillShell".to_owned()));
    }
}
