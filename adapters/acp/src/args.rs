//! The command line, checked before the agent is started, each mistake said in a way that
//! tells what to change:
//!
//! `gatehouse-acp --prompt-file F [--system-file S] [--resume SESSION]
//! [--transcript-file T] [--mcp JSON] [--mode MODE] [--timeout SECS] [--cancel-grace SECS]
//! -- AGENT ARGS...`

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How to use the shim, printed with `--help` and after a usage error.
pub const USAGE: &str = "usage: gatehouse-acp --prompt-file FILE [--system-file FILE] \
[--resume SESSION_ID] [--transcript-file FILE] [--mcp JSON] [--mode MODE_ID] [--timeout SECS] \
[--cancel-grace SECS] -- AGENT [ARGS...]";

/// How long `initialize`, `session/new`, `session/load` and `session/set_mode` may take
/// unless `--timeout` says otherwise: agents that start Node and read their config took up
/// to 5 s in the survey; a minute leaves room for a slow container without hanging a turn.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a cancelled prompt may take to return unless `--cancel-grace` says otherwise:
/// goose finishes its in-flight stream first (survey: about 10 s at one event a second),
/// the others answer at once.
const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The user's message.
    pub prompt_file: PathBuf,
    /// The role's system text, sent ahead of the prompt in a new session.
    pub system_file: Option<PathBuf>,
    /// The session to continue with `session/load`.
    pub resume: Option<String>,
    /// The conversation so far (the runner's `transcript.jsonl`), sent ahead of the prompt
    /// when the session cannot be loaded.
    pub transcript_file: Option<PathBuf>,
    /// The MCP servers `session/new` and `session/load` carry (`mcpServers`), checked
    /// ([`crate::mcp::servers`]); empty without `--mcp`.
    pub mcp: Vec<serde_json::Value>,
    /// A `session/set_mode` mode id (`yolo`, `bypassPermissions`, …).
    pub mode: Option<String>,
    /// The limit for each request before the prompt.
    pub timeout: Duration,
    /// How long a prompt may take to return once cancelled.
    pub cancel_grace: Duration,
    /// The agent's program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Invocation {
    /// The agent's command as one line, for messages that must say which agent failed.
    pub fn command(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|word| word.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Why the command line was not accepted (or `--help`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// `--help` or `-h`: not an error, the usage is printed and the shim exits 0.
    #[error("{USAGE}")]
    Help,
    #[error("unknown argument `{0}`: put the agent's command after `--`")]
    Unknown(String),
    #[error("`{0}` needs a value")]
    MissingValue(&'static str),
    #[error("`{0}` was given twice")]
    Twice(&'static str),
    #[error("`{option} {value}` is not a number of seconds")]
    NotSeconds { option: &'static str, value: String },
    #[error("`--prompt-file` is required")]
    NoPrompt,
    #[error("no agent: put its command after `--` (e.g. `-- gemini --acp`)")]
    NoProgram,
    #[error("`{0}` is not valid UTF-8")]
    NotUtf8(&'static str),
    #[error("`--mcp`: {0}")]
    Mcp(String),
}

/// The arguments after the program's name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, ArgsError> {
    let mut args = args.into_iter();
    let mut prompt_file = None;
    let mut system_file = None;
    let mut resume = None;
    let mut transcript_file = None;
    let mut mode = None;
    let mut mcp = None;
    let mut timeout = None;
    let mut cancel_grace = None;
    let mut rest = Vec::new();
    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str() else {
            return Err(ArgsError::Unknown(arg.to_string_lossy().into_owned()));
        };
        let option: &'static str = match text {
            "--" => {
                rest.extend(args.by_ref());
                break;
            }
            "-h" | "--help" => return Err(ArgsError::Help),
            "--prompt-file" => "--prompt-file",
            "--system-file" => "--system-file",
            "--resume" => "--resume",
            "--transcript-file" => "--transcript-file",
            "--mode" => "--mode",
            "--mcp" => "--mcp",
            "--timeout" => "--timeout",
            "--cancel-grace" => "--cancel-grace",
            other => return Err(ArgsError::Unknown(other.to_owned())),
        };
        let value = args.next().ok_or(ArgsError::MissingValue(option))?;
        let slot_was_empty = match option {
            "--prompt-file" => prompt_file.replace(PathBuf::from(value)).is_none(),
            "--system-file" => system_file.replace(PathBuf::from(value)).is_none(),
            "--transcript-file" => transcript_file.replace(PathBuf::from(value)).is_none(),
            "--resume" => resume.replace(utf8(option, value)?).is_none(),
            "--mode" => mode.replace(utf8(option, value)?).is_none(),
            "--mcp" => mcp
                .replace(crate::mcp::servers(&utf8(option, value)?).map_err(ArgsError::Mcp)?)
                .is_none(),
            "--timeout" => timeout.replace(seconds(option, value)?).is_none(),
            _ => cancel_grace.replace(seconds(option, value)?).is_none(),
        };
        if !slot_was_empty {
            return Err(ArgsError::Twice(option));
        }
    }
    let mut rest = rest.into_iter();
    let program = rest.next().ok_or(ArgsError::NoProgram)?;
    if program.is_empty() {
        return Err(ArgsError::NoProgram);
    }
    Ok(Invocation {
        prompt_file: prompt_file.ok_or(ArgsError::NoPrompt)?,
        system_file,
        resume,
        transcript_file,
        mcp: mcp.unwrap_or_default(),
        mode,
        timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
        cancel_grace: cancel_grace.unwrap_or(DEFAULT_CANCEL_GRACE),
        program,
        args: rest.collect(),
    })
}

fn utf8(option: &'static str, value: OsString) -> Result<String, ArgsError> {
    value.into_string().map_err(|_| ArgsError::NotUtf8(option))
}

fn seconds(option: &'static str, value: OsString) -> Result<Duration, ArgsError> {
    let text = utf8(option, value)?;
    text.parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs >= 0.0 && *secs <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or(ArgsError::NotSeconds {
            option,
            value: text,
        })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::time::Duration;

    use super::{ArgsError, parse};

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn everything_before_the_separator_is_ours_and_the_rest_the_agents() {
        let invocation = parse(args(&[
            "--prompt-file",
            "/in/p.md",
            "--resume",
            "ses_1",
            "--timeout",
            "2.5",
            "--",
            "opencode",
            "acp",
            "--timeout",
        ]))
        .unwrap();
        assert_eq!(invocation.prompt_file.to_str(), Some("/in/p.md"));
        assert_eq!(invocation.resume.as_deref(), Some("ses_1"));
        assert_eq!(invocation.timeout, Duration::from_millis(2500));
        assert_eq!(invocation.command(), "opencode acp --timeout");
    }

    #[test]
    fn mistakes_are_named() {
        let cases: [(&[&str], ArgsError); 6] = [
            (&["--", "x"], ArgsError::NoPrompt),
            (&["--prompt-file", "p"], ArgsError::NoProgram),
            (&["--prompt-file"], ArgsError::MissingValue("--prompt-file")),
            (&["--bogus"], ArgsError::Unknown("--bogus".to_owned())),
            (
                &["--prompt-file", "p", "--prompt-file", "q", "--", "x"],
                ArgsError::Twice("--prompt-file"),
            ),
            (
                &["--prompt-file", "p", "--timeout", "soon", "--", "x"],
                ArgsError::NotSeconds {
                    option: "--timeout",
                    value: "soon".to_owned(),
                },
            ),
        ];
        for (words, expected) in cases {
            assert_eq!(parse(args(words)), Err(expected), "{words:?}");
        }
    }
}
