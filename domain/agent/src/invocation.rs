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

use crate::placeholder::{self, Piece};
use crate::role::{Executor, Role};

/// The command line, for `sh -c`, that runs the role's CLI on a prompt already written to a
/// file. `prompt_file` and `system_file` are paths as the sandbox sees them; `system_file`
/// is `None` when [`Role::system_text`] is. Call [`Role::check`] first: for a `command` role
/// it would refuse, `{model}` and `{system_file}` without a value become empty arguments and
/// unknown placeholders stay as written.
pub fn invocation(role: &Role, prompt_file: &str, system_file: Option<&str>) -> String {
    match role.executor {
        Executor::ClaudeCode => claude_code(role, prompt_file, system_file),
        Executor::Codex => codex(role, prompt_file, system_file),
        Executor::Command => command(role, prompt_file, system_file),
    }
}

fn claude_code(role: &Role, prompt_file: &str, system_file: Option<&str>) -> String {
    let mut words: Vec<String> = [
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    .map(String::from)
    .into();
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

fn codex(role: &Role, prompt_file: &str, system_file: Option<&str>) -> String {
    let mut words: Vec<String> = ["codex", "exec", "--json"].map(String::from).into();
    push_model(&mut words, role);
    words.extend(
        [
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
        ]
        .map(String::from),
    );
    words.extend(role.args.iter().map(|arg| quote(arg)));
    words.push("-".to_owned());
    let codex = words.join(" ");
    match system_file {
        // A blank line keeps the system text's last line apart from the prompt's first.
        Some(system_file) => format!(
            "{{ cat {}; printf '\\n\\n'; cat {}; }} | {codex}",
            quote(system_file),
            quote(prompt_file)
        ),
        None => format!("{codex} < {}", quote(prompt_file)),
    }
}

fn command(role: &Role, prompt_file: &str, system_file: Option<&str>) -> String {
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
