//! The shell command that runs a role's CLI on a prompt, for an SOP node ([`invocation`]) or
//! a conversation turn ([`turn_invocation`], which continues the CLI's session from the turn
//! before). Each executor writes its own command line (`src/executor/`): Gatehouse's
//! sandbox is the isolation boundary and nobody is at a terminal to answer, so each CLI runs
//! with its own permission prompts, approvals and sandbox turned off, the prompt read from a
//! file, and every interpolated value shell-quoted.
//!
//! Session ids come from the CLI's output, which the agent controls, so one is used only
//! when [`check_session_id`] accepts it.

use thiserror::Error;

use crate::executor::{Call, ModelApi};
use crate::role::Role;
use crate::tools::Tools;

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
/// conversation. `api` is the API of the role's provider when its model requests go
/// through the gateway (the CLI is pointed at it in that API's terms); `None` when the CLI
/// reaches its model on its own. `tools`: the MCP servers, permission tool and skills the
/// CLI is handed ([`Tools::none`] for none).
pub fn invocation(
    role: &Role,
    api: Option<ModelApi>,
    tools: &Tools,
    prompt_file: &str,
    system_file: Option<&str>,
) -> String {
    build(role, api, tools, prompt_file, system_file, None, None)
}

/// [`invocation`] for a conversation turn: the same command line, continuing the CLI
/// session `session.resume` and, for executor `command`, with `{transcript_file}` filled
/// in. Refuses a session id that [`check_session_id`] refuses, for every executor, so a
/// bad id is reported where it was read rather than silently starting a fresh session.
pub fn turn_invocation(
    role: &Role,
    api: Option<ModelApi>,
    tools: &Tools,
    prompt_file: &str,
    system_file: Option<&str>,
    session: Session<'_>,
) -> Result<String, SessionIdError> {
    if let Some(id) = session.resume {
        check_session_id(id)?;
    }
    Ok(build(
        role,
        api,
        tools,
        prompt_file,
        system_file,
        session.resume,
        session.transcript_file,
    ))
}

/// `resume` has been checked.
fn build(
    role: &Role,
    api: Option<ModelApi>,
    tools: &Tools,
    prompt_file: &str,
    system_file: Option<&str>,
    resume: Option<&str>,
    transcript_file: Option<&str>,
) -> String {
    let cli = role.executor.cli();
    let line = cli.command_line(
        role,
        &Call {
            prompt_file,
            system_file,
            resume,
            transcript_file,
            api,
            tools,
        },
    );
    match tools.skills_dir.as_deref() {
        Some(dir) if !cli.skills_homes().is_empty() => {
            format!("{} && {line}", copy_skills(dir, cli.skills_homes()))
        }
        _ => line,
    }
}

/// A shell step copying the skills folder `dir` (one folder per skill) into each of the
/// CLI's skill folders `homes` (double-quoted shell words), creating them.
fn copy_skills(dir: &str, homes: &[&str]) -> String {
    let from = quote(&format!("{}/.", dir.trim_end_matches('/')));
    homes
        .iter()
        .map(|home| format!("mkdir -p {home} && cp -R {from} {home}/"))
        .collect::<Vec<_>>()
        .join(" && ")
}

pub(crate) fn push_model(words: &mut Vec<String>, role: &Role) {
    if let Some(model) = &role.model {
        words.push("--model".to_owned());
        words.push(quote(model));
    }
}

/// Quotes one word for `sh`. A NUL cannot travel in an argv entry and shlex refuses it, so it
/// is dropped ([`Role::check`] refuses roles containing one).
pub(crate) fn quote(word: &str) -> String {
    let word = word.replace('\0', "");
    match shlex::try_quote(&word) {
        Ok(quoted) => quoted.into_owned(),
        // shlex refuses nothing else; single-quote by hand rather than fail.
        Err(_) => format!("'{}'", word.replace('\'', r"'\''")),
    }
}
