//! Commands in Slack and Discord messages that mention the bot.

use crate::command::{Command, Verb};
use crate::parse::ParseError;

/// What a chat message addressed to the bot asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mention {
    /// A command to run.
    Command(Command),
    /// A command attempt that failed; the caller replies with the message and [`help`](crate::help).
    Error(ParseError),
    /// A request in prose, for the caller to handle as such rather than as a failed command.
    FreeText(String),
}

/// Reads `text`, the message with the bot's mention already taken out by the adapter. Unlike a
/// GitHub comment, the whole message is one command, so a comment may run over several lines.
///
/// The rule for prose: when the first word is a command word, the text is a command, right or
/// wrong (`run the tests` is a `run` with a bad parameter, and the error shows the usage). When
/// it is not, two words or more are [`Mention::FreeText`], while a lone word is an unknown
/// command: one word is more likely a mistyped command than a request. An empty message, like
/// `help`, is [`Command::Help`]. A leading `:` or `,` (`@gatehouse: status`) is dropped.
pub fn parse_mention(text: &str) -> Mention {
    let text = text.trim().trim_start_matches([':', ',']).trim_start();
    let mut words = text.split_whitespace();
    let Some(first) = words.next() else {
        return Mention::Command(Command::Help);
    };
    if Verb::from_word(first).is_none() && words.next().is_some() {
        return Mention::FreeText(text.to_owned());
    }
    match text.parse() {
        Ok(command) => Mention::Command(command),
        Err(error) => Mention::Error(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Problem;

    #[test]
    fn empty_and_help_are_help() {
        for text in ["", "  \n ", "help", "HELP", ":", "  , help"] {
            assert_eq!(
                parse_mention(text),
                Mention::Command(Command::Help),
                "{text:?}"
            );
        }
    }

    #[test]
    fn commands() {
        assert_eq!(
            parse_mention(": Retry build"),
            Mention::Command(Command::Retry {
                node: "build".into()
            })
        );
        assert_eq!(parse_mention(" runs\n"), Mention::Command(Command::Runs));
        assert_eq!(
            parse_mention("approve lgtm\nbut rename the flag"),
            Mention::Command(Command::Approve {
                gate: None,
                comment: Some("lgtm\nbut rename the flag".into()),
            })
        );
    }

    #[test]
    fn a_command_word_makes_a_command_attempt() {
        assert_eq!(
            parse_mention("run the tests please"),
            Mention::Error(ParseError::Invalid {
                verb: Verb::Run,
                problem: Problem::NotAParam("tests".into()),
            })
        );
    }

    #[test]
    fn a_lone_unknown_word_is_an_unknown_command() {
        assert_eq!(
            parse_mention("stauts"),
            Mention::Error(ParseError::UnknownCommand("stauts".into()))
        );
    }

    #[test]
    fn prose_is_free_text() {
        assert_eq!(
            parse_mention("  can you fix the flaky login test?\nThanks "),
            Mention::FreeText("can you fix the flaky login test?\nThanks".into())
        );
        assert_eq!(
            parse_mention(", please deploy"),
            Mention::FreeText("please deploy".into())
        );
    }
}
