//! The readers of what follows a command word — words, ids, runs, gates ([`GateRef`]),
//! issues ([`IssueRef`]), parameters, comments — that each command's row in `command.rs`
//! puts together.
//!
//! Words are split on whitespace. Only parameters and a quoted COMMENT go through shell-style
//! quoting ([`shlex`]): a free-text comment such as `it's fine` must stay verbatim, and ids
//! never need quotes.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::error::Problem;
use crate::id_ref::IdRef;

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
    /// The run the gate belongs to: its id or a prefix of it.
    pub run: IdRef,
    /// The gate node.
    pub node: String,
}

/// `[GATE] [COMMENT...]`, shared by approve, reject and send-back. It cannot fail: a word that
/// is not a GATE starts the comment.
pub(crate) fn decision(rest: &str) -> (Option<GateRef>, Option<String>) {
    match next_word(rest).and_then(|(word, after)| Some((gate(word)?, after))) {
        Some((gate, after)) => (Some(gate), comment(after)),
        None => (None, comment(rest)),
    }
}

/// A message for an agent: the rest of the text, newlines kept, outer space trimmed.
pub(crate) fn text(rest: &str) -> Option<String> {
    let text = rest.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The rest of the line, verbatim, unless it is one quoted word: then its content, so that a
/// comment can start with something else's shape or keep its outer spaces.
pub(crate) fn comment(rest: &str) -> Option<String> {
    let text = rest.trim();
    if text.starts_with(['"', '\''])
        && let Ok(words) = words(text)
        && let [word] = words.as_slice()
    {
        return (!word.is_empty()).then(|| word.clone());
    }
    (!text.is_empty()).then(|| text.to_owned())
}

pub(crate) fn params(rest: &str) -> Result<BTreeMap<String, String>, Problem> {
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

pub(crate) fn optional_run(rest: &str) -> Result<Option<IdRef>, Problem> {
    let Some((word, rest)) = next_word(rest) else {
        return Ok(None);
    };
    let run = run_id(word).ok_or_else(|| Problem::NotARun(word.to_owned()))?;
    no_more(rest)?;
    Ok(Some(run))
}

pub(crate) fn no_more(rest: &str) -> Result<(), Problem> {
    match next_word(rest) {
        Some((word, _)) => Err(Problem::Unexpected(word.to_owned())),
        None => Ok(()),
    }
}

/// The first whitespace-separated word and what follows it, or `None` when only whitespace is
/// left.
pub(crate) fn next_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    Some(text.split_once(char::is_whitespace).unwrap_or((text, "")))
}

pub(crate) fn gate(word: &str) -> Option<GateRef> {
    let (run, node) = word.split_once('/')?;
    Some(GateRef {
        run: run_id(run)?,
        node: is_id(node).then(|| node.to_owned())?,
    })
}

/// A run's id or a prefix of it ([`IdRef`]); which run it names is for the caller to
/// resolve. A commit hash (40 digits) is longer than any id.
pub(crate) fn run_id(word: &str) -> Option<IdRef> {
    IdRef::parse(word).ok()
}

pub(crate) fn issue_ref(word: &str) -> Result<IssueRef, Problem> {
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

impl FromStr for IssueRef {
    type Err = Problem;

    /// `OWNER/REPO#N`, as a command's `on` takes it (the API's and the CLI's `issue` too).
    fn from_str(word: &str) -> Result<Self, Problem> {
        issue_ref(word)
    }
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

pub(crate) fn id(word: &str, what: &'static str) -> Result<String, Problem> {
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
mod tests;
