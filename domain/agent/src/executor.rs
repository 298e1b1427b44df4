//! The coding-agent CLIs a role can run, one file each: what differs from one CLI to the
//! next — the program, its command line for a node and for a turn, how it resumes a
//! session and where it keeps it, the variables it needs, the model API it speaks through
//! the gateway, how it is installed, and the output its trace is read from — behind one
//! trait, [`Cli`], so the rest of Gatehouse asks the role's executor rather than matching on
//! it. Adding a CLI is a file here (with its output readers), a variant of [`Executor`] and a
//! line in [`Executor::cli`].

mod acp;
mod aider;
mod claude_code;
mod codex;
mod command;
mod copilot;
mod gemini;
mod kilo;
mod mcp_servers;
mod opencode;
mod pi;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::role::{Role, RoleError};
use crate::sessions::SessionFiles;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

/// The coding-agent CLI a role runs (`executor = "..."` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Executor {
    /// Anthropic's Claude Code (`claude -p`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`codex exec`).
    Codex,
    /// Any program: the role's `command` argv.
    Command,
    /// Google's Gemini CLI (`gemini -o stream-json`).
    Gemini,
    /// GitHub's Copilot CLI (`copilot --output-format json`), on the role's own model
    /// provider (BYOK).
    Copilot,
    /// OpenCode (`opencode run`).
    Opencode,
    /// pi (`pi -p --mode json`).
    Pi,
    /// aider (`aider --message-file`), which edits files from the model's text answers.
    Aider,
    /// Kilo (`kilo run`), OpenCode's fork.
    Kilo,
    /// Any Agent Client Protocol agent (the role's `command`), through `gatehouse-acp`.
    Acp,
}

impl Executor {
    /// What the CLI does its own way.
    pub(crate) fn cli(self) -> &'static dyn Cli {
        match self {
            Self::ClaudeCode => &claude_code::ClaudeCode,
            Self::Codex => &codex::Codex,
            Self::Command => &command::Command,
            Self::Gemini => &gemini::Gemini,
            Self::Copilot => &copilot::Copilot,
            Self::Opencode => &opencode::OpenCode,
            Self::Pi => &pi::Pi,
            Self::Aider => &aider::Aider,
            Self::Kilo => &kilo::Kilo,
            Self::Acp => &acp::Acp,
        }
    }

    /// The name used in the configuration, so messages quote what the user wrote.
    pub fn as_str(self) -> &'static str {
        self.cli().name()
    }

    /// The model APIs the CLI can speak through the gateway; empty for a program of the
    /// role's own, which may speak any or none.
    pub fn model_apis(self) -> &'static [ModelApi] {
        self.cli().model_apis()
    }

    /// The CLI's own program (`claude`); `None` for executors whose program the role
    /// names (`command`, `acp`).
    pub fn program(self) -> Option<&'static str> {
        self.cli().program()
    }

    /// How to install the CLI on a runner's host, for a doctor's hint; `None` for a
    /// program of the role's own.
    pub fn install(self) -> Option<&'static str> {
        self.cli().install()
    }

    /// Where the CLI keeps the sessions it resumes; `None` for one without sessions.
    pub fn session_files(self) -> Option<SessionFiles> {
        self.cli().session_files()
    }

    /// Whether its CLI can be handed MCP servers ([`crate::Tools::mcp`]); pi, aider and a
    /// program of the role's own cannot, and a role naming `mcp` on them is refused.
    pub fn takes_mcp(self) -> bool {
        self.cli().takes_mcp()
    }

    /// Whether an attempt of `role` needs the `gatehouse-acp` shim in its sandbox: an ACP
    /// agent speaks through it, and a CLI's permission hook is answered by it.
    pub fn needs_shim(role: &Role) -> bool {
        role.executor == Self::Acp
            || (role.permissions.is_some() && role.executor.cli().permission_hook().is_some())
    }

    /// Refuses an attempt of `role` whose MCP servers (the role's and its project's, as
    /// `names`) include one its CLI's permission hook could not hold rules on — a name
    /// the CLI rewrites or cannot split from its tools'. Only a role with `permissions` is
    /// concerned; checked when the configuration loads (the role's own servers) and again
    /// when an attempt gets its project's.
    pub fn check_mcp_names<'a>(
        role: &Role,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), RoleError> {
        if role.permissions.is_none() {
            return Ok(());
        }
        let cli = role.executor.cli();
        match names
            .into_iter()
            .find_map(|name| cli.unhookable_mcp_name(name))
        {
            Some(why) => Err(RoleError::PermissionsNotEnforced {
                executor: role.executor,
                why,
            }),
            None => Ok(()),
        }
    }

    /// Whether a turn gives it the conversation so far as a file (`{transcript_file}`)
    /// rather than resuming a session of its own.
    pub fn reads_transcript(self) -> bool {
        self.cli().reads_transcript()
    }

    /// Whether the CLI reads the skills copied where it looks for them by itself; when not,
    /// the runner lists them (name, where, when to read) in the system text instead.
    pub fn reads_skills(self) -> bool {
        self.cli().reads_skills()
    }

    /// Where the CLI reads a user's skills, as shell words (`"$HOME/.agents/skills"`).
    pub fn skills_homes(self) -> &'static [&'static str] {
        self.cli().skills_homes()
    }
}

impl fmt::Display for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A model provider's API, as a CLI speaks it to the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelApi {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's APIs (Responses, Chat Completions), at OpenAI or elsewhere.
    OpenAi,
    /// Google's Gemini API.
    Gemini,
}

impl ModelApi {
    /// As messages name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "Anthropic's Messages API",
            Self::OpenAi => "OpenAI's API",
            Self::Gemini => "Google's Gemini API",
        }
    }
}

/// One call of a CLI: the files it reads, as the sandbox sees them, and the session it
/// continues. `resume` has passed [`crate::check_session_id`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    pub(crate) prompt_file: &'a str,
    /// `None` when the role has no system text.
    pub(crate) system_file: Option<&'a str>,
    /// The session to continue, for a turn after the first.
    pub(crate) resume: Option<&'a str>,
    /// The conversation so far, for a turn of a CLI that reads it.
    pub(crate) transcript_file: Option<&'a str>,
    /// The API the gateway serves the role's provider in, whose variables
    /// (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL` and their keys)
    /// the sandbox has; `None` when the CLI reaches its model on its own.
    pub(crate) api: Option<ModelApi>,
    /// The MCP servers, permission tool and skills to hand the CLI.
    pub(crate) tools: &'a crate::tools::Tools,
}

/// What differs from one CLI to the next.
pub(crate) trait Cli: Sync {
    /// `executor = "<name>"`.
    fn name(&self) -> &'static str;

    /// The program the sandbox must have; `None` when the role names it.
    fn program(&self) -> Option<&'static str>;

    /// How to install it on a host (`npm install -g ...`).
    fn install(&self) -> Option<&'static str>;

    /// The model APIs it can speak through the gateway; empty for any.
    fn model_apis(&self) -> &'static [ModelApi];

    /// Variables it runs with before the role's own `env` (which wins).
    fn environment(&self, role: &Role) -> Vec<(String, String)>;

    /// The `sh -c` command line for one call. Every interpolated value is shell-quoted.
    fn command_line(&self, role: &Role, call: &Call<'_>) -> String;

    /// Checks the role's keys that belong to one executor or another: a CLI's role has no
    /// `command`, which belongs to executor `command`.
    fn check(&self, role: &Role) -> Result<(), RoleError> {
        if role.command.is_empty() {
            Ok(())
        } else {
            Err(RoleError::CommandNotAllowed {
                executor: role.executor,
            })
        }
    }

    /// Whether it can be handed MCP servers; its command line hands it `call.tools.mcp`.
    fn takes_mcp(&self) -> bool {
        true
    }

    /// The pre-tool hook through which the CLI asks Gatehouse about every tool call when
    /// the role has `permissions` ([`crate::permission::hook`]); its command line then
    /// configures the hook, and the runner mounts the shim that answers it.
    fn permission_hook(&self) -> Option<crate::permission::hook::Hook> {
        None
    }

    /// Why the CLI's permission hook could not hold rules on an MCP server named `name`,
    /// if it could not ([`Executor::check_mcp_names`]).
    fn unhookable_mcp_name(&self, _name: &str) -> Option<&'static str> {
        None
    }

    /// Whether the CLI can enforce a role's `permissions`: every rule, `ask` never
    /// becoming allow. A CLI with a [`Cli::permission_hook`] can, since the runner decides
    /// each call by the whole policy; others say so in their file, or are refused.
    /// `permissions` is the role's, already checked to parse.
    fn check_permissions(
        &self,
        role: &Role,
        _permissions: &crate::permission::Permissions,
    ) -> Result<(), RoleError> {
        if self.permission_hook().is_some() {
            return Ok(());
        }
        Err(RoleError::PermissionsNotEnforced {
            executor: role.executor,
            why: self.permissions_missing(),
        })
    }

    /// What the CLI lacks for `permissions`, for the message refusing them: that Gatehouse
    /// cannot hand it rules it would enforce, every `ask` put to a person, with the ACP
    /// command that runs the same agent under a policy where there is one.
    fn permissions_missing(&self) -> &'static str {
        match self.name() {
            "pi" => "pi has no permission rules; over ACP: command = [\"pi-acp\"]",
            "command" => "a program of the role's own is not Gatehouse's to restrict",
            _ => "it has no permission rules Gatehouse can hand it",
        }
    }

    /// Where it keeps the sessions it resumes.
    fn session_files(&self) -> Option<SessionFiles> {
        None
    }

    /// Whether a turn hands it the conversation as a file instead of a session.
    fn reads_transcript(&self) -> bool {
        false
    }

    /// The folders, as double-quoted shell words (they may name `$HOME` and the CLI's own
    /// variables), where the pinned version of the CLI reads a user's skills
    /// (`<folder>/<name>/SKILL.md`): an attempt's skills are copied into each before the
    /// call. Empty for a CLI that reads none.
    fn skills_homes(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the CLI finds the skills copied into [`Cli::skills_homes`] on its own;
    /// otherwise the runner lists them in the system text ([`crate::skills_note`]).
    fn reads_skills(&self) -> bool {
        !self.skills_homes().is_empty()
    }

    /// A reader of its output as it arrives, for the attempt's trace.
    fn events(&self) -> Box<dyn Events>;

    /// Usage, the failure and the final message, read from the tail of its stdout (the
    /// tail may start mid-line); `model` is recorded for usage the output does not
    /// attribute.
    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError>;
}

/// Pairs of variable names and values as owned strings.
pub(crate) fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// `text` as one shell word in which only the variables `vars` (as `${NAME}`) expand:
/// everything else is quoted, so a model name or an argument from the configuration is
/// never run. For settings that carry the gateway's address or the attempt's token.
pub(crate) fn expand(text: &str, vars: &[&str]) -> String {
    let mut word = String::new();
    let mut rest = text;
    while let Some((at, name)) = vars
        .iter()
        .filter_map(|name| Some((rest.find(&format!("${{{name}}}"))?, *name)))
        .min()
    {
        if at > 0 {
            word.push_str(&crate::invocation::quote(&rest[..at]));
        }
        word.push_str(&format!("\"${{{name}}}\""));
        rest = &rest[at + name.len() + 3..];
    }
    if !rest.is_empty() || word.is_empty() {
        word.push_str(&crate::invocation::quote(rest));
    }
    word
}

/// A shell step that writes a settings file at `path` under the CLI's `$HOME` (creating
/// its folder), for a CLI configured by files only. Gatehouse owns the file and writes it
/// before every call, so it follows the gateway's address from one attempt to the next;
/// `contents` goes through [`expand`] with `vars`.
pub(crate) fn home_file(path: &str, contents: &str, vars: &[&str]) -> String {
    let file = format!("\"$HOME\"/{}", crate::invocation::quote(path));
    let dir = match path.rsplit_once('/') {
        Some((dir, _)) => format!("\"$HOME\"/{}", crate::invocation::quote(dir)),
        None => "\"$HOME\"".to_owned(),
    };
    format!(
        "mkdir -p {dir} && printf '%s\\n' {} > {file}",
        expand(contents, vars)
    )
}

#[cfg(test)]
mod tests {
    use super::{expand, home_file};

    #[test]
    fn only_the_named_variables_expand() {
        assert_eq!(expand("plain", &[]), "plain");
        assert_eq!(expand("", &[]), "''");
        assert_eq!(
            expand(r#"{"url":"${A}/v1","key":"$(rm -rf /) ${B}"}"#, &["A"]),
            r#"'{"url":"'"${A}"'/v1","key":"$(rm -rf /) ${B}"}'"#
        );
        assert_eq!(expand("${A}${B}", &["A", "B"]), r#""${A}""${B}""#);
    }

    #[test]
    fn a_home_file_is_written_by_the_shell_as_given() {
        let dir = tempfile::tempdir().expect("home");
        let step = home_file(
            ".cli/settings.json",
            r#"{"url":"${URL}","model":"it's $(echo no)"}"#,
            &["URL"],
        );
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&step)
            .env("HOME", dir.path())
            .env("URL", "http://127.0.0.1:9/x")
            .status()
            .expect("sh");
        assert!(status.success(), "{step}");
        let written = std::fs::read_to_string(dir.path().join(".cli/settings.json")).expect("file");
        assert_eq!(
            written,
            "{\"url\":\"http://127.0.0.1:9/x\",\"model\":\"it's $(echo no)\"}\n"
        );
    }
}
