//! A scripted ACP agent for the shim's tests: `fake-acp-agent SCENARIO`. It speaks just
//! enough of the protocol, in the shape the surveyed agents use, and misbehaves on demand:
//!
//! - `happy`: a tool call that completes, a message, `end_turn` with usage; exits on EOF.
//! - `permission`: asks permission for its tool call, and says which option it got; the
//!   call is `$FAKE_TOOL_CALL` (JSON) when set.
//! - `cancellable`: streams one update, then waits for `session/cancel` → `cancelled`.
//! - `deaf`: like `cancellable`, but ignores the cancel, SIGTERM and stdin's end.
//! - `exit`: writes to stderr and exits 3 before answering anything.
//! - `garbage`: prints a banner that is not JSON, then waits forever.
//! - `linger`: answers the prompt, then ignores stdin's end and SIGTERM, with a child
//!   (`sleep`) in its group whose pid it writes to `$FAKE_CHILD_PID_FILE`.
//! - `version`: answers `initialize` with protocol version 2.
//! - `auth`: `session/new` fails with `auth_required`.
//! - `load`: `session/load` replays two updates; `noload`: no `loadSession`; `badload`:
//!   `session/load` fails.
//!
//! Every request it receives is appended to `$FAKE_LOG` (when set) as a JSON line; its pid
//! is written to `$FAKE_AGENT_PID_FILE` (when set).

use std::io::{BufRead, Write};
use std::time::Duration;

use serde_json::{Value, json};

fn main() {
    let scenario = std::env::args().nth(1).unwrap_or_default();
    if let Some(file) = std::env::var_os("FAKE_AGENT_PID_FILE") {
        let _ = std::fs::write(file, std::process::id().to_string());
    }
    if matches!(scenario.as_str(), "deaf" | "linger") {
        ignore_sigterm();
    }
    match scenario.as_str() {
        "exit" => {
            eprintln!("fake: cannot read ~/.fake/config.json");
            std::process::exit(3);
        }
        "garbage" => {
            println!("Welcome to Fake Agent 1.0!");
            println!("Type /help for help.");
            std::thread::sleep(Duration::from_secs(3600));
            return;
        }
        _ => {}
    }
    let stdin = std::io::stdin();
    let mut session = String::from("fake-session-1");
    let mut prompt_id = None;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        log(&message);
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match message.get("method").and_then(Value::as_str) {
            Some("initialize") => {
                let version = if scenario == "version" { 2 } else { 1 };
                send(&json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": version,
                    "agentCapabilities": {"loadSession": scenario != "noload"},
                    "authMethods": [{"id": "fake-login", "name": "Log in to Fake"}],
                    "agentInfo": {"name": "fake-agent", "version": "1.0.0"},
                }}));
            }
            Some("session/new") => {
                if scenario == "auth" {
                    send(&json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32000, "message": "Authentication required"}}));
                    continue;
                }
                send(&json!({"jsonrpc": "2.0", "id": id, "result": {
                    "sessionId": session,
                    "modes": {"currentModeId": "ask", "availableModes": [
                        {"id": "ask", "name": "Ask"}, {"id": "yolo", "name": "YOLO"}]},
                }}));
            }
            Some("session/load") => {
                if scenario == "badload" {
                    send(&json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32603, "message": "Internal error",
                        "data": {"details": "Invalid session identifier"}}}));
                    continue;
                }
                session = params["sessionId"].as_str().unwrap_or_default().to_owned();
                update(
                    &session,
                    json!({"sessionUpdate": "user_message_chunk",
                    "content": {"type": "text", "text": "earlier"}}),
                );
                update(
                    &session,
                    json!({"sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "earlier reply"}}),
                );
                send(&json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            Some("session/set_mode") => {
                if params["modeId"] == "yolo" {
                    update(
                        &session,
                        json!({"sessionUpdate": "current_mode_update", "currentModeId": "yolo"}),
                    );
                    send(&json!({"jsonrpc": "2.0", "id": id, "result": {}}));
                } else {
                    send(&json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32602, "message": "Invalid params"}}));
                }
            }
            Some("session/prompt") => {
                prompt_id = Some(id.clone());
                let text = params["prompt"][0]["text"].as_str().unwrap_or_default();
                update(
                    &session,
                    json!({"sessionUpdate": "tool_call", "toolCallId": "call_1",
                    "title": "Write hello.txt", "kind": "edit", "status": "pending"}),
                );
                match scenario.as_str() {
                    "cancellable" | "deaf" => continue,
                    "permission" => {
                        let call = std::env::var("FAKE_TOOL_CALL")
                            .ok()
                            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                            .unwrap_or_else(|| {
                                json!({"toolCallId": "call_1",
                                "title": "Write hello.txt", "kind": "edit", "content": []})
                            });
                        send(
                            &json!({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
                            "params": {"sessionId": session, "toolCall": call,
                            "options": [
                                {"optionId": "always", "name": "Always", "kind": "allow_always"},
                                {"optionId": "once", "name": "Allow", "kind": "allow_once"},
                                {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}}),
                        );
                        continue;
                    }
                    _ => {}
                }
                finish(&session, &id, &format!("Done ({} chars).", text.len()));
                if scenario == "linger" {
                    linger();
                }
            }
            Some("session/cancel") => {
                if scenario == "cancellable"
                    && let Some(id) = prompt_id.take()
                {
                    update(
                        &session,
                        json!({"sessionUpdate": "tool_call_update",
                        "toolCallId": "call_1", "status": "failed"}),
                    );
                    send(
                        &json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "cancelled"}}),
                    );
                }
            }
            Some(_) => {}
            None => {
                // The answer to the permission request.
                if let Some(prompt) = prompt_id.take() {
                    let option = message["result"]["outcome"]["optionId"]
                        .as_str()
                        .unwrap_or("none")
                        .to_owned();
                    finish(&session, &prompt, &format!("Permission: {option}."));
                }
            }
        }
    }
    // Like codex-acp and goose: stdin's end is no reason to stop.
    if scenario == "deaf" {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn finish(session: &str, prompt: &Value, text: &str) {
    update(
        session,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
        "status": "completed"}),
    );
    update(
        session,
        json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text}}),
    );
    send(
        &json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn",
        "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}}}),
    );
}

/// Ignores stdin's end and SIGTERM with a child in its group.
fn linger() {
    if let Ok(child) = std::process::Command::new("sleep").arg("300").spawn()
        && let Some(file) = std::env::var_os("FAKE_CHILD_PID_FILE")
    {
        let _ = std::fs::write(file, child.id().to_string());
    }
    std::thread::sleep(Duration::from_secs(3600));
}

fn ignore_sigterm() {
    let (ready, registered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let _ = ready.send(());
            loop {
                match term.as_mut() {
                    Some(term) => {
                        term.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
        });
    });
    let _ = registered.recv();
}

fn update(session: &str, update: Value) {
    send(&json!({"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": session, "update": update}}));
}

fn send(message: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{message}");
    let _ = stdout.flush();
}

fn log(message: &Value) {
    if let Some(path) = std::env::var_os("FAKE_LOG")
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(file, "{message}");
    }
}
