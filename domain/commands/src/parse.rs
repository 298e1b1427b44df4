//! One line addressed to the bot → a [`Command`], or why it is not one: the command word,
//! then what its row in `command.rs` reads after it. The errors are replies to people, not
//! failures: each message is written to be posted back as it is.

use std::str::FromStr;

use crate::command::{Command, Verb};
use crate::error::Problem;
use crate::grammar::next_word;

/// A line addressed to the bot that is not a command it can run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing followed `/gatehouse` or the mention. The author wanted the bot, so the caller
    /// replies with [`help`](crate::help) rather than staying silent.
    #[error("no command given; try `help`")]
    Empty,
    /// The first word is not a command word; it is kept so the reply can quote it next to
    /// [`help`](crate::help).
    #[error("unknown command `{0}`; try `help`")]
    UnknownCommand(String),
    /// A command word whose arguments do not fit its usage.
    #[error("{verb}{}{problem} (usage: `{}`)", .problem.separator(), .verb.usage())]
    Invalid {
        /// The command that was meant.
        verb: Verb,
        /// What is wrong with its arguments.
        problem: Problem,
    },
}

impl FromStr for Command {
    type Err = ParseError;

    /// Reads the text after `/gatehouse` or the mention; `line` may hold newlines (a chat
    /// message), which count as spaces except inside a COMMENT.
    fn from_str(line: &str) -> Result<Command, ParseError> {
        let (word, rest) = next_word(line).ok_or(ParseError::Empty)?;
        let verb =
            Verb::from_word(word).ok_or_else(|| ParseError::UnknownCommand(word.to_owned()))?;
        verb.read(rest)
            .map_err(|problem| ParseError::Invalid { verb, problem })
    }
}
