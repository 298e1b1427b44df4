//! One run: `initialize` → `session/new` or `session/load` → `session/set_mode` →
//! `session/prompt`, answering the agent's requests and printing its updates meanwhile.
//!
//! - `initialize` sends protocol version 1 and advertises no `fs` and no `terminal`: the
//!   agents then read and write files and run commands themselves, inside the sandbox
//!   (survey finding 2; with `fs` advertised Gemini 0.61 fails to write new files). An
//!   agent answering with another version is refused: the messages would not mean what the
//!   shim and the trace reader take them to.
//! - `--resume ID` loads the session only when the agent advertises `loadSession`. When it
//!   does not, or the load fails (Gemini 0.61's `session/load` always fails), the shim
//!   starts a new session and sends the conversation so far (`--transcript-file`, the
//!   runner's `transcript.jsonl`) ahead of the prompt, with a `notice` line saying so; the
//!   turn then goes on, with the agent's own memory of earlier tool results lost but the
//!   exchange kept. Without a transcript file that is a failure, never a silent new
//!   session. A loaded session gets the prompt alone: it holds the system text already.
//! - The agent's requests: `session/request_permission` is answered by the
//!   [`Policy`](crate::permission::Policy) — at once, or, for a call the role's rules say
//!   to ask about, from a task that waits on the runner while the run goes on serving the
//!   agent; anything else (`fs/*`, `terminal/*`, which were
//!   not advertised) gets "method not found".
//! - SIGTERM or SIGINT during the prompt sends `session/cancel` and waits `--cancel-grace`
//!   for the prompt to return; before the prompt, the run stops at once.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::agent::Agent;
use crate::args::Invocation;
use crate::ask::ASK_TIMEOUT;
use crate::failure::Failure;
use crate::output::Output;
use crate::permission::{Policy, Ruling, decision_line, pick, tool_call_brief};
use crate::rpc::{Connection, Incoming, METHOD_NOT_FOUND, Reply, RpcError};

/// The only ACP version the shim speaks.
const PROTOCOL_VERSION: u64 = 1;

/// ACP's "authentication required" error code.
const AUTH_REQUIRED: i64 = -32000;

/// How much of the transcript a fallback sends: its end, where the conversation is.
const MAX_TRANSCRIPT_BYTES: usize = 256 * 1024;

/// How much of an error's `data` a message quotes.
const MAX_DETAILS_CHARS: usize = 300;

/// How many non-JSON lines get a `notice` each; the rest are counted only.
const GARBAGE_NOTICES: u64 = 3;

/// How a run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The prompt returned on its own; `cancelled` when its stop reason says the agent
    /// cancelled it (which is not a completed prompt).
    Returned { cancelled: bool },
    /// A signal stopped the run (the prompt was cancelled, or never sent).
    Signalled(i32),
}

/// The run in progress: the agent, the connection to it, and what the shim has seen of it,
/// which the failures quote.
pub struct Run<'a> {
    invocation: &'a Invocation,
    /// Taken when it is sent.
    prompt: Option<Prompt>,
    command: String,
    agent: Agent,
    connection: Connection,
    incoming: UnboundedReceiver<Incoming>,
    output: Output,
    policy: Policy,
    terminate: Option<Signal>,
    interrupt: Option<Signal>,
    /// Updates are not printed while a loaded session replays its history.
    replaying: bool,
    replayed: u64,
    garbage_lines: u64,
    first_garbage: Option<String>,
    /// The signal that asked the run to stop, once one did.
    signalled: Option<i32>,
    session_id: Option<String>,
}

impl<'a> Run<'a> {
    /// Reads the prompt's files, then starts the agent: a file that cannot be read fails
    /// the run before any agent runs.
    pub fn start(invocation: &'a Invocation) -> Result<Self, Failure> {
        let prompt = prompt_text(invocation)?;
        let policy = match &invocation.permissions {
            None => Policy::default(),
            Some(path) => Policy::load(path).map_err(|message| Failure::Permissions {
                path: path.display().to_string(),
                message,
            })?,
        };
        let (agent, stdin, stdout) = Agent::spawn(invocation)?;
        let (connection, incoming) = Connection::start(stdin, stdout);
        Ok(Self {
            invocation,
            prompt: Some(prompt),
            command: invocation.command(),
            agent,
            connection,
            incoming,
            output: Output,
            policy,
            terminate: signal(SignalKind::terminate()).ok(),
            interrupt: signal(SignalKind::interrupt()).ok(),
            replaying: false,
            replayed: 0,
            garbage_lines: 0,
            first_garbage: None,
            signalled: None,
            session_id: None,
        })
    }

    /// The whole exchange, then the agent's end (whatever happened).
    pub async fn run(mut self) -> Result<Outcome, Failure> {
        let outcome = self.exchange().await;
        self.connection.close();
        if outcome.is_err() || self.signalled.is_some() {
            self.agent.kill_group().await;
        } else {
            self.agent.end(None).await;
        }
        outcome
    }

    async fn exchange(&mut self) -> Result<Outcome, Failure> {
        let prompt = self.prompt.take().unwrap_or_default();
        let initialized = self
            .call(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": false, "writeTextFile": false},
                        "terminal": false,
                    },
                    "clientInfo": {"name": "gatehouse-acp", "version": env!("CARGO_PKG_VERSION")},
                }),
                true,
            )
            .await?;
        let protocol = initialized
            .get("protocolVersion")
            .cloned()
            .unwrap_or(Value::Null);
        if protocol.as_u64() != Some(PROTOCOL_VERSION) {
            return Err(Failure::Version {
                command: self.command.clone(),
                version: protocol.to_string(),
            });
        }
        let agent_info = initialized.get("agentInfo").cloned().unwrap_or(Value::Null);
        let cwd = std::env::current_dir()
            .map_err(|source| Failure::Input {
                what: "the current directory",
                path: ".".to_owned(),
                source,
            })?
            .to_string_lossy()
            .into_owned();
        if let Some((server, kind)) = crate::mcp::unsupported(&self.invocation.mcp, &initialized) {
            return Err(Failure::McpTransport {
                command: self.command.clone(),
                server: server.to_owned(),
                kind: kind.to_owned(),
            });
        }
        let (session_id, loaded, new_session) = self.open(&initialized, &cwd).await?;
        self.session_id = Some(session_id.clone());
        self.output
            .session(&session_id, &agent_info, &protocol, loaded, self.replayed);
        if let Some(mode) = self.invocation.mode.clone() {
            self.set_mode(&session_id, &mode, new_session.as_ref())
                .await?;
        }
        let text = if loaded {
            prompt.text
        } else {
            prompt.first_turn()
        };
        self.output.prompt();
        let returned = self
            .call(
                "session/prompt",
                json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
                false,
            )
            .await?;
        let stop = returned.get("stopReason").cloned().unwrap_or(Value::Null);
        self.output.result(
            &stop,
            returned.get("usage").unwrap_or(&Value::Null),
            returned.get("_meta").unwrap_or(&Value::Null),
        );
        Ok(match self.signalled {
            Some(signal) => Outcome::Signalled(signal),
            None => Outcome::Returned {
                cancelled: stop == "cancelled",
            },
        })
    }

    /// The session the prompt goes to: its id, whether it was loaded, and the answer to
    /// `session/new` when a new one was made.
    async fn open(
        &mut self,
        initialized: &Value,
        cwd: &str,
    ) -> Result<(String, bool, Option<Value>), Failure> {
        if let Some(id) = self.invocation.resume.clone() {
            let can_load = initialized
                .pointer("/agentCapabilities/loadSession")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let reason = if can_load {
                self.replaying = true;
                let loaded = self
                    .call(
                        "session/load",
                        json!({"sessionId": id, "cwd": cwd, "mcpServers": self.invocation.mcp}),
                        true,
                    )
                    .await;
                self.replaying = false;
                match loaded {
                    Ok(_) => return Ok((id, true, None)),
                    Err(Failure::Refused { message, code, .. }) => {
                        format!("`session/load` failed: {message} (code {code})")
                    }
                    Err(other) => return Err(other),
                }
            } else {
                "it does not offer `session/load`".to_owned()
            };
            if self.invocation.transcript_file.is_none() {
                return Err(Failure::CannotResume {
                    command: self.command.clone(),
                    session: id,
                    reason,
                });
            }
            self.output.notice(&format!(
                "agent `{}` cannot continue session {id}: {reason}; a new session gets the \
                 conversation so far from the transcript instead",
                self.command
            ));
        }
        let created = self
            .call(
                "session/new",
                json!({"cwd": cwd, "mcpServers": self.invocation.mcp}),
                true,
            )
            .await
            .map_err(|failure| match failure {
                Failure::Refused { message, code, .. } if code == AUTH_REQUIRED => {
                    Failure::AuthRequired {
                        command: self.command.clone(),
                        message,
                        methods: auth_methods(initialized),
                    }
                }
                other => other,
            })?;
        let id = created
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| Failure::Refused {
                command: self.command.clone(),
                method: "session/new",
                message: "its answer has no `sessionId`".to_owned(),
                code: 0,
            })?
            .to_owned();
        Ok((id, false, Some(created)))
    }

    async fn set_mode(
        &mut self,
        session_id: &str,
        mode: &str,
        new_session: Option<&Value>,
    ) -> Result<(), Failure> {
        let set = self
            .call(
                "session/set_mode",
                json!({"sessionId": session_id, "modeId": mode}),
                true,
            )
            .await;
        match set {
            Ok(_) => Ok(()),
            Err(Failure::Refused { message, .. }) => {
                let modes: Vec<&str> = new_session
                    .and_then(|created| created.pointer("/modes/availableModes"))
                    .and_then(Value::as_array)
                    .map(|modes| {
                        modes
                            .iter()
                            .filter_map(|mode| mode.get("id")?.as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                let modes = if modes.is_empty() {
                    format!(": {message}")
                } else {
                    format!(" ({message}); its modes: {}", modes.join(", "))
                };
                Err(Failure::NoSuchMode {
                    command: self.command.clone(),
                    mode: mode.to_owned(),
                    modes,
                })
            }
            Err(other) => Err(other),
        }
    }

    /// Sends a request and serves the agent until it is answered. `limited` requests get
    /// `--timeout`; the prompt has none (the runner's timeout stops the whole job).
    async fn call(
        &mut self,
        method: &'static str,
        params: Value,
        limited: bool,
    ) -> Result<Value, Failure> {
        let id = self.connection.request(method, params);
        let limit = self.invocation.timeout;
        let mut deadline = limited.then(|| Instant::now() + limit);
        let mut cancelled = false;
        loop {
            let sleep = tokio::time::sleep_until(deadline.unwrap_or_else(far_future));
            tokio::select! {
                incoming = self.incoming.recv() => match incoming {
                    Some(Incoming::Answer(answered, reply)) if answered == id => {
                        return self.answered(method, reply);
                    }
                    Some(incoming) => self.serve(incoming),
                    None => return Err(self.exited(method).await),
                },
                () = sleep, if deadline.is_some() => {
                    if cancelled {
                        // The prompt did not return once cancelled: stopped as signalled.
                        return Err(Failure::CancelIgnored {
                            command: self.command.clone(),
                            signal: self.signalled.unwrap_or_default(),
                            secs: Failure::secs(self.invocation.cancel_grace),
                        });
                    }
                    return Err(Failure::Timeout {
                        command: self.command.clone(),
                        method,
                        secs: Failure::secs(limit),
                        garbage: self.garbage_hint(method),
                    });
                }
                number = next_signal(&mut self.terminate, &mut self.interrupt) => {
                    self.signalled.get_or_insert(number);
                    if method != "session/prompt" {
                        return Err(Failure::Interrupted {
                            command: self.command.clone(),
                            signal: number,
                        });
                    }
                    if !cancelled {
                        cancelled = true;
                        if let Some(session) = &self.session_id {
                            self.connection
                                .notify("session/cancel", json!({"sessionId": session}));
                        }
                        deadline = Some(Instant::now() + self.invocation.cancel_grace);
                    }
                }
            }
        }
    }

    fn answered(&self, method: &'static str, reply: Reply) -> Result<Value, Failure> {
        reply.map_err(
            |RpcError {
                 code,
                 message,
                 data,
             }| Failure::Refused {
                command: self.command.clone(),
                method,
                message: with_data(message, &data),
                code,
            },
        )
    }

    /// The failure of a request whose answer never came because the agent's output ended.
    async fn exited(&mut self, method: &'static str) -> Failure {
        let status = self.agent.exited_within(Duration::from_secs(1)).await;
        let stderr = self.agent.stderr_tail();
        Failure::Exited {
            command: self.command.clone(),
            method,
            ended: Failure::ended(status),
            stderr: if stderr.is_empty() {
                String::new()
            } else {
                format!("; its stderr ends: {stderr}")
            },
            // An agent that exits has said why on stderr; "printed nothing" is for one
            // that waits.
            garbage: self.garbage_hint(""),
        }
    }

    /// What a failure adds when the agent printed something that is not the protocol, or
    /// nothing at all before `initialize` was answered: most likely the command runs the
    /// agent outside its ACP mode.
    fn garbage_hint(&self, method: &str) -> String {
        let modes = "the agent's ACP mode (e.g. `gemini --acp`, `opencode acp`, `goose acp`)?";
        match &self.first_garbage {
            Some(line) => format!(
                "; it printed {} line(s) that are not ACP messages, the first: `{line}` — is \
                 `{}` {modes}",
                self.garbage_lines, self.command
            ),
            None if method == "initialize" => {
                format!("; it printed nothing — is `{}` {modes}", self.command)
            }
            None => String::new(),
        }
    }

    /// A permission request: answered now, or once the runner says what a person decided.
    fn permission(&mut self, id: Value, params: Value) {
        let policy = self.policy.as_str();
        match self.policy.rule(&params) {
            Ruling::Now(decision, line) => {
                if !line.is_null() {
                    self.output.line(&line);
                }
                self.output.permission(
                    tool_call_brief(&params),
                    policy,
                    &decision.kind,
                    decision.option_id.as_deref(),
                );
                self.connection.respond(&id, Ok(decision.answer()));
            }
            Ruling::Ask(call, endpoint) => {
                let responder = self.connection.responder();
                tokio::spawn(async move {
                    let answer = match endpoint {
                        Ok(endpoint) => endpoint.ask(&call.tool, &call.input, ASK_TIMEOUT).await,
                        Err(reason) => crate::ask::Answer {
                            allow: false,
                            reason,
                            by: "gatehouse-acp".to_owned(),
                        },
                    };
                    let decision = pick(&params, answer.allow);
                    let mut line =
                        decision_line(&call, if answer.allow { "allow" } else { "deny" });
                    line["by"] = json!(answer.by);
                    line["reason"] = json!(answer.reason);
                    line["asked"] = json!(true);
                    let output = Output;
                    output.line(&line);
                    output.permission(
                        tool_call_brief(&params),
                        policy,
                        &decision.kind,
                        decision.option_id.as_deref(),
                    );
                    responder.respond(&id, decision.answer());
                });
            }
        }
    }

    /// Something the agent sent while a request waits for its answer.
    fn serve(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Notification { method, params } => {
                if method != "session/update" {
                    return;
                }
                let update = params.get("update").unwrap_or(&Value::Null);
                if self.replaying {
                    self.replayed += 1;
                } else {
                    self.output.update(update);
                }
            }
            Incoming::Request { id, method, params } => {
                if method == "session/request_permission" {
                    self.permission(id, params);
                } else {
                    self.output.notice(&format!(
                        "agent `{}` asked for `{method}`, which gatehouse-acp does not offer",
                        self.command
                    ));
                    self.connection.respond(
                        &id,
                        Err(RpcError {
                            code: METHOD_NOT_FOUND,
                            message: format!("gatehouse-acp does not offer {method}"),
                            data: Value::Null,
                        }),
                    );
                }
            }
            // Late: the answer to a request that timed out is nobody's now.
            Incoming::Answer(..) => {}
            Incoming::Garbage(line) => {
                self.garbage_lines += 1;
                if self.garbage_lines <= GARBAGE_NOTICES {
                    self.output.notice(&format!(
                        "agent `{}` printed a line that is not an ACP message: `{line}`",
                        self.command
                    ));
                }
                self.first_garbage.get_or_insert(line);
            }
        }
    }
}

/// The prompt's files, read.
fn prompt_text(invocation: &Invocation) -> Result<Prompt, Failure> {
    let read = |what: &'static str, path: &std::path::Path| {
        std::fs::read_to_string(path).map_err(|source| Failure::Input {
            what,
            path: path.display().to_string(),
            source,
        })
    };
    let text = read("the prompt file", &invocation.prompt_file)?;
    let system = match &invocation.system_file {
        Some(path) => Some(read("the system file", path)?),
        None => None,
    };
    let transcript = match &invocation.transcript_file {
        Some(path) if invocation.resume.is_some() => {
            Some(transcript(&read("the transcript file", path)?))
        }
        _ => None,
    };
    Ok(Prompt {
        system,
        transcript,
        text,
    })
}

/// What the prompt is made of.
#[derive(Debug, Default)]
struct Prompt {
    system: Option<String>,
    /// The conversation so far, rendered, for a session that could not be loaded.
    transcript: Option<String>,
    text: String,
}

impl Prompt {
    /// The text for a new session: the system text, the conversation so far (when a
    /// session could not be continued), then the message, apart by blank lines.
    fn first_turn(self) -> String {
        let mut parts = Vec::new();
        parts.extend(self.system.map(|system| system.trim_end().to_owned()));
        if let Some(transcript) = self.transcript.filter(|t| !t.is_empty()) {
            parts.push(format!(
                "The conversation so far (continue it; the last message follows):\n\n{transcript}"
            ));
        }
        parts.push(self.text);
        parts.join("\n\n")
    }
}

/// The runner's `transcript.jsonl` (`{"role":"user"|"assistant","text":…}` lines) as text,
/// its end when long; a line that is not such an entry is left out.
fn transcript(jsonl: &str) -> String {
    let mut text = String::new();
    for line in jsonl.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(role), Some(said)) = (
            entry.get("role").and_then(Value::as_str),
            entry.get("text").and_then(Value::as_str),
        ) else {
            continue;
        };
        let who = if role == "assistant" {
            "Assistant"
        } else {
            "User"
        };
        text.push_str(&format!("{who}: {said}\n\n"));
    }
    if text.len() > MAX_TRANSCRIPT_BYTES {
        let mut start = text.len() - MAX_TRANSCRIPT_BYTES;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text = format!("…{}", &text[start..]);
    }
    text.trim_end().to_owned()
}

/// An error's message with its `data` (where agents put the details: Gemini's "Internal
/// error" says why only there), shortened.
fn with_data(message: String, data: &Value) -> String {
    let details = match data {
        Value::Null => return message,
        Value::String(text) => text.clone(),
        Value::Object(object) => match object.get("details").or_else(|| object.get("message")) {
            Some(Value::String(text)) => text.clone(),
            _ => data.to_string(),
        },
        other => other.to_string(),
    };
    let mut short: String = details.chars().take(MAX_DETAILS_CHARS).collect();
    if short.len() < details.len() {
        short.push('…');
    }
    format!("{message}: {short}")
}

/// The agent's auth method ids, for a login failure.
fn auth_methods(initialized: &Value) -> String {
    let methods: Vec<&str> = initialized
        .get("authMethods")
        .and_then(Value::as_array)
        .map(|methods| {
            methods
                .iter()
                .filter_map(|method| method.get("id")?.as_str())
                .collect()
        })
        .unwrap_or_default();
    if methods.is_empty() {
        "none listed".to_owned()
    } else {
        methods.join(", ")
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

/// The next SIGTERM (15) or SIGINT (2); never, when neither could be listened for.
async fn next_signal(terminate: &mut Option<Signal>, interrupt: &mut Option<Signal>) -> i32 {
    let term = async {
        match terminate {
            Some(signal) => signal.recv().await,
            None => std::future::pending().await,
        }
    };
    let int = async {
        match interrupt {
            Some(signal) => signal.recv().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term => 15,
        _ = int => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::{Prompt, transcript};

    #[test]
    fn a_transcript_reads_as_the_exchange_so_far() {
        let jsonl = "{\"role\":\"user\",\"text\":\"Hi\"}\nnot json\n{\"role\":\"assistant\",\"text\":\"Hello.\"}\n";
        assert_eq!(transcript(jsonl), "User: Hi\n\nAssistant: Hello.");
        let prompt = Prompt {
            system: Some("Be brief.".to_owned()),
            transcript: Some(transcript(jsonl)),
            text: "And now?".to_owned(),
        };
        assert_eq!(
            prompt.first_turn(),
            "Be brief.\n\nThe conversation so far (continue it; the last message follows):\n\n\
             User: Hi\n\nAssistant: Hello.\n\nAnd now?"
        );
    }
}
