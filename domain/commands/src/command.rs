//! The commands people give Gatehouse, their words, and the help that lists them: values
//! only. Reading them from text is the grammar's business and writing them the renderer's;
//! neither is known here.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use uuid::Uuid;

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
        /// The run; `None` means the one the conversation is about.
        run: Option<Uuid>,
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
        /// The run; `None` means the one the conversation is about.
        run: Option<Uuid>,
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
        /// The run.
        run: Uuid,
    },
    /// `schedules`: list the schedules.
    Schedules,
    /// `login`: send the author a one-time sign-in link to the web console, by direct
    /// message.
    Login,
    /// `help`: show [`help`].
    Help,
}

/// A GitHub issue a run targets, written `OWNER/REPO#N`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IssueRef {
    /// The user or organisation.
    pub owner: String,
    /// The repository name.
    pub repo: String,
    /// The issue number; never 0.
    pub number: u64,
}

/// A gate of a run, written `RUN/NODE`: gates are nodes, and node ids repeat across runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GateRef {
    /// The run the gate belongs to.
    pub run: Uuid,
    /// The gate node.
    pub node: String,
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
    /// `login`
    Login,
    /// `help`
    Help,
}

impl Verb {
    /// In the order `help` lists them.
    const ALL: [Verb; 16] = [
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

    /// The canonical command word.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Run => "run",
            Verb::Status => "status",
            Verb::Runs => "runs",
            Verb::Approve => "approve",
            Verb::Reject => "reject",
            Verb::SendBack => "send-back",
            Verb::Cancel => "cancel",
            Verb::Retry => "retry",
            Verb::Steer => "steer",
            Verb::Stop => "stop",
            Verb::Ask => "ask",
            Verb::Deliver => "deliver",
            Verb::TakeOver => "take over",
            Verb::Schedules => "schedules",
            Verb::Login => "login",
            Verb::Help => "help",
        }
    }

    /// The one-line synopsis shown in error messages and in [`help`].
    pub fn usage(self) -> &'static str {
        match self {
            Verb::Run => "run SOP [on OWNER/REPO#N] [KEY=VALUE ...]",
            Verb::Status => "status [RUN]",
            Verb::Runs => "runs",
            Verb::Approve => "approve [GATE] [COMMENT...]",
            Verb::Reject => "reject [GATE] [COMMENT...]",
            Verb::SendBack => "send-back NODE [GATE] [COMMENT...]",
            Verb::Cancel => "cancel [RUN]",
            Verb::Retry => "retry NODE",
            Verb::Steer => "steer TEXT",
            Verb::Stop => "stop",
            Verb::Ask => "ask ROLE TEXT",
            Verb::Deliver => "deliver [draft]",
            Verb::TakeOver => "take over RUN",
            Verb::Schedules => "schedules",
            Verb::Login => "login",
            Verb::Help => "help",
        }
    }

    fn summary(self) -> &'static str {
        match self {
            Verb::Run => "start a SOP, on an issue, with parameters",
            Verb::Status => "show a run (default: this thread's)",
            Verb::Runs => "list the active runs",
            Verb::Approve => "approve a gate (default: the one waiting here)",
            Verb::Reject => "reject a gate (default: the one waiting here)",
            Verb::SendBack => "have NODE redo its work, with the comment as instructions",
            Verb::Cancel => "cancel a run (default: this thread's)",
            Verb::Retry => "run a failed NODE of this thread's run again",
            Verb::Steer => "stop the assistant's current turn and do this instead",
            Verb::Stop => "stop the assistant's current turn",
            Verb::Ask => "have another ROLE answer, in this conversation's workspace",
            Verb::Deliver => "open or update this conversation's pull requests",
            Verb::TakeOver => "pause RUN and carry on from its workspace in this conversation",
            Verb::Schedules => "list the schedules",
            Verb::Login => "get a one-time sign-in link to the web console, by direct message",
            Verb::Help => "show this list",
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
            "Commands (RUN is a run id, GATE is RUN/NODE, COMMENT is the rest of the line):\n",
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
            Command::Login => Verb::Login,
            Command::Help => Verb::Help,
        }
    }
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
