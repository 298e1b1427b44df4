//! Commands in GitHub issue and pull-request comments.
//!
//! A command is the rest of a line after `/gatehouse` at the start of the line (up to three
//! spaces in), or after an `@mention` of the bot anywhere in the line, in prose only (see
//! [`markdown`](crate::markdown)). One command per line: the first trigger takes the line, so
//! a comment such as `ping @gatehouse when done` stays part of the command it is in. Text in an
//! HTML comment after the trigger is not part of the command, as readers do not see it.

use std::collections::HashMap;
use std::ops::Range;

use crate::command::Command;
use crate::markdown::Prose;
use crate::parse::ParseError;

const SLASH: &str = "/gatehouse";

/// A command found in a comment, with its line so that a reply can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The 1-based line the command is on.
    pub line: usize,
    /// What followed the trigger, trimmed: the text to quote in a reply.
    pub text: String,
    /// The command, or the error to reply with.
    pub result: Result<Command, ParseError>,
}

impl Found {
    /// The text edits are compared by: the canonical command, so that respacing or recasing a
    /// command does not run it again, or the words as written when it did not parse.
    pub fn normalized(&self) -> String {
        match &self.result {
            Ok(command) => command.to_string(),
            Err(_) => self.text.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }
}

/// Every command in a comment body, in order. `bot_login` is the bot's GitHub login, with or
/// without the `@`, matched in any case.
///
/// A trigger with nothing after it (`/gatehouse` alone, or `@gatehouse` ending its line) gives
/// [`ParseError::Empty`]: the author addressed the bot, and a reply with the help text serves
/// them better than silence.
pub fn parse_comment(body: &str, bot_login: &str) -> Vec<Found> {
    let mut prose = Prose::default();
    body.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let hidden = prose.hidden(line)?;
            let text = command_text(line, &hidden, bot_login)?;
            Some(Found {
                line: index + 1,
                text: text.to_owned(),
                result: text.parse(),
            })
        })
        .collect()
}

/// The commands an edit added: those of `new_body` beyond the ones `old_body` already had,
/// counted by [`Found::normalized`], so that fixing a typo elsewhere in a comment does not run
/// its commands twice while a second copy of a command does run.
pub fn new_commands(old_body: &str, new_body: &str, bot_login: &str) -> Vec<Found> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for found in parse_comment(old_body, bot_login) {
        *seen.entry(found.normalized()).or_default() += 1;
    }
    parse_comment(new_body, bot_login)
        .into_iter()
        .filter(|found| match seen.get_mut(&found.normalized()) {
            Some(count) if *count > 0 => {
                *count -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

fn command_text<'a>(line: &'a str, hidden: &[Range<usize>], bot_login: &str) -> Option<&'a str> {
    let start = slash_command(line, hidden).or_else(|| mention(line, hidden, bot_login))?;
    let end = hidden
        .iter()
        .find(|range| range.start >= start && line[range.start..].starts_with("<!--"))
        .map_or(line.len(), |range| range.start);
    Some(line[start..end].trim())
}

/// Where the command starts after `/gatehouse` opening the line. `/gatehousefoo` is a word of
/// its own, not the trigger.
fn slash_command(line: &str, hidden: &[Range<usize>]) -> Option<usize> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let word = line.get(indent..indent + SLASH.len())?;
    let end = indent + SLASH.len();
    let bounded = line[end..].chars().next().is_none_or(char::is_whitespace);
    (indent <= 3 && !is_hidden(hidden, indent) && word.eq_ignore_ascii_case(SLASH) && bounded)
        .then_some(end)
}

/// Where the command starts after the first `@bot_login` in the line. As on GitHub, an `@`
/// inside a word (an email address, a path) is no mention; the login must end at whitespace,
/// the line's end, or a `:` or `,` (`@gatehouse: status`), so `@gatehouse-dev` or a sentence's
/// `@gatehouse.` is not one either.
fn mention(line: &str, hidden: &[Range<usize>], bot_login: &str) -> Option<usize> {
    let login = bot_login.trim_start_matches('@');
    if login.is_empty() {
        return None;
    }
    line.match_indices('@').find_map(|(at, _)| {
        let before = line[..at].chars().next_back();
        let starts_word = before
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '@')));
        let end = at + 1 + login.len();
        let name = line.get(at + 1..end)?;
        if !starts_word || is_hidden(hidden, at) || !name.eq_ignore_ascii_case(login) {
            return None;
        }
        match line[end..].chars().next() {
            None => Some(end),
            Some(':' | ',') => Some(end + 1),
            Some(c) if c.is_whitespace() => Some(end),
            Some(_) => None,
        }
    })
}

fn is_hidden(hidden: &[Range<usize>], at: usize) -> bool {
    hidden.iter().any(|range| range.contains(&at))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOT: &str = "gatehouse";

    fn texts(body: &str) -> Vec<(usize, String)> {
        parse_comment(body, BOT)
            .into_iter()
            .map(|found| (found.line, found.text))
            .collect()
    }

    fn lines(found: &[(usize, &str)]) -> Vec<(usize, String)> {
        found
            .iter()
            .map(|(line, text)| (*line, (*text).to_owned()))
            .collect()
    }

    #[test]
    fn a_slash_command_at_the_start_of_a_line() {
        let found = parse_comment("Thanks!\n/gatehouse approve looks good\n", BOT);
        assert_eq!(
            found,
            [Found {
                line: 2,
                text: "approve looks good".into(),
                result: Ok(Command::Approve {
                    gate: None,
                    comment: Some("looks good".into()),
                }),
            }]
        );
    }

    #[test]
    fn up_to_three_spaces_before_the_slash_command() {
        assert_eq!(
            texts("   /gatehouse runs\n    /gatehouse status\n\t/gatehouse help"),
            lines(&[(1, "runs")])
        );
    }

    #[test]
    fn the_slash_command_only_opens_a_line_and_is_a_whole_word() {
        assert_eq!(
            texts("please /gatehouse runs\n/gatehousefoo runs\n/gatehouse/runs\n/GateHouse\tRuns"),
            lines(&[(4, "Runs")])
        );
    }

    #[test]
    fn a_bare_trigger_asks_for_help() {
        let found = parse_comment("/gatehouse\nthanks @gatehouse\n@gatehouse   ", BOT);
        assert_eq!(found.len(), 3);
        for found in found {
            assert_eq!(found.text, "");
            assert_eq!(found.result, Err(ParseError::Empty));
        }
    }

    #[test]
    fn a_mention_anywhere_in_a_line_in_any_case() {
        assert_eq!(
            texts(
                "@gatehouse status\nhey @GateHouse, retry build\n(@gatehouse: runs)\n@Gatehouse\tschedules"
            ),
            lines(&[
                (1, "status"),
                (2, "retry build"),
                (3, "runs)"),
                (4, "schedules")
            ])
        );
        assert_eq!(
            texts("@gatehouse status"),
            parse_comment("@GATEHOUSE status", "@GateHouse")
                .into_iter()
                .map(|found| (found.line, found.text))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn not_a_mention() {
        let body = "mail ops@gatehouse status\n@gatehouse-dev status\n@gatehouse. status\n\
                    @gatehousebot status\nsee a/@gatehouse status\n@gate status\nthanks @ gatehouse";
        assert_eq!(texts(body), []);
        // Without a login, no `@` is a mention.
        assert_eq!(parse_comment("@ status", ""), []);
        assert_eq!(parse_comment("@ status", "@"), []);
    }

    #[test]
    fn one_command_per_line_and_the_first_trigger_wins() {
        assert_eq!(
            texts("/gatehouse approve ping @gatehouse when done\n@gatehouse runs @gatehouse help"),
            lines(&[
                (1, "approve ping @gatehouse when done"),
                (2, "runs @gatehouse help")
            ])
        );
    }

    #[test]
    fn several_commands_in_order() {
        let body =
            "Review done.\n\n/gatehouse approve\n\nAlso @gatehouse retry lint\n/gatehouse nope";
        let found = parse_comment(body, BOT);
        assert_eq!(
            found.iter().map(|found| found.line).collect::<Vec<_>>(),
            [3, 5, 6]
        );
        assert_eq!(
            found[1].result,
            Ok(Command::Retry {
                node: "lint".into()
            })
        );
        assert_eq!(
            found[2].result,
            Err(ParseError::UnknownCommand("nope".into()))
        );
    }

    #[test]
    fn crlf_line_endings() {
        assert_eq!(
            texts("hi\r\n/gatehouse runs\r\n@gatehouse status\r\n"),
            lines(&[(2, "runs"), (3, "status")])
        );
    }

    #[test]
    fn nothing_in_fenced_code() {
        let body = "```\n/gatehouse runs\n```\n~~~yaml\n@gatehouse runs\n~~~\n```sh {.x}\n/gatehouse runs\n```\n/gatehouse status";
        assert_eq!(texts(body), lines(&[(10, "status")]));
    }

    #[test]
    fn nothing_after_an_unclosed_fence() {
        assert_eq!(
            texts("/gatehouse runs\n```\n/gatehouse status\n@gatehouse help"),
            lines(&[(1, "runs")])
        );
    }

    #[test]
    fn nothing_in_indented_code() {
        assert_eq!(
            texts("Example:\n\n    @gatehouse runs\n    /gatehouse runs\n\t@gatehouse runs"),
            []
        );
    }

    #[test]
    fn nothing_in_inline_code() {
        assert_eq!(
            texts(
                "type `/gatehouse runs` or `@gatehouse runs`\n`/gatehouse runs`\n``@gatehouse ` runs``"
            ),
            []
        );
        // Code after the trigger is part of the command.
        assert_eq!(
            texts("@gatehouse approve rename `foo`"),
            lines(&[(1, "approve rename `foo`")])
        );
    }

    #[test]
    fn nothing_in_block_quotes() {
        assert_eq!(
            texts("> /gatehouse runs\n  > @gatehouse runs\n>@gatehouse runs\n\nagreed"),
            []
        );
    }

    #[test]
    fn nothing_in_html_comments() {
        let body = "<!-- /gatehouse runs -->\n<!--\n/gatehouse status\n@gatehouse help\n-->\n\
                    <!-- x --> @gatehouse retry a\n/gatehouse approve ok <!-- not @gatehouse help -->";
        assert_eq!(texts(body), lines(&[(6, "retry a"), (7, "approve ok")]));
        // The part after the comment's end is prose again, but no longer the start of the line.
        assert_eq!(texts("<!--\n-->/gatehouse runs"), []);
        // An unclosed comment hides the rest of the body.
        assert_eq!(texts("<!-- draft\n/gatehouse runs\n@gatehouse runs"), []);
    }

    #[test]
    fn new_commands_only() {
        let old = "/gatehouse approve\n@gatehouse retry lint";
        let new = "typo fixed\n/gatehouse  Approve\n@gatehouse retry lint\n/gatehouse runs";
        let added = new_commands(old, new, BOT);
        assert_eq!(
            added
                .iter()
                .map(|found| (found.line, found.text.as_str()))
                .collect::<Vec<_>>(),
            [(4, "runs")]
        );
    }

    #[test]
    fn new_commands_count_copies() {
        let old = "/gatehouse approve";
        let new = "/gatehouse approve\n/gatehouse approve";
        assert_eq!(
            new_commands(old, new, BOT)
                .iter()
                .map(|found| found.line)
                .collect::<Vec<_>>(),
            [2]
        );
        assert_eq!(new_commands(new, old, BOT), []);
        // Which trigger was used does not matter.
        assert_eq!(new_commands("@gatehouse runs", "/gatehouse runs", BOT), []);
    }

    #[test]
    fn new_commands_compare_errors_by_their_words() {
        let old = "/gatehouse deploy  now";
        assert_eq!(new_commands(old, "/gatehouse deploy now", BOT), []);
        assert_eq!(new_commands(old, "/gatehouse deploy later", BOT).len(), 1);
        assert_eq!(new_commands("", "/gatehouse", BOT).len(), 1);
    }

    #[test]
    fn normalized_text_is_canonical() {
        let found = parse_comment("/gatehouse Send_Back  build   redo it", BOT);
        assert_eq!(
            found.iter().map(Found::normalized).collect::<Vec<_>>(),
            ["send-back build redo it"]
        );
    }
}
