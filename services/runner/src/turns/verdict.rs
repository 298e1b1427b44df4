//! How a turn's attempt ended, judged from the sandbox's exit and the trace of the CLI's
//! output: the reply to post, or a reason a person in the thread can act on (which exit
//! code and the CLI's last words, a missing executor, a timeout, a stop, output that holds
//! no result). Pure: the runner gathers the facts, this decides.

use gatehouse_agent::{Role, Trace};
use gatehouse_events::{NodeOutcome, TurnOutcome};
use gatehouse_sandbox::{Exit, ExitStatus, Profile};
use gatehouse_store::TurnStatus;

use super::progress::Ending;
use crate::outcome::judge;

/// How much of a line of output a reason quotes, in characters.
const QUOTED_CHARS: usize = 200;

/// `sh`'s exit code for a command it cannot find.
const NOT_FOUND: i32 = 127;

/// What an attempt ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub outcome: TurnOutcome,
    pub status: TurnStatus,
    pub ending: Ending,
}

impl Verdict {
    pub(crate) fn failed(reason: String) -> Self {
        Self {
            outcome: TurnOutcome::Failed { reason },
            status: TurnStatus::Failed,
            ending: Ending::Failed,
        }
    }

    pub(crate) fn stopped() -> Self {
        Self {
            ending: Ending::Stopped,
            ..Self::failed("stopped".to_owned())
        }
    }

    /// Adds `notes` (hosts the egress proxy refused) to the reply, or to why it failed,
    /// so the thread hears of them once.
    pub(crate) fn noting(mut self, notes: &[String]) -> Self {
        if notes.is_empty() {
            return self;
        }
        match &mut self.outcome {
            TurnOutcome::Replied { reply } => {
                reply.push('\n');
                for note in notes {
                    reply.push_str("\n⚠ ");
                    reply.push_str(note);
                }
            }
            TurnOutcome::Failed { reason } => {
                reason.push_str("; ");
                reason.push_str(&notes.join("; "));
            }
            TurnOutcome::Interrupted => {}
        }
        self
    }

    /// The reply, or why it failed, as stored.
    pub(crate) fn text(&self) -> (Option<&str>, Option<&str>) {
        match &self.outcome {
            TurnOutcome::Replied { reply } => (Some(reply), None),
            TurnOutcome::Failed { reason } => (None, Some(reason)),
            TurnOutcome::Interrupted => (None, None),
        }
    }
}

/// The last line each stream printed (secrets masked), for a reason to quote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LastLines {
    pub stdout: Option<String>,
    pub stderr: Option<String>,
}

/// What ran: the role's name and how it was configured.
pub(crate) struct Cli<'a> {
    pub role_name: &'a str,
    pub role: &'a Role,
    pub profile: &'a Profile,
    /// The wall-clock limit, in seconds.
    pub timeout_secs: u64,
}

/// Judges an attempt whose CLI ran (`Err`: the sandbox could not run it).
pub(crate) fn judge_turn(
    exit: &Result<Exit, String>,
    trace: &Trace,
    last: &LastLines,
    cli: &Cli<'_>,
) -> Verdict {
    let exit = match exit {
        Ok(exit) => exit,
        Err(reason) => return Verdict::failed(reason.clone()),
    };
    match exit.status {
        ExitStatus::Exited(0) => ended_well(trace),
        ExitStatus::Exited(NOT_FOUND) => Verdict::failed(missing(cli)),
        ExitStatus::Exited(_)
            if let Some(line) =
                crate::agent::mcp_program_missing(&exit.status, last.stderr.as_deref()) =>
        {
            Verdict::failed(format!("the CLI did not start: {}", quote(line)))
        }
        ExitStatus::Exited(code) => {
            let said = last
                .stderr
                .clone()
                .or_else(|| trace.failure.clone())
                .or_else(|| last.stdout.clone());
            let mut reason = match said {
                Some(said) => format!("the CLI exited with code {code}: {}", quote(&said)),
                None => format!("the CLI exited with code {code}"),
            };
            if let Some(retry) = &trace.retry {
                reason.push_str(&format!("; it gave up {}", retry.summary()));
            }
            Verdict::failed(reason)
        }
        ExitStatus::TimedOut => Verdict::failed(format!(
            "timed out after {}",
            super::progress::duration(cli.timeout_secs.saturating_mul(1000))
        )),
        ExitStatus::Cancelled => Verdict::stopped(),
        ExitStatus::Signalled(_) | ExitStatus::OutOfMemory => {
            match judge(exit, cli.profile, None).outcome {
                NodeOutcome::Failed { reason } => Verdict::failed(format!("the CLI was {reason}")),
                _ => Verdict::failed("the CLI did not finish".to_owned()),
            }
        }
    }
}

/// An exit 0: the CLI's reply, unless its output says it failed or holds none.
fn ended_well(trace: &Trace) -> Verdict {
    match (&trace.reply, &trace.failure) {
        (Some(reply), None) => Verdict {
            outcome: TurnOutcome::Replied {
                reply: reply.clone(),
            },
            status: TurnStatus::Replied,
            ending: Ending::Done,
        },
        (Some(_), Some(failure)) => {
            Verdict::failed(format!("the agent reported an error: {}", quote(failure)))
        }
        (None, _) if trace.unparsed_lines > 0 => Verdict::failed(format!(
            "the CLI ended without a result; {} of its output could not be read",
            lines(trace.unparsed_lines)
        )),
        (None, Some(failure)) => Verdict::failed(format!(
            "the CLI ended without a result: {}",
            quote(failure)
        )),
        (None, None) => Verdict::failed("the CLI ended without a result".to_owned()),
    }
}

/// The sandbox has no such program.
fn missing(cli: &Cli<'_>) -> String {
    let program = cli.role.program().unwrap_or_default();
    format!(
        "the sandbox has no `{}` command (role `{}`, executor {})",
        quote(program),
        cli.role_name,
        cli.role.executor
    )
}

fn lines(n: u64) -> String {
    if n == 1 {
        "1 line".to_owned()
    } else {
        format!("{n} lines")
    }
}

/// One line of untrusted output, trimmed and cut.
fn quote(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= QUOTED_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(QUOTED_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use gatehouse_agent::Executor;

    fn exit(status: ExitStatus) -> Result<Exit, String> {
        Ok(Exit {
            status,
            duration: Duration::from_secs(1),
            pids_limit_reached: false,
            stdout_tail: Vec::new(),
        })
    }

    fn verdict(status: ExitStatus, trace: &Trace, last: &LastLines) -> Verdict {
        let role = Role::new(Executor::ClaudeCode);
        let profile = Profile::default();
        let cli = Cli {
            role_name: "assistant",
            role: &role,
            profile: &profile,
            timeout_secs: 1800,
        };
        judge_turn(&exit(status), trace, last, &cli)
    }

    fn reason(v: &Verdict) -> &str {
        v.text().1.unwrap_or_default()
    }

    #[test]
    fn a_reply_is_replied_and_a_stop_is_stopped() {
        let trace = Trace {
            reply: Some("Fixed.".into()),
            ..Trace::default()
        };
        let v = verdict(ExitStatus::Exited(0), &trace, &LastLines::default());
        assert_eq!(v.text(), (Some("Fixed."), None));
        assert_eq!((v.status, v.ending), (TurnStatus::Replied, Ending::Done));
        let v = verdict(ExitStatus::Cancelled, &trace, &LastLines::default());
        assert_eq!((reason(&v), v.ending), ("stopped", Ending::Stopped));
        let v = verdict(ExitStatus::TimedOut, &trace, &LastLines::default());
        assert_eq!(reason(&v), "timed out after 30m 00s");
    }

    #[test]
    fn failures_name_the_exit_code_and_the_last_words() {
        let last = LastLines {
            stdout: Some("partial".into()),
            stderr: Some(format!("  error: {}", "x".repeat(300))),
        };
        let v = verdict(ExitStatus::Exited(3), &Trace::default(), &last);
        assert!(
            reason(&v).starts_with("the CLI exited with code 3: error: xxx"),
            "{v:?}"
        );
        assert_eq!(
            reason(&v).chars().count(),
            "the CLI exited with code 3: ".len() + 200
        );
        let only_stdout = LastLines {
            stdout: Some("boom".into()),
            stderr: None,
        };
        let v = verdict(ExitStatus::Exited(3), &Trace::default(), &only_stdout);
        assert_eq!(reason(&v), "the CLI exited with code 3: boom");
        let v = verdict(ExitStatus::Exited(127), &Trace::default(), &last);
        assert_eq!(
            reason(&v),
            "the sandbox has no `claude` command (role `assistant`, executor claude-code)"
        );
        assert_eq!(v.ending, Ending::Failed);
    }

    #[test]
    fn a_missing_mcp_server_is_the_reason_as_the_check_said_it() {
        let said = "MCP server `docs` runs `docs-mcp`, which this sandbox (image i) does not \
                    have; install it in the image or remove `docs` from the role's or project's mcp";
        let last = LastLines {
            stdout: None,
            stderr: Some(said.to_owned()),
        };
        let code = gatehouse_agent::MCP_PROGRAM_MISSING;
        let v = verdict(ExitStatus::Exited(code), &Trace::default(), &last);
        assert_eq!(reason(&v), format!("the CLI did not start: {said}"));
        // The same status with other words is any CLI's failure.
        let other = LastLines {
            stdout: None,
            stderr: Some("config error".to_owned()),
        };
        let v = verdict(ExitStatus::Exited(code), &Trace::default(), &other);
        assert_eq!(
            reason(&v),
            format!("the CLI exited with code {code}: config error")
        );
    }

    #[test]
    fn a_cli_that_gave_up_retrying_says_how_often_and_why() {
        let trace = Trace {
            failure: Some("API Error: 503 the provider failed".into()),
            retry: Some(gatehouse_agent::Retry {
                attempt: 3,
                max_retries: Some(3),
                status: Some(503),
                error: "server_error".into(),
                at_ms: 4000,
            }),
            ..Trace::default()
        };
        let v = verdict(ExitStatus::Exited(1), &trace, &LastLines::default());
        assert_eq!(
            reason(&v),
            "the CLI exited with code 1: API Error: 503 the provider failed; it gave up after 3 \
             retries of the model request (last: 503 server_error)"
        );
    }

    #[test]
    fn output_without_a_result_fails_saying_so() {
        let garbage = Trace {
            unparsed_lines: 2,
            failure: Some("claude-code printed no result".into()),
            ..Trace::default()
        };
        let v = verdict(ExitStatus::Exited(0), &garbage, &LastLines::default());
        assert_eq!(
            reason(&v),
            "the CLI ended without a result; 2 lines of its output could not be read"
        );
        let stopped = Trace {
            failure: Some("Claude Code stopped before printing its result".into()),
            ..Trace::default()
        };
        let v = verdict(ExitStatus::Exited(0), &stopped, &LastLines::default());
        assert_eq!(
            reason(&v),
            "the CLI ended without a result: Claude Code stopped before printing its result"
        );
        let v = verdict(
            ExitStatus::Exited(0),
            &Trace::default(),
            &LastLines::default(),
        );
        assert_eq!(reason(&v), "the CLI ended without a result");
        let erred = Trace {
            reply: Some("half".into()),
            failure: Some("error_max_turns".into()),
            ..Trace::default()
        };
        let v = verdict(ExitStatus::Exited(0), &erred, &LastLines::default());
        assert_eq!(reason(&v), "the agent reported an error: error_max_turns");
    }
}
