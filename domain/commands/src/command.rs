//! The commands people give Gatehouse, one row each: the value ([`Command`]), its words
//! ([`Verb`]: the word, the synopsis and what `help` says), what follows the word, and its
//! canonical text. Adding a command is a variant and a row in each list here; the words'
//! readers are [`crate::grammar`]'s and the quoting [`crate::render`]'s.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use crate::error::Problem;
use crate::grammar::{
    GateRef, IssueRef, decision, gate, id, issue_ref, next_word, no_more, optional_run, params,
    run_id, text,
};
use crate::id_ref::IdRef;
use crate::render::{quote_value, write_decision};

/// A command a person gave the bot, checked for shape only.
///
/// Whether the SOP, run or node exists is the engine's question: this crate is pure.
/// [`Display`](fmt::Display) writes the canonical text, which parses back to the same command
/// and is what edited comments are compared by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `run SOP [on OWNER/REPO#N] [KEY=VALUE ...]`: start a SOP.
    Run {
        /// The SOP id.
        sop: String,
        /// The issue to work on; `None` leaves it to the caller (the issue commented on, or
        /// none from chat).
        issue: Option<IssueRef>,
        /// The SOP's parameters; keys are unique.
        params: BTreeMap<String, String>,
    },
    /// `status [RUN]`: show a run.
    Status {
        /// The run (its id or a prefix); `None` means the one the conversation is about.
        run: Option<IdRef>,
    },
    /// `runs`: list the active runs.
    Runs,
    /// `approve [GATE] [COMMENT...]`: approve a gate.
    Approve {
        /// The gate; `None` means the one waiting in this conversation.
        gate: Option<GateRef>,
        /// Why, for the record; never `Some("")`.
        comment: Option<String>,
    },
    /// `reject [GATE] [COMMENT...]`: reject a gate.
    Reject {
        /// The gate; `None` means the one waiting in this conversation.
        gate: Option<GateRef>,
        /// Why, for the record; never `Some("")`.
        comment: Option<String>,
    },
    /// `send-back NODE [GATE] [COMMENT...]`: have a gate's work redone from `node`.
    SendBack {
        /// The node to run again.
        node: String,
        /// The gate; `None` means the one waiting in this conversation.
        gate: Option<GateRef>,
        /// What to change; the node sees it. Never `Some("")`.
        comment: Option<String>,
    },
    /// `cancel [RUN]`: stop a run.
    Cancel {
        /// The run (its id or a prefix); `None` means the one the conversation is about.
        run: Option<IdRef>,
    },
    /// `retry NODE`: run a failed node of the conversation's run again.
    Retry {
        /// The node to retry.
        node: String,
    },
    /// `steer TEXT`: stop the conversation's running turn and run this next.
    Steer {
        /// The message, verbatim; never empty.
        text: String,
    },
    /// `stop`: end the conversation's running turn.
    Stop,
    /// `ask ROLE TEXT`: have another of the project's roles answer, in the conversation's
    /// workspace.
    Ask {
        /// The role under `[roles]`.
        role: String,
        /// The question, verbatim; never empty.
        text: String,
    },
    /// `deliver [draft]`: commit the conversation's workspace and open or update its pull
    /// requests.
    Deliver {
        /// Open them as drafts.
        draft: bool,
    },
    /// `take over RUN`: pause a run of the conversation's requirement and give its workspace
    /// to the conversation.
    TakeOver {
        /// The run: its id or a prefix.
        run: IdRef,
    },
    /// `schedules`: list the schedules.
    Schedules,
    /// `sops`: list the SOPs the author may start here, with the parameters they need.
    Sops,
    /// `login`: send the author a one-time sign-in link to the web console, by direct
    /// message.
    Login,
    /// `help`: show [`help`].
    Help,
}

/// The command words, so that an error can name its command and show the usage before any
/// [`Command`] exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// `run`
    Run,
    /// `status`
    Status,
    /// `runs`
    Runs,
    /// `approve`
    Approve,
    /// `reject`
    Reject,
    /// `send-back`, also read as `send_back`
    SendBack,
    /// `cancel`
    Cancel,
    /// `retry`
    Retry,
    /// `steer`
    Steer,
    /// `stop`
    Stop,
    /// `ask`
    Ask,
    /// `deliver`
    Deliver,
    /// `take over`
    TakeOver,
    /// `schedules`
    Schedules,
    /// `sops`
    Sops,
    /// `login`
    Login,
    /// `help`
    Help,
}

impl Verb {
    /// In the order `help` lists them.
    const ALL: [Verb; 17] = [
        Verb::Run,
        Verb::Status,
        Verb::Runs,
        Verb::Approve,
        Verb::Reject,
        Verb::SendBack,
        Verb::Cancel,
        Verb::Retry,
        Verb::Steer,
        Verb::Stop,
        Verb::Ask,
        Verb::Deliver,
        Verb::TakeOver,
        Verb::Schedules,
        Verb::Sops,
        Verb::Login,
        Verb::Help,
    ];

    /// Reads a command word in any case. `send_back` is accepted because people reach for the
    /// underscore of identifiers as often as the hyphen.
    pub(crate) fn from_word(word: &str) -> Option<Verb> {
        let word = word.to_ascii_lowercase();
        if word == "send_back" {
            return Some(Verb::SendBack);
        }
        // Two words; the grammar reads the second.
        if word == "take" {
            return Some(Verb::TakeOver);
        }
        Verb::ALL.into_iter().find(|verb| verb.name() == word)
    }

    /// The command word, the one-line synopsis error messages quote, and what `help` says
    /// it does: everything about a command's words in one row.
    fn spec(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Verb::Run => (
                "run",
                "run SOP [on OWNER/REPO#N] [KEY=VALUE ...]",
                "start a SOP, on an issue, with parameters",
            ),
            Verb::Status => (
                "status",
                "status [RUN]",
                "show a run (default: this thread's)",
            ),
            Verb::Runs => ("runs", "runs", "list the active runs"),
            Verb::Approve => (
                "approve",
                "approve [GATE] [COMMENT...]",
                "approve a gate (default: the one waiting here)",
            ),
            Verb::Reject => (
                "reject",
                "reject [GATE] [COMMENT...]",
                "reject a gate (default: the one waiting here)",
            ),
            Verb::SendBack => (
                "send-back",
                "send-back NODE [GATE] [COMMENT...]",
                "have NODE redo its work, with the comment as instructions",
            ),
            Verb::Cancel => (
                "cancel",
                "cancel [RUN]",
                "cancel a run (default: this thread's)",
            ),
            Verb::Retry => (
                "retry",
                "retry NODE",
                "run a failed NODE of this thread's run again",
            ),
            Verb::Steer => (
                "steer",
                "steer TEXT",
                "stop the assistant's current turn and do this instead",
            ),
            Verb::Stop => ("stop", "stop", "stop the assistant's current turn"),
            Verb::Ask => (
                "ask",
                "ask ROLE TEXT",
                "have another ROLE answer, in this conversation's workspace",
            ),
            Verb::Deliver => (
                "deliver",
                "deliver [draft]",
                "open or update this conversation's pull requests",
            ),
            Verb::TakeOver => (
                "take over",
                "take over RUN",
                "pause RUN and carry on from its workspace in this conversation",
            ),
            Verb::Schedules => ("schedules", "schedules", "list the schedules"),
            Verb::Login => (
                "login",
                "login",
                "get a one-time sign-in link to the web console, by direct message",
            ),
            Verb::Sops => (
                "sops",
                "sops",
                "list the SOPs you may start here, with their parameters",
            ),
            Verb::Help => ("help", "help", "show this list"),
        }
    }

    /// The canonical command word.
    pub fn name(self) -> &'static str {
        self.spec().0
    }

    /// The one-line synopsis shown in error messages and in [`help`].
    pub fn usage(self) -> &'static str {
        self.spec().1
    }

    fn summary(self) -> &'static str {
        self.spec().2
    }

    /// Reads what follows the command word ([`crate::grammar`] has the word readers).
    pub(crate) fn read(self, rest: &str) -> Result<Command, Problem> {
        match self {
            Verb::Run => run(rest),
            Verb::Status => Ok(Command::Status {
                run: optional_run(rest)?,
            }),
            Verb::Runs => no_more(rest).map(|()| Command::Runs),
            Verb::Approve => {
                let (gate, comment) = decision(rest);
                Ok(Command::Approve { gate, comment })
            }
            Verb::Reject => {
                let (gate, comment) = decision(rest);
                Ok(Command::Reject { gate, comment })
            }
            Verb::SendBack => send_back(rest),
            Verb::Cancel => Ok(Command::Cancel {
                run: optional_run(rest)?,
            }),
            Verb::Retry => {
                let (node, rest) = next_word(rest).ok_or(Problem::Missing("a NODE"))?;
                let node = id(node, "NODE")?;
                no_more(rest)?;
                Ok(Command::Retry { node })
            }
            Verb::Steer => Ok(Command::Steer {
                text: text(rest).ok_or(Problem::Missing("the TEXT to steer with"))?,
            }),
            Verb::Stop => no_more(rest).map(|()| Command::Stop),
            Verb::Ask => {
                let (role, rest) = next_word(rest).ok_or(Problem::Missing("a ROLE"))?;
                let role = id(role, "ROLE")?;
                let text = text(rest).ok_or(Problem::Missing("the TEXT to ask"))?;
                Ok(Command::Ask { role, text })
            }
            Verb::Deliver => match next_word(rest) {
                None => Ok(Command::Deliver { draft: false }),
                Some((word, rest)) if word.eq_ignore_ascii_case("draft") => {
                    no_more(rest).map(|()| Command::Deliver { draft: true })
                }
                Some((word, _)) => Err(Problem::Unexpected(word.to_owned())),
            },
            Verb::TakeOver => {
                let rest = match next_word(rest) {
                    Some((word, rest)) if word.eq_ignore_ascii_case("over") => rest,
                    _ => return Err(Problem::Missing("`over` and a RUN")),
                };
                let (word, rest) = next_word(rest).ok_or(Problem::Missing("a RUN"))?;
                let run = run_id(word).ok_or_else(|| Problem::NotARun(word.to_owned()))?;
                no_more(rest)?;
                Ok(Command::TakeOver { run })
            }
            Verb::Schedules => no_more(rest).map(|()| Command::Schedules),
            Verb::Sops => no_more(rest).map(|()| Command::Sops),
            Verb::Login => no_more(rest).map(|()| Command::Login),
            // Asking for help should never fail, so `help me` is help too.
            Verb::Help => Ok(Command::Help),
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The reply to `help` and the text to show with any command the bot could not read: one
/// line per command, built from the same usage strings the error messages quote.
pub fn help() -> &'static str {
    static HELP: LazyLock<String> = LazyLock::new(|| {
        let width = Verb::ALL
            .iter()
            .map(|verb| verb.usage().len())
            .max()
            .unwrap_or(0);
        let mut text = String::from(
            "Commands (RUN is a run id or its first 4+ hex digits, GATE is RUN/NODE, COMMENT is the rest of the line):\n",
        );
        for verb in Verb::ALL {
            text.push_str(&format!("  {:width$}  {}\n", verb.usage(), verb.summary()));
        }
        text
    });
    &HELP
}

impl Command {
    /// The command word, for messages and metrics that do not need the arguments.
    pub fn verb(&self) -> Verb {
        match self {
            Command::Run { .. } => Verb::Run,
            Command::Status { .. } => Verb::Status,
            Command::Runs => Verb::Runs,
            Command::Approve { .. } => Verb::Approve,
            Command::Reject { .. } => Verb::Reject,
            Command::SendBack { .. } => Verb::SendBack,
            Command::Cancel { .. } => Verb::Cancel,
            Command::Retry { .. } => Verb::Retry,
            Command::Steer { .. } => Verb::Steer,
            Command::Stop => Verb::Stop,
            Command::Ask { .. } => Verb::Ask,
            Command::Deliver { .. } => Verb::Deliver,
            Command::TakeOver { .. } => Verb::TakeOver,
            Command::Schedules => Verb::Schedules,
            Command::Sops => Verb::Sops,
            Command::Login => Verb::Login,
            Command::Help => Verb::Help,
        }
    }
}

/// The canonical text, which parses back as the same value.
impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.verb().name())?;
        match self {
            Command::Run { sop, issue, params } => {
                write!(f, " {sop}")?;
                if let Some(issue) = issue {
                    write!(f, " on {issue}")?;
                }
                for (key, value) in params {
                    write!(f, " {key}={}", quote_value(value)?)?;
                }
                Ok(())
            }
            Command::Status { run } | Command::Cancel { run } => match run {
                Some(run) => write!(f, " {run}"),
                None => Ok(()),
            },
            Command::Approve { gate, comment } | Command::Reject { gate, comment } => {
                write_decision(f, gate.as_ref(), comment.as_deref())
            }
            Command::SendBack {
                node,
                gate,
                comment,
            } => {
                write!(f, " {node}")?;
                write_decision(f, gate.as_ref(), comment.as_deref())
            }
            Command::Retry { node } => write!(f, " {node}"),
            Command::Steer { text } => write!(f, " {text}"),
            Command::Ask { role, text } => write!(f, " {role} {text}"),
            Command::Deliver { draft: true } => write!(f, " draft"),
            Command::Deliver { draft: false } => Ok(()),
            Command::TakeOver { run } => write!(f, " {run}"),
            Command::Runs
            | Command::Stop
            | Command::Schedules
            | Command::Sops
            | Command::Login
            | Command::Help => Ok(()),
        }
    }
}

fn run(rest: &str) -> Result<Command, Problem> {
    const NO_SOP: Problem = Problem::Missing("a SOP");
    let (sop, mut rest) = next_word(rest).ok_or(NO_SOP)?;
    // `run on acme/api#1` forgot the SOP; reading `on` as one would blame the issue instead.
    if sop.eq_ignore_ascii_case("on") {
        return Err(NO_SOP);
    }
    let sop = id(sop, "SOP")?;
    let mut issue = None;
    if let Some((word, after)) = next_word(rest)
        && word.eq_ignore_ascii_case("on")
    {
        let (target, after) =
            next_word(after).ok_or(Problem::Missing("OWNER/REPO#N after `on`"))?;
        issue = Some(issue_ref(target)?);
        rest = after;
    }
    Ok(Command::Run {
        sop,
        issue,
        params: params(rest)?,
    })
}

fn send_back(rest: &str) -> Result<Command, Problem> {
    const NO_NODE: Problem = Problem::Missing("the NODE to send back to");
    let (node, rest) = next_word(rest).ok_or(NO_NODE)?;
    // A GATE first means the NODE was left out, which says more than "not a NODE id".
    if gate(node).is_some() {
        return Err(NO_NODE);
    }
    let node = id(node, "NODE")?;
    let (gate, comment) = decision(rest);
    Ok(Command::SendBack {
        node,
        gate,
        comment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_command_on_its_own_line() {
        let text = help();
        for verb in Verb::ALL {
            let line = text
                .lines()
                .find(|line| line.trim_start().starts_with(verb.usage()))
                .unwrap_or_else(|| panic!("help has no line for {verb}"));
            assert!(line.ends_with(verb.summary()), "{line}");
        }
        assert_eq!(text.lines().count(), Verb::ALL.len() + 1);
    }

    #[test]
    fn reads_command_words_in_any_case_and_the_alias() {
        assert_eq!(Verb::from_word("Approve"), Some(Verb::Approve));
        assert_eq!(Verb::from_word("SEND-BACK"), Some(Verb::SendBack));
        assert_eq!(Verb::from_word("send_back"), Some(Verb::SendBack));
        assert_eq!(Verb::from_word("Send_Back"), Some(Verb::SendBack));
        assert_eq!(Verb::from_word("sendback"), None);
        for verb in Verb::ALL {
            assert_eq!(Verb::from_word(verb.name()), Some(verb));
        }
    }
}
