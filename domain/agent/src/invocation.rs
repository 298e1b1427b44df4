//! The shell command that runs a role's CLI on a prompt.
//!
//! Gatehouse's sandbox is the isolation boundary and nobody is at a terminal to answer, so
//! each CLI runs with its own permission prompts, approvals and sandbox turned off:
//!
//! - Claude Code: `claude -p` (print mode, the documented headless mode) with
//!   `--output-format stream-json --verbose` (one JSON event per line: the tool calls as
//!   they happen, for the attempt's trace, then the result object with usage and cost) and
//!   `--permission-mode bypassPermissions` (the documented equivalent of
//!   `--dangerously-skip-permissions`; Claude Code refuses it when run as root, which
//!   Gatehouse's sandboxes are not). The prompt comes on stdin, so its length is not bound
//!   by argv limits; the system text goes through `--append-system-prompt`, keeping Claude
//!   Code's own system prompt and its tool instructions.
//! - Codex: `codex exec --json` (JSON Lines events) with `--skip-git-repo-check` (a
//!   workspace need not be a repository) and `--dangerously-bypass-approvals-and-sandbox`
//!   (no approvals, no Codex sandbox: documented for externally sandboxed environments,
//!   and Codex's Landlock/seccomp sandbox often cannot start inside a container anyway).
//!   `codex exec` has no system-prompt flag, so the system text precedes the prompt on
//!   stdin, read through the `-` prompt argument.
//! - Command: the role's argv with its placeholders filled in.
//!
//! Every interpolated value is shell-quoted.
//!
//! A conversation turn ([`turn_invocation`]) continues the CLI's own session from the turn
//! before:
//!
//! - Claude Code: `--resume <session_id>`. The system text is given again: Claude Code
//!   builds its system prompt per invocation and does not keep it in the session.
//! - Codex: `codex exec … resume <SESSION_ID> -`. The `exec` options come before `resume`,
//!   where every release accepts them (after it, only the few marked global are), and the
//!   prompt still comes on stdin. The
//!   system text is not sent again: it went in as part of the first turn's prompt, which
//!   the resumed session holds.
//! - Command: no session of its own; `{transcript_file}` names a file holding the
//!   conversation so far.
//!
//! Session ids come from the CLI's output, which the agent controls, so one is used only
//! when [`check_session_id`] accepts it.

use thiserror::Error;

use crate::placeholder::{self, Piece};
use crate::role::{Executor, Role};

/// The longest session id accepted. Claude Code's and Codex's are UUIDs (36 characters).
pub const MAX_SESSION_ID_LEN: usize = 128;

/// What a conversation turn adds to an SOP node's invocation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Session<'a> {
    /// The CLI session the latest turn reported, to continue (a resumed Claude Code session
    /// may report a new id: keep the latest); `None` on a first turn or when none was
    /// reported. Ignored for executor `command`.
    pub resume: Option<&'a str>,
    /// The file holding the conversation so far, as the sandbox sees it: what
    /// `{transcript_file}` stands for. Only executor `command` reads it.
    pub transcript_file: Option<&'a str>,
}

/// Why a session id from a CLI's output is not used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SessionIdError {
    #[error("the CLI reported an empty session id")]
    Empty,
    #[error(
        "the CLI reported a session id of {len} bytes; ids are at most \
         {MAX_SESSION_ID_LEN}"
    )]
    TooLong { len: usize },
    /// Anything but ASCII letters, digits, `-` and `_`, or a leading `-` (read as an
    /// option by the CLI). The id itself is not quoted: the agent wrote it, and the message
    /// may be posted in chat.
    #[error(
        "the CLI reported a session id that is not letters, digits, `-` and `_` starting \
         with a letter or digit (byte {at} is not allowed)"
    )]
    Malformed {
        /// The offset of the first byte refused.
        at: usize,
    },
}

/// Accepts a session id that can travel in a command line as one plain word: 1 to
/// [`MAX_SESSION_ID_LEN`] ASCII letters, digits, `-` and `_`, not starting with `-`.
pub fn check_session_id(id: &str) -> Result<(), SessionIdError> {
    if id.is_empty() {
        return Err(SessionIdError::Empty);
    }
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(SessionIdError::TooLong { len: id.len() });
    }
    let plain = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
    let refused = if id.starts_with('-') {
        Some(0)
    } else {
        id.bytes().position(|b| !plain(&b))
    };
    match refused {
        Some(at) => Err(SessionIdError::Malformed { at }),
        None => Ok(()),
    }
}

/// The command line, for `sh -c`, that runs the role's CLI on a prompt already written to a
/// file. `prompt_file` and `system_file` are paths as the sandbox sees them; `system_file`
/// is `None` when [`Role::system_text`] is. Call [`Role::check`] first: for a `command` role
/// it would refuse, `{model}` and `{system_file}` without a value become empty arguments and
/// unknown placeholders stay as written. `{transcript_file}` is empty: an SOP node has no
/// conversation.
pub fn invocation(role: &Role, prompt_file: &str, system_file: Option<&str>) -> String {
    build(role, prompt_file, system_file, None, None)
}

/// [`invocation`] for a conversation turn: the same command line, continuing the CLI
/// session `session.resume` and, for executor `command`, with `{transcript_file}` filled
/// in. Refuses a session id that [`check_session_id`] refuses, for every executor, so a
/// bad id is reported where it was read rather than silently starting a fresh session.
pub fn turn_invocation(
    role: &Role,
    prompt_file: &str,
    system_file: Option<&str>,
    session: Session<'_>,
) -> Result<String, SessionIdError> {
    if let Some(id) = session.resume {
        check_session_id(id)?;
    }
    Ok(build(
        role,
        prompt_file,
        system_file,
        session.resume,
        session.transcript_file,
    ))
}

/// `resume` has been checked.
fn build(
    role: &Role,
    prompt_file: &str,
    system_file: Option<&str>,
    resume: Option<&str>,
    transcript_file: Option<&str>,
) -> String {
    match role.executor {
        Executor::ClaudeCode => claude_code(role, prompt_file, system_file, resume),
        Executor::Codex => codex(role, prompt_file, system_file, resume),
        Executor::Command => command(role, prompt_file, system_file, transcript_file),
    }
}

fn claude_code(
    role: &Role,
    prompt_file: &str,
    system_file: Option<&str>,
    resume: Option<&str>,
) -> String {
    let mut words: Vec<String> = [
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    .map(String::from)
    .into();
    if let Some(id) = resume {
        words.push("--resume".to_owned());
        words.push(quote(id));
    }
    push_model(&mut words, role);
    if let Some(system_file) = system_file {
        words.push("--append-system-prompt".to_owned());
        words.push(format!("\"$(cat {})\"", quote(system_file)));
    }
    words.extend(["--permission-mode", "bypassPermissions"].map(String::from));
    words.extend(role.args.iter().map(|arg| quote(arg)));
    words.push("<".to_owned());
    words.push(quote(prompt_file));
    words.join(" ")
}

fn codex(
    role: &Role,
    prompt_file: &str,
    system_file: Option<&str>,
    resume: Option<&str>,
) -> String {
    let mut words: Vec<String> = ["codex", "exec", "--json"].map(String::from).into();
    push_model(&mut words, role);
    words.extend(
        [
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
        ]
        .map(String::from),
    );
    if role.provider.is_some() {
        words.extend(
            GATEWAY_PROVIDER
                .iter()
                .map(|setting| format!("-c {setting}")),
        );
        // Bounded, so a provider that cannot be reached fails the attempt in seconds.
        let retries = role.retries();
        words.push(format!(
            "-c model_providers.gatehouse.request_max_retries={retries}"
        ));
        words.push(format!(
            "-c model_providers.gatehouse.stream_max_retries={retries}"
        ));
    }
    words.extend(role.args.iter().map(|arg| quote(arg)));
    if let Some(id) = resume {
        words.push("resume".to_owned());
        words.push(quote(id));
    }
    words.push("-".to_owned());
    let codex = words.join(" ");
    match system_file.filter(|_| resume.is_none()) {
        // A blank line keeps the system text's last line apart from the prompt's first.
        Some(system_file) => format!(
            "{{ cat {}; printf '\\n\\n'; cat {}; }} | {codex}",
            quote(system_file),
            quote(prompt_file)
        ),
        None => format!("{codex} < {}", quote(prompt_file)),
    }
}

/// Codex's settings for a role whose model requests go through the gateway. Codex reads no
/// base URL from its environment (`OPENAI_BASE_URL` is ignored by 0.171), so a provider of
/// its own is defined on the command line, reading the gateway's address and the attempt's
/// token from the variables the runner sets. Double-quoted so the shell expands the address.
const GATEWAY_PROVIDER: [&str; 7] = [
    "model_provider=gatehouse",
    "model_providers.gatehouse.name=Gatehouse",
    "\"model_providers.gatehouse.base_url=$OPENAI_BASE_URL\"",
    "model_providers.gatehouse.wire_api=responses",
    "model_providers.gatehouse.env_key=OPENAI_API_KEY",
    "analytics.enabled=false",
    "check_for_update_on_startup=false",
];

fn command(
    role: &Role,
    prompt_file: &str,
    system_file: Option<&str>,
    transcript_file: Option<&str>,
) -> String {
    let words: Vec<String> = role
        .command
        .iter()
        .map(|argument| {
            let mut filled = String::with_capacity(argument.len());
            for piece in placeholder::pieces(argument) {
                match piece {
                    Piece::Text(text) => filled.push_str(text),
                    Piece::Placeholder("prompt_file") => filled.push_str(prompt_file),
                    Piece::Placeholder("system_file") => {
                        filled.push_str(system_file.unwrap_or_default());
                    }
                    Piece::Placeholder("transcript_file") => {
                        filled.push_str(transcript_file.unwrap_or_default());
                    }
                    Piece::Placeholder("model") => {
                        filled.push_str(role.model.as_deref().unwrap_or_default());
                    }
                    // Refused by `Role::check`; written back as it was.
                    Piece::Placeholder(other) => {
                        filled.push('{');
                        filled.push_str(other);
                        filled.push('}');
                    }
                }
            }
            quote(&filled)
        })
        .collect();
    words.join(" ")
}

fn push_model(words: &mut Vec<String>, role: &Role) {
    if let Some(model) = &role.model {
        words.push("--model".to_owned());
        words.push(quote(model));
    }
}

/// Quotes one word for `sh`. A NUL cannot travel in an argv entry and shlex refuses it, so it
/// is dropped ([`Role::check`] refuses roles containing one).
fn quote(word: &str) -> String {
    let word = word.replace('\0', "");
    match shlex::try_quote(&word) {
        Ok(quoted) => quoted.into_owned(),
        // shlex refuses nothing else; single-quote by hand rather than fail.
        Err(_) => format!("'{}'", word.replace('\'', r"'\''")),
    }
}
