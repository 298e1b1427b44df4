//! `gatehouse-acp hook NAME`: a CLI's pre-tool hook, answered by the role's `permissions`
//! (`gatehouse_agent::permission::hook` says which CLIs, and how each names its calls).
//!
//! The CLI runs it before each tool call with its event on stdin. The call, named as
//! Claude Code names its tools, goes to the runner (`POST /permission`, as the ACP
//! session's asks do), which decides by the whole policy, waits for a person on `ask`, and
//! records the decision in the attempt's trace; the answer is printed in the CLI's terms.
//! Whatever goes wrong is a deny: an event that does not read, one too large, no runner.

use std::io::Read;

use gatehouse_agent::permission::hook::{Hook, HookAnswer, MAX_EVENT_BYTES};
use serde_json::Value;

use crate::ask::{ASK_TIMEOUT, Endpoint};

/// The exit status for a hook name the shim does not know: no CLI reads it as allow.
const UNKNOWN_HOOK: i32 = 2;

/// Answers one event for the CLI `name`; returns the exit status.
pub fn run(name: &str) -> i32 {
    let Some(hook) = Hook::from_name(name) else {
        let known: Vec<&str> = Hook::ALL.iter().map(|hook| hook.name()).collect();
        eprintln!(
            "gatehouse-acp hook: no CLI named {name:?} has a hook Gatehouse answers (known: {})",
            known.join(", ")
        );
        return UNKNOWN_HOOK;
    };
    let answer = match read_event() {
        Ok(event) => decide(hook, &event),
        Err(why) => hook.answer(false, &why),
    };
    print!("{}", answer.stdout);
    if !answer.stderr.is_empty() {
        eprintln!("{}", answer.stderr);
    }
    answer.exit
}

/// The event on stdin, at most [`MAX_EVENT_BYTES`].
fn read_event() -> Result<Value, String> {
    let mut raw = Vec::new();
    std::io::stdin()
        .take(MAX_EVENT_BYTES as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| format!("Gatehouse could not read the tool call: {e}"))?;
    if raw.len() > MAX_EVENT_BYTES {
        return Err(format!(
            "the tool call is larger than {MAX_EVENT_BYTES} bytes; Gatehouse denies it unread"
        ));
    }
    serde_json::from_slice(&raw)
        .map_err(|e| format!("Gatehouse could not read the tool call as JSON: {e}"))
}

/// Asks the runner about the event's call.
fn decide(hook: Hook, event: &Value) -> HookAnswer {
    let call = match hook.tool_use(event) {
        Ok(call) => call,
        Err(why) => return hook.answer(false, &format!("Gatehouse denies the call: {why}")),
    };
    let endpoint = match Endpoint::from_env() {
        Ok(endpoint) => endpoint,
        Err(why) => return hook.answer(false, &format!("Gatehouse denies the call: {why}")),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return hook.answer(false, &format!("gatehouse-acp cannot start: {e}")),
    };
    let answer = runtime.block_on(endpoint.ask(&call.tool, &call.input, ASK_TIMEOUT));
    hook.answer(answer.allow, &answer.reason)
}
