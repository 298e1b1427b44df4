//! One command line → [`Command`]: words, ids, quoting.
//!
//! Words are split on whitespace. Only parameters and a quoted COMMENT go through shell-style
//! quoting ([`shlex`]): a free-text comment such as `it's fine` must stay verbatim, and ids
//! never need quotes.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use crate::command::{Command, GateRef, IssueRef, Verb};
use crate::error::{ParseError, Problem};

impl FromStr for Command {
    type Err = ParseError;

    /// Reads the text after `/gatehouse` or the mention; `line` may hold newlines (a chat
    /// message), which count as spaces except inside a COMMENT.
    fn from_str(line: &str) -> Result<Command, ParseError> {
        let (word, rest) = next_word(line).ok_or(ParseError::Empty)?;
        let verb =
            Verb::from_word(word).ok_or_else(|| ParseError::UnknownCommand(word.to_owned()))?;
        arguments(verb, rest).map_err(|problem| ParseError::Invalid { verb, problem })
    }
}

fn arguments(verb: Verb, rest: &str) -> Result<Command, Problem> {
    match verb {
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
        Verb::Schedules => no_more(rest).map(|()| Command::Schedules),
        // Asking for help should never fail, so `help me` is help too.
        Verb::Help => Ok(Command::Help),
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

/// `[GATE] [COMMENT...]`, shared by approve, reject and send-back. It cannot fail: a word that
/// is not a GATE starts the comment.
fn decision(rest: &str) -> (Option<GateRef>, Option<String>) {
    match next_word(rest).and_then(|(word, after)| Some((gate(word)?, after))) {
        Some((gate, after)) => (Some(gate), comment(after)),
        None => (None, comment(rest)),
    }
}

/// The rest of the line, verbatim, unless it is one quoted word: then its content, so that a
/// comment can start with something else's shape or keep its outer spaces.
fn comment(rest: &str) -> Option<String> {
    let text = rest.trim();
    if text.starts_with(['"', '\''])
        && let Ok(words) = words(text)
        && let [word] = words.as_slice()
    {
        return (!word.is_empty()).then(|| word.clone());
    }
    (!text.is_empty()).then(|| text.to_owned())
}

/// How [`Command`]'s `Display` writes a comment: bare when [`decision`] reads it back the same,
/// else single-quoted. Not `shlex::try_quote`, which leaves a GATE-shaped word bare.
pub(crate) fn render_comment(text: &str, after_gate: bool) -> Cow<'_, str> {
    let starts_with_gate = next_word(text).is_some_and(|(word, _)| gate(word).is_some());
    if comment(text).as_deref() == Some(text) && (after_gate || !starts_with_gate) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
    }
}

/// A parameter value as [`params`] will read it back.
pub(crate) fn quote_value(value: &str) -> Result<Cow<'_, str>, fmt::Error> {
    // With NUL allowed, shlex has no error left to return.
    shlex::Quoter::new()
        .allow_nul(true)
        .quote(value)
        .map_err(|_| fmt::Error)
}

fn params(rest: &str) -> Result<BTreeMap<String, String>, Problem> {
    let mut params = BTreeMap::new();
    for word in words(rest)? {
        let (key, value) = match word.split_once('=') {
            Some((key, value)) if is_key(key) => (key.to_owned(), value.to_owned()),
            _ => return Err(Problem::NotAParam(word)),
        };
        if params.contains_key(&key) {
            return Err(Problem::RepeatedKey(key));
        }
        params.insert(key, value);
    }
    Ok(params)
}

/// Shell-style words. shlex reads an unquoted `#` at the start of a word as a comment and drops
/// it with the rest of its line; a command must not lose text silently, and only a parameter
/// list gets here with such a word, where it is not `KEY=VALUE`.
fn words(text: &str) -> Result<Vec<String>, Problem> {
    let words = shlex::split(text).ok_or(Problem::UnclosedQuote)?;
    // Quotes and escapes keep every `#`; only a dropped comment loses one.
    let kept: usize = words.iter().map(|word| word.matches('#').count()).sum();
    if kept != text.matches('#').count() {
        let dropped = text
            .split_whitespace()
            .find(|word| word.starts_with('#'))
            .unwrap_or("#");
        return Err(Problem::NotAParam(dropped.to_owned()));
    }
    Ok(words)
}

fn optional_run(rest: &str) -> Result<Option<Uuid>, Problem> {
    let Some((word, rest)) = next_word(rest) else {
        return Ok(None);
    };
    let run = run_id(word).ok_or_else(|| Problem::NotARun(word.to_owned()))?;
    no_more(rest)?;
    Ok(Some(run))
}

fn no_more(rest: &str) -> Result<(), Problem> {
    match next_word(rest) {
        Some((word, _)) => Err(Problem::Unexpected(word.to_owned())),
        None => Ok(()),
    }
}

/// The first whitespace-separated word and what follows it, or `None` when only whitespace is
/// left.
fn next_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    Some(text.split_once(char::is_whitespace).unwrap_or((text, "")))
}

fn gate(word: &str) -> Option<GateRef> {
    let (run, node) = word.split_once('/')?;
    Some(GateRef {
        run: run_id(run)?,
        node: is_id(node).then(|| node.to_owned())?,
    })
}

/// Only the hyphenated form (the one length-36 form `uuid` reads), as ids are shown and
/// copied: a 32-digit hex word in a comment is more likely a commit hash than a run.
fn run_id(word: &str) -> Option<Uuid> {
    (word.len() == 36).then(|| Uuid::try_parse(word).ok())?
}

fn issue_ref(word: &str) -> Result<IssueRef, Problem> {
    let not_an_issue = || Problem::NotAnIssue(word.to_owned());
    let (path, number) = word.split_once('#').ok_or_else(not_an_issue)?;
    // `u64::from_str` would also take `+7`.
    if !is_repo_name(path) || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_an_issue());
    }
    let (owner, repo) = path.split_once('/').ok_or_else(not_an_issue)?;
    let number: u64 = number.parse().map_err(|_| not_an_issue())?;
    if number == 0 {
        return Err(Problem::IssueZero(word.to_owned()));
    }
    Ok(IssueRef {
        owner: owner.to_owned(),
        repo: repo.to_owned(),
        number,
    })
}

/// Whether `repo` is `owner/name` as GitHub spells them: two segments of letters, digits,
/// `-`, `_` and `.`, neither of them `.` or `..` (path segments, not names). The one rule
/// for every place an owner/name is read.
pub fn is_repo_name(repo: &str) -> bool {
    let Some((owner, name)) = repo.split_once('/') else {
        return false;
    };
    let plain = |s: &str| is_id(s) && s != "." && s != "..";
    plain(owner) && plain(name)
}

fn id(word: &str, what: &'static str) -> Result<String, Problem> {
    if is_id(word) {
        Ok(word.to_owned())
    } else {
        Err(Problem::NotAnId {
            what,
            word: word.to_owned(),
        })
    }
}

fn is_id(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_key(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "0190f3a2-7b1c-7d2e-8f00-0123456789ab";

    fn parse(line: &str) -> Result<Command, ParseError> {
        line.parse()
    }

    fn ok(line: &str) -> Command {
        parse(line).unwrap_or_else(|error| panic!("{line:?}: {error}"))
    }

    fn error(line: &str) -> String {
        match parse(line) {
            Ok(command) => panic!("{line:?} parsed as {command:?}"),
            Err(error) => error.to_string(),
        }
    }

    fn run_id() -> Uuid {
        Uuid::parse_str(RUN).expect("a valid uuid")
    }

    fn gate(node: &str) -> Option<GateRef> {
        Some(GateRef {
            run: run_id(),
            node: node.into(),
        })
    }

    fn text(s: &str) -> Option<String> {
        Some(s.into())
    }

    #[test]
    fn run_with_issue_and_params() {
        assert_eq!(
            ok(r#"run fix-bug on acme/api.rs#12 title="two words" env=prod empty="""#),
            Command::Run {
                sop: "fix-bug".into(),
                issue: Some(IssueRef {
                    owner: "acme".into(),
                    repo: "api.rs".into(),
                    number: 12,
                }),
                params: BTreeMap::from([
                    ("title".into(), "two words".into()),
                    ("env".into(), "prod".into()),
                    ("empty".into(), String::new()),
                ]),
            }
        );
    }

    #[test]
    fn repository_names_have_plain_segments() {
        assert!(is_repo_name("acme/app.js"));
        for bad in [
            "acme/..",
            "./app",
            "acme",
            "acme/a/b",
            "acme/",
            "acme/a b",
            "acme/$(id)",
        ] {
            assert!(!is_repo_name(bad), "{bad}");
        }
    }

    #[test]
    fn dot_segments_are_not_repositories() {
        for word in ["../api#1", "acme/..#1", "./x#2", "acme/.#3"] {
            assert!(
                issue_ref(word).is_err(),
                "`{word}` must not name a repository"
            );
        }
        assert!(issue_ref("acme/.github#4").is_ok(), "dot-names are names");
    }

    #[test]
    fn run_alone_and_with_params_only() {
        assert_eq!(
            ok("run nightly_v1.2"),
            Command::Run {
                sop: "nightly_v1.2".into(),
                issue: None,
                params: BTreeMap::new(),
            }
        );
        assert_eq!(
            ok("run lint   path='src/a b.rs'  Mode-2=x#y"),
            Command::Run {
                sop: "lint".into(),
                issue: None,
                params: BTreeMap::from([
                    ("path".into(), "src/a b.rs".into()),
                    ("Mode-2".into(), "x#y".into()),
                ]),
            }
        );
        // `On` is the keyword in any case; a value may contain `=`.
        assert_eq!(
            ok("run x On a/b#1 q=a=b"),
            Command::Run {
                sop: "x".into(),
                issue: Some(IssueRef {
                    owner: "a".into(),
                    repo: "b".into(),
                    number: 1,
                }),
                params: BTreeMap::from([("q".into(), "a=b".into())]),
            }
        );
    }

    #[test]
    fn status_and_cancel_take_an_optional_run() {
        assert_eq!(ok("status"), Command::Status { run: None });
        assert_eq!(
            ok(&format!("status {RUN}")),
            Command::Status {
                run: Some(run_id())
            }
        );
        assert_eq!(ok("cancel"), Command::Cancel { run: None });
        assert_eq!(
            ok(&format!("Cancel {}", RUN.to_uppercase())),
            Command::Cancel {
                run: Some(run_id())
            }
        );
    }

    #[test]
    fn commands_without_arguments() {
        assert_eq!(ok("runs"), Command::Runs);
        assert_eq!(ok("SCHEDULES"), Command::Schedules);
        assert_eq!(ok("help"), Command::Help);
        assert_eq!(ok("Help me please"), Command::Help);
    }

    #[test]
    fn approve_and_reject_with_gate_and_comment() {
        assert_eq!(
            ok("approve"),
            Command::Approve {
                gate: None,
                comment: None,
            }
        );
        assert_eq!(
            ok(&format!("Approve {RUN}/review")),
            Command::Approve {
                gate: gate("review"),
                comment: None,
            }
        );
        assert_eq!(
            ok(&format!("approve {RUN}/review   looks good,  ship it  ")),
            Command::Approve {
                gate: gate("review"),
                comment: text("looks good,  ship it"),
            }
        );
        assert_eq!(
            ok("reject it's not `done` #12"),
            Command::Reject {
                gate: None,
                comment: text("it's not `done` #12"),
            }
        );
    }

    #[test]
    fn a_word_that_is_not_exactly_a_gate_starts_the_comment() {
        let not_gates = [
            format!("{RUN}/"),
            format!("{RUN}/a/b"),
            format!("{RUN}/no$pe"),
            format!("{}/n", RUN.replace('-', "")),
            format!("{{{RUN}}}/n"),
            "abc/review".to_owned(),
            RUN.to_owned(),
        ];
        for word in not_gates {
            assert_eq!(
                ok(&format!("reject {word} because")),
                Command::Reject {
                    gate: None,
                    comment: Some(format!("{word} because")),
                },
                "{word}"
            );
        }
    }

    #[test]
    fn a_quoted_comment_loses_its_quotes() {
        assert_eq!(
            ok(&format!(r#"approve "{RUN}/review is fine""#)),
            Command::Approve {
                gate: None,
                comment: Some(format!("{RUN}/review is fine")),
            }
        );
        assert_eq!(
            ok("approve '  padded '"),
            Command::Approve {
                gate: None,
                comment: text("  padded "),
            }
        );
        assert_eq!(
            ok(r#"approve """#),
            Command::Approve {
                gate: None,
                comment: None,
            }
        );
        // Not one quoted word: kept as written.
        for comment in [r#""a" and "b""#, r#""unclosed"#, "'a' #b"] {
            assert_eq!(
                ok(&format!("approve {comment}")),
                Command::Approve {
                    gate: None,
                    comment: text(comment),
                }
            );
        }
    }

    #[test]
    fn send_back_and_its_alias() {
        assert_eq!(
            ok(&format!("send-back build {RUN}/review add tests")),
            Command::SendBack {
                node: "build".into(),
                gate: gate("review"),
                comment: text("add tests"),
            }
        );
        assert_eq!(
            ok("Send_Back build please add tests"),
            Command::SendBack {
                node: "build".into(),
                gate: None,
                comment: text("please add tests"),
            }
        );
        assert_eq!(
            ok("SEND-BACK build"),
            Command::SendBack {
                node: "build".into(),
                gate: None,
                comment: None,
            }
        );
    }

    #[test]
    fn retry_takes_a_node() {
        assert_eq!(
            ok("retry build.v2"),
            Command::Retry {
                node: "build.v2".into()
            }
        );
    }

    #[test]
    fn newlines_separate_words_and_stay_in_comments() {
        assert_eq!(
            ok("approve\nfirst line\nsecond line\n"),
            Command::Approve {
                gate: None,
                comment: text("first line\nsecond line"),
            }
        );
        assert_eq!(
            ok("run\nx\nk=v"),
            Command::Run {
                sop: "x".into(),
                issue: None,
                params: BTreeMap::from([("k".into(), "v".into())]),
            }
        );
    }

    #[test]
    fn empty_and_unknown() {
        assert_eq!(parse(""), Err(ParseError::Empty));
        assert_eq!(parse(" \n\t"), Err(ParseError::Empty));
        assert_eq!(error(""), "no command given; try `help`");
        assert_eq!(
            parse("Deploy now"),
            Err(ParseError::UnknownCommand("Deploy".into()))
        );
        assert_eq!(
            error("sendback x"),
            "unknown command `sendback`; try `help`"
        );
    }

    #[test]
    fn every_error_message() {
        let usage = |verb: Verb| format!(" (usage: `{}`)", verb.usage());
        let run = usage(Verb::Run);
        let cases = [
            ("run", format!("run needs a SOP{run}")),
            ("run on acme/api#1", format!("run needs a SOP{run}")),
            (
                "run fix$",
                format!("run: `fix$` is not a SOP id (letters, digits, `-`, `_`, `.`){run}"),
            ),
            (
                "run fix on",
                format!("run needs OWNER/REPO#N after `on`{run}"),
            ),
            (
                "run fix on acme/x",
                format!("run: `acme/x` is not OWNER/REPO#N{run}"),
            ),
            (
                "run fix on acme#3",
                format!("run: `acme#3` is not OWNER/REPO#N{run}"),
            ),
            (
                "run fix on acme/x#+3",
                format!("run: `acme/x#+3` is not OWNER/REPO#N{run}"),
            ),
            (
                "run fix on acme/x#99999999999999999999",
                format!("run: `acme/x#99999999999999999999` is not OWNER/REPO#N{run}"),
            ),
            (
                "run fix on acme/x#0",
                format!("run: `acme/x#0`: issue numbers start at 1{run}"),
            ),
            ("run fix foo", format!("run: `foo` is not KEY=VALUE{run}")),
            (
                "run fix k=1 on acme/x#1",
                format!("run: `on` is not KEY=VALUE{run}"),
            ),
            ("run fix =v", format!("run: `=v` is not KEY=VALUE{run}")),
            (
                "run fix a.b=v",
                format!("run: `a.b=v` is not KEY=VALUE{run}"),
            ),
            ("run fix #12", format!("run: `#12` is not KEY=VALUE{run}")),
            (
                "run fix k=1 title=x K=2 title=y",
                format!("run: `title` is given twice{run}"),
            ),
            (
                r#"run fix title="open"#,
                format!("run: a quote is not closed{run}"),
            ),
            (
                "status nope",
                format!(
                    "status: `nope` is not a run id (a UUID){}",
                    usage(Verb::Status)
                ),
            ),
            (
                &format!("status {RUN} more"),
                format!("status: unexpected `more`{}", usage(Verb::Status)),
            ),
            (
                "cancel 42",
                format!(
                    "cancel: `42` is not a run id (a UUID){}",
                    usage(Verb::Cancel)
                ),
            ),
            (
                "runs all",
                format!("runs: unexpected `all`{}", usage(Verb::Runs)),
            ),
            (
                "schedules x",
                format!("schedules: unexpected `x`{}", usage(Verb::Schedules)),
            ),
            (
                "send-back",
                format!(
                    "send-back needs the NODE to send back to{}",
                    usage(Verb::SendBack)
                ),
            ),
            (
                &format!("send-back {RUN}/review redo"),
                format!(
                    "send-back needs the NODE to send back to{}",
                    usage(Verb::SendBack)
                ),
            ),
            (
                "send_back build!",
                format!(
                    "send-back: `build!` is not a NODE id (letters, digits, `-`, `_`, `.`){}",
                    usage(Verb::SendBack)
                ),
            ),
            ("retry", format!("retry needs a NODE{}", usage(Verb::Retry))),
            (
                "retry a b",
                format!("retry: unexpected `b`{}", usage(Verb::Retry)),
            ),
            (
                "retry a/b",
                format!(
                    "retry: `a/b` is not a NODE id (letters, digits, `-`, `_`, `.`){}",
                    usage(Verb::Retry)
                ),
            ),
        ];
        for (line, message) in cases {
            assert_eq!(error(line), message, "{line}");
        }
    }

    #[test]
    fn errors_are_values_naming_the_command() {
        assert_eq!(
            parse("retry"),
            Err(ParseError::Invalid {
                verb: Verb::Retry,
                problem: Problem::Missing("a NODE"),
            })
        );
        assert_eq!(
            parse("run x y=1 y=2"),
            Err(ParseError::Invalid {
                verb: Verb::Run,
                problem: Problem::RepeatedKey("y".into()),
            })
        );
    }
}
