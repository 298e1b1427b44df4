//! The command grammar shared by GitHub comments and chat mentions. Pure: text in, values out,
//! so the GitHub and chat adapters agree on what a command means and can be tested without
//! either service.
//!
//! The commands and their synopses are [`help`]'s list, one row per command in
//! `command.rs`:
//!
//! ```text
//! run SOP [on OWNER/REPO#N] [KEY=VALUE ...]
//! approve [GATE] [COMMENT...]
//! ...
//! ```
//!
//! - Command words are read in any case; `send_back` is `send-back`.
//! - RUN is a run id, or its first 4 or more hex digits ([`IdRef`]); GATE is `RUN/NODE`; SOP and NODE ids are ASCII letters, digits,
//!   `-`, `_` and `.`.
//! - A word is a GATE only when it has exactly that shape; otherwise it starts the COMMENT,
//!   which is the rest of the text, verbatim and trimmed, or the content of one quoted word.
//! - VALUEs take shell quoting (`title="two words"`); a KEY is letters, digits, `_`, `-`, and
//!   appears once.
//! - `help` ignores what follows it: asking for help should never fail.
//!
//! [`parse_comment`] finds commands in a GitHub comment, [`new_commands`] those an edit added,
//! and [`parse_mention`] reads a chat message addressed to the bot. A command's
//! [`Display`](std::fmt::Display) is its canonical text, which parses back to it.
#![warn(missing_docs)]

mod command;
mod comment;
mod error;
mod grammar;
mod id_ref;
mod markdown;
mod mention;
mod parse;
mod render;

pub use command::{Command, Verb, help};
pub use comment::{Found, new_commands, parse_comment};
pub use error::Problem;
pub use grammar::{GateRef, IssueRef, is_repo_name};
pub use id_ref::{IdRef, IdRefError, short_ids};
pub use mention::{Mention, parse_mention};
pub use parse::ParseError;
