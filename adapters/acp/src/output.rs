//! What the shim prints: one JSON object per line on stdout, a schema of Gatehouse's own
//! that the `acp` executor's reader (domain/agent `executor/acp/events.rs`) reads. The
//! agent's own JSON-RPC stays between the agent and the shim; only these lines leave.
//!
//! ```json
//! {"type":"session","sessionId":"ses_…","agent":{"name":"OpenCode","version":"1.18.33"},"protocolVersion":1,"loaded":false}
//! {"type":"prompt"}
//! {"type":"update","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"write","kind":"edit","status":"pending"}}
//! {"type":"permission","toolCall":{"toolCallId":"t1","title":"Writing to hello.txt","kind":"edit"},"policy":"allow","decision":"allow_once","optionId":"proceed_once"}
//! {"type":"update","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}}
//! {"type":"result","stopReason":"end_turn","usage":{"inputTokens":10,"outputTokens":5},"meta":{}}
//! ```
//!
//! - `session`: once the session is ready. `loaded` says whether `--resume` continued the
//!   session (`session/load`); `agent` is the agent's `agentInfo` (`null` when it sends
//!   none). Updates an agent replays while loading are not printed (`replayed` counts them):
//!   they are the earlier turns', already in their traces.
//! - `prompt`: the prompt was sent. Updates before it belong to the session (available
//!   commands, Gemini's `[MODE_UPDATE]` message chunk), not to the turn's reply.
//! - `update`: each `session/update` notification's `update`, verbatim.
//! - `permission`: each `session/request_permission` and how it was answered: the tool
//!   call it was about (its id, title and kind only), the policy (`allow`, or `rules` with
//!   `--permissions`), and the option picked (`decision` is the option's kind, or
//!   `cancelled` when no option fits the policy).
//! - `gatehouse.permission`: with `--permissions`, before its `permission` line, what the
//!   role's rules decided: `{"type":"gatehouse.permission","tool":"Bash","input":"git push
//!   --force","decision":"deny","rule":"Bash(git push*)"}` — the call read as Claude Code's
//!   tool, its input on one bounded line, and the rule (`default` when none applied); for a
//!   call a person decided, `"asked":true` with `by` and `reason` instead of `rule`.
//! - `notice`: something the run went on after (a session that could not be loaded, a
//!   mode that could not be set, a request the shim does not serve, non-JSON output).
//! - `result`: the prompt's `stopReason`, with `usage` and `_meta` (as `meta`) verbatim:
//!   agents put tokens in either, or nowhere.
//! - `error`: why there is no result, one line naming the agent's command and what to do.
//!   It is the last line.

use std::io::Write;

use serde_json::{Value, json};

/// Writes the lines to stdout as they happen; a write that fails (the runner stopped
/// reading) is ignored, since there is no one left to tell.
#[derive(Debug, Default)]
pub struct Output;

impl Output {
    /// The session is ready.
    pub fn session(&self, id: &str, agent: &Value, protocol: &Value, loaded: bool, replayed: u64) {
        self.line(&json!({
            "type": "session",
            "sessionId": id,
            "agent": agent,
            "protocolVersion": protocol,
            "loaded": loaded,
            "replayed": replayed,
        }));
    }

    /// One `session/update`'s update.
    pub fn update(&self, update: &Value) {
        self.line(&json!({"type": "update", "update": update}));
    }

    /// A permission request and its answer.
    pub fn permission(&self, tool_call: Value, policy: &str, decision: &str, option: Option<&str>) {
        self.line(&json!({
            "type": "permission",
            "toolCall": tool_call,
            "policy": policy,
            "decision": decision,
            "optionId": option,
        }));
    }

    /// The prompt is sent: updates before it (commands, modes) are the session's, those
    /// after it the turn's.
    pub fn prompt(&self) {
        self.line(&json!({"type": "prompt"}));
    }

    /// Something the run went on after.
    pub fn notice(&self, message: &str) {
        self.line(&json!({"type": "notice", "message": message}));
    }

    /// The prompt returned.
    pub fn result(&self, stop_reason: &Value, usage: &Value, meta: &Value) {
        self.line(&json!({
            "type": "result",
            "stopReason": stop_reason,
            "usage": usage,
            "meta": meta,
        }));
    }

    /// There is no result.
    pub fn error(&self, message: &str) {
        self.line(&json!({"type": "error", "message": message}));
    }

    /// Any line, as given (the `gatehouse.permission` lines).
    pub fn line(&self, value: &Value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{value}").and_then(|()| stdout.flush());
    }
}
