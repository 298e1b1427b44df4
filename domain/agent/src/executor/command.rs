//! Any program: the role's `command` argv with its placeholders filled in
//! (`{prompt_file}`, `{system_file}`, `{transcript_file}`, `{model}`). It has no session of
//! its own: a turn gives it the conversation so far in `{transcript_file}`.

mod events;
mod report;

use super::{Call, Cli, ModelApi};
use crate::invocation::quote;
use crate::placeholder::{self, Piece};
use crate::role::{Role, RoleError};
use crate::trace::Events;
use crate::usage::{ParseError, Report};

pub(super) struct Command;

impl Cli for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    /// The role's `command` names it.
    fn program(&self) -> Option<&'static str> {
        None
    }

    fn install(&self) -> Option<&'static str> {
        None
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[]
    }

    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        Vec::new()
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        let Call {
            prompt_file,
            system_file,
            transcript_file,
            ..
        } = *call;
        let words: Vec<String> = role
            .command
            .iter()
            .map(|argument| {
                let mut filled = String::with_capacity(argument.len());
                for piece in placeholder::pieces(argument) {
                    match piece {
                        Piece::Text(text) => filled.push_str(text),
                        Piece::Placeholder("prompt_file") => filled.push_str(prompt_file),
                        Piece::Placeholder("system_file") => {
                            filled.push_str(system_file.unwrap_or_default());
                        }
                        Piece::Placeholder("transcript_file") => {
                            filled.push_str(transcript_file.unwrap_or_default());
                        }
                        Piece::Placeholder("model") => {
                            filled.push_str(role.model.as_deref().unwrap_or_default());
                        }
                        // Refused by `Role::check`; written back as it was.
                        Piece::Placeholder(other) => {
                            filled.push('{');
                            filled.push_str(other);
                            filled.push('}');
                        }
                    }
                }
                quote(&filled)
            })
            .collect();
        words.join(" ")
    }

    fn check(&self, role: &Role) -> Result<(), RoleError> {
        check_command(role)
    }

    fn reads_transcript(&self) -> bool {
        true
    }

    /// A program of the role's own, whose way of taking MCP servers Gatehouse cannot know.
    fn takes_mcp(&self) -> bool {
        false
    }

    fn events(&self) -> Box<dyn Events> {
        Box::<events::Reader>::default()
    }

    fn report(&self, text: &str, _model: &str) -> Result<Report, ParseError> {
        report::report(text)
    }
}

/// A `command` role: a program first, no `args`, only known placeholders, each with a
/// value to fill in.
fn check_command(role: &Role) -> Result<(), RoleError> {
    let Some(program) = role.command.first() else {
        return Err(RoleError::CommandMissing);
    };
    if program.trim().is_empty() {
        return Err(RoleError::ProgramEmpty);
    }
    if !role.args.is_empty() {
        return Err(RoleError::ArgsNotAllowed);
    }
    for argument in &role.command {
        for piece in placeholder::pieces(argument) {
            let Piece::Placeholder(name) = piece else {
                continue;
            };
            if !placeholder::KNOWN.contains(&name) {
                return Err(RoleError::UnknownPlaceholder {
                    name: name.to_owned(),
                    argument: argument.clone(),
                });
            }
            if name == "model" && role.model.is_none() {
                return Err(RoleError::ModelPlaceholderWithoutModel);
            }
            if name == "system_file" && role.system_text().is_none() {
                return Err(RoleError::SystemPlaceholderWithoutSystem);
            }
        }
    }
    Ok(())
}
