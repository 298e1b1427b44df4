//! Writing commands' canonical text: the [`Display`](fmt::Display) of their parts (issues,
//! gates) and the quoting of comments and values, so that [`crate::grammar`] reads the text
//! of a [`Command`](crate::Command) back as the same value; edited comments are compared by
//! it. Each command's own text is written beside it, in `command.rs`.

use std::borrow::Cow;
use std::fmt;

use crate::grammar::{GateRef, IssueRef};
use crate::grammar::{comment, gate, next_word};

pub(crate) fn write_decision(
    f: &mut fmt::Formatter<'_>,
    gate: Option<&GateRef>,
    comment: Option<&str>,
) -> fmt::Result {
    if let Some(gate) = gate {
        write!(f, " {gate}")?;
    }
    if let Some(comment) = comment {
        write!(f, " {}", render_comment(comment, gate.is_some()))?;
    }
    Ok(())
}

impl fmt::Display for IssueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}#{}", self.owner, self.repo, self.number)
    }
}

impl fmt::Display for GateRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.run, self.node)
    }
}

/// How [`Command`](crate::Command)'s `Display` writes a comment: bare when the grammar reads it back the same,
/// else single-quoted. Not `shlex::try_quote`, which leaves a GATE-shaped word bare.
fn render_comment(text: &str, after_gate: bool) -> Cow<'_, str> {
    let starts_with_gate = next_word(text).is_some_and(|(word, _)| gate(word).is_some());
    if comment(text).as_deref() == Some(text) && (after_gate || !starts_with_gate) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
    }
}

/// A parameter value as the grammar will read it back.
pub(crate) fn quote_value(value: &str) -> Result<Cow<'_, str>, fmt::Error> {
    // With NUL allowed, shlex has no error left to return.
    shlex::Quoter::new()
        .allow_nul(true)
        .quote(value)
        .map_err(|_| fmt::Error)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::command::Command;

    use crate::id_ref::IdRef;

    use super::*;

    const RUN: &str = "0190f3a2-7b1c-7d2e-8f00-0123456789ab";

    fn run_id() -> IdRef {
        IdRef::parse(RUN).expect("a valid uuid")
    }

    fn gate() -> GateRef {
        GateRef {
            run: run_id(),
            node: "review".into(),
        }
    }

    #[test]
    fn renders_every_command_canonically() {
        let params = BTreeMap::from([
            ("title".to_owned(), "two words".to_owned()),
            ("env".to_owned(), "prod".to_owned()),
        ]);
        let cases = [
            (
                Command::Run {
                    sop: "fix-bug".into(),
                    issue: Some(IssueRef {
                        owner: "acme".into(),
                        repo: "api".into(),
                        number: 42,
                    }),
                    params,
                },
                "run fix-bug on acme/api#42 env=prod title='two words'".to_owned(),
            ),
            (
                Command::Run {
                    sop: "lint".into(),
                    issue: None,
                    params: BTreeMap::new(),
                },
                "run lint".into(),
            ),
            (Command::Status { run: None }, "status".into()),
            (
                Command::Status {
                    run: Some(run_id()),
                },
                format!("status {RUN}"),
            ),
            (Command::Runs, "runs".into()),
            (
                Command::Approve {
                    gate: Some(gate()),
                    comment: Some("ship it".into()),
                },
                format!("approve {RUN}/review ship it"),
            ),
            (
                Command::Reject {
                    gate: None,
                    comment: None,
                },
                "reject".into(),
            ),
            (
                Command::SendBack {
                    node: "build".into(),
                    gate: Some(gate()),
                    comment: Some("add tests".into()),
                },
                format!("send-back build {RUN}/review add tests"),
            ),
            (
                Command::Cancel {
                    run: Some(run_id()),
                },
                format!("cancel {RUN}"),
            ),
            (
                Command::Retry {
                    node: "build".into(),
                },
                "retry build".into(),
            ),
            (Command::Schedules, "schedules".into()),
            (Command::Login, "login".into()),
            (Command::Help, "help".into()),
        ];
        for (command, text) in cases {
            assert_eq!(command.to_string(), text);
        }
    }

    #[test]
    fn quotes_a_comment_only_when_it_would_read_differently() {
        let approve = |comment: &str| Command::Approve {
            gate: None,
            comment: Some(comment.into()),
        };
        assert_eq!(approve("it's fine").to_string(), "approve it's fine");
        // Bare, the first word would be read as the GATE.
        assert_eq!(
            approve(&format!("{RUN}/review is fine")).to_string(),
            format!("approve '{RUN}/review is fine'")
        );
        // Bare, the quotes would be taken off.
        assert_eq!(approve("'x'").to_string(), r#"approve ''\''x'\'''"#);
        // Bare, the spaces would be trimmed.
        assert_eq!(approve(" padded ").to_string(), "approve ' padded '");
        // After a GATE, a GATE-shaped word is just text.
        let reject = Command::Reject {
            gate: Some(gate()),
            comment: Some(format!("{RUN}/other too")),
        };
        assert_eq!(
            reject.to_string(),
            format!("reject {RUN}/review {RUN}/other too")
        );
    }
}
