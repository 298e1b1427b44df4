//! What is wrong with a command's arguments. These are replies to people, not failures:
//! each message is written to be posted back as it is.

/// What is wrong with a command's arguments; [`ParseError::Invalid`](crate::ParseError::Invalid) names the
/// command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A required argument is absent; the text says which, e.g. "a NODE".
    #[error("needs {0}")]
    Missing(&'static str),
    /// A SOP or node id with characters ids do not have.
    #[error("`{word}` is not a {what} id (letters, digits, `-`, `_`, `.`)")]
    NotAnId {
        /// "SOP" or "NODE".
        what: &'static str,
        /// The word as written.
        word: String,
    },
    /// A word where a run id (a UUID, or its first 4 or more hex digits) belongs.
    #[error("`{0}` is not a run id (a UUID, or its first 4 or more hex digits)")]
    NotARun(String),
    /// The word after `on` is not `OWNER/REPO#N`.
    #[error("`{0}` is not OWNER/REPO#N")]
    NotAnIssue(String),
    /// `#0`: GitHub numbers issues from 1, so 0 is a typo, not a target.
    #[error("`{0}`: issue numbers start at 1")]
    IssueZero(String),
    /// A word after the SOP that is not `KEY=VALUE`.
    #[error("`{0}` is not KEY=VALUE")]
    NotAParam(String),
    /// The same parameter twice: which value was meant is a guess the bot should not make.
    #[error("`{0}` is given twice")]
    RepeatedKey(String),
    /// A `"` or `'` without its partner.
    #[error("a quote is not closed")]
    UnclosedQuote,
    /// A word after the last argument the command takes.
    #[error("unexpected `{0}`")]
    Unexpected(String),
}

impl Problem {
    /// Joins the command name to the problem so both kinds read as sentences:
    /// "retry needs a NODE" and "run: `foo` is not KEY=VALUE".
    pub(crate) fn separator(&self) -> &'static str {
        match self {
            Problem::Missing(_) => " ",
            _ => ": ",
        }
    }
}
