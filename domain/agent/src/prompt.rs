//! Prompt templates: what an `agent` node asks its agent.
//!
//! A node's `prompt` is a [MiniJinja](https://docs.rs/minijinja) template rendered from a
//! [`PromptContext`]. Three settings differ from a plain Jinja environment, each because
//! the output is a prompt, not a web page:
//!
//! - undefined values are errors (strict mode), so a typo such as `{{ requirment.title }}`
//!   stops the node with the expression and its line instead of silently asking the agent an
//!   emptier question;
//! - nothing is HTML-escaped;
//! - a block tag's own line leaves nothing behind (`trim_blocks` and `lstrip_blocks`), so
//!   `{% if rework_comment %}` on a line of its own adds no blank line or indentation, and the
//!   template's final newline is kept.

use std::collections::BTreeMap;
use std::ops::Range;

use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The requirement a run carries (an issue, a chat request), as a prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RequirementView {
    /// One-line summary.
    pub title: String,
    pub body: String,
    /// Where it lives, when it has an address (an issue URL, a chat permalink).
    pub url: Option<String>,
}

/// Everything a prompt template sees, each field a top-level variable of the same name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PromptContext {
    /// The run's requirement; `none` for runs started without one (schedules, the CLI).
    pub requirement: Option<RequirementView>,
    pub params: BTreeMap<String, String>,
    /// Upstream node → artifact file name → its text (large files truncated by the runner).
    pub inputs: BTreeMap<String, BTreeMap<String, String>>,
    /// The reviewer's send-back comment that caused this attempt; `none` otherwise.
    pub rework_comment: Option<String>,
    pub run_id: String,
    pub node: String,
    /// This execution's attempt number, from 1.
    pub attempt: u32,
    /// The run's project: `name` and each of its settings (`test_command`, ...); `none` for
    /// a run on no project.
    pub project: Option<BTreeMap<String, String>>,
}

/// The top-level variables of a [`PromptContext`], for messages and the static check.
const VARIABLES: [&str; 8] = [
    "requirement",
    "params",
    "inputs",
    "rework_comment",
    "run_id",
    "node",
    "attempt",
    "project",
];

/// The name templates are compiled under; MiniJinja puts it in locations.
const TEMPLATE_NAME: &str = "prompt";

/// Why a prompt template could not be compiled or rendered. `line` is the 1-based line in
/// the template, when MiniJinja knows it, so SOP validation can point into the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PromptError {
    /// The template does not parse.
    #[error("prompt template{}: {message}", at_line(.line))]
    Syntax {
        line: Option<usize>,
        /// MiniJinja's description.
        message: String,
    },
    /// The template uses a variable, attribute or key that the context does not have.
    #[error("prompt template{}: `{expression}` is undefined; {hint}", at_line(.line))]
    Undefined {
        line: Option<usize>,
        /// The expression as written in the template.
        expression: String,
        /// What is defined instead.
        hint: String,
    },
    /// Any other rendering failure, such as a filter applied to the wrong type.
    #[error("prompt template{}: {message}", at_line(.line))]
    Render {
        line: Option<usize>,
        /// MiniJinja's description, with the failing expression when known.
        message: String,
    },
}

fn at_line(line: &Option<usize>) -> String {
    line.map(|l| format!(", line {l}")).unwrap_or_default()
}

fn environment<'source>() -> Environment<'source> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    // Debug info gives errors the byte range of the failing expression in every build.
    env.set_debug(true);
    env
}

/// Renders a node's prompt for one attempt.
pub fn render_prompt(template: &str, context: &PromptContext) -> Result<String, PromptError> {
    let env = environment();
    let compiled = env
        .template_from_named_str(TEMPLATE_NAME, template)
        .map_err(|e| syntax_error(&e))?;
    compiled
        .render(context)
        .map_err(|e| render_error(template, &e, context))
}

/// Checks a template when its SOP is validated, before any run: that it parses, and that
/// every top-level variable it reads is one a [`PromptContext`] has (a typo in a variable
/// name would otherwise only surface when a run reaches the node).
pub fn check_template(template: &str) -> Result<(), PromptError> {
    let env = environment();
    let compiled = env
        .template_from_named_str(TEMPLATE_NAME, template)
        .map_err(|e| syntax_error(&e))?;
    let globals: Vec<&str> = env.globals().map(|(name, _)| name).collect();
    let mut unknown: Vec<String> = compiled
        .undeclared_variables(false)
        .into_iter()
        .filter(|name| !VARIABLES.contains(&name.as_str()) && !globals.contains(&name.as_str()))
        .collect();
    unknown.sort_by_key(|name| (line_of_variable(template, name), name.clone()));
    match unknown.into_iter().next() {
        Some(name) => Err(PromptError::Undefined {
            line: line_of_variable(template, &name),
            hint: unknown_variable_hint(&name),
            expression: name,
        }),
        None => Ok(()),
    }
}

fn syntax_error(e: &minijinja::Error) -> PromptError {
    PromptError::Syntax {
        line: e.line(),
        message: describe(e),
    }
}

fn render_error(template: &str, e: &minijinja::Error, context: &PromptContext) -> PromptError {
    let expression = e
        .range()
        .and_then(|range| template.get(widen_to_path(template, range)))
        .map(str::trim)
        .filter(|expression| !expression.is_empty());
    match (e.kind(), expression) {
        (ErrorKind::UndefinedError, Some(expression)) => PromptError::Undefined {
            line: e.line(),
            hint: undefined_hint(expression, context),
            expression: expression.to_owned(),
        },
        (_, Some(expression)) => PromptError::Render {
            line: e.line(),
            message: format!("{} (in `{expression}`)", describe(e)),
        },
        (_, None) => PromptError::Render {
            line: e.line(),
            message: describe(e),
        },
    }
}

/// MiniJinja's span of a failed lookup can start at the lookup itself (`.review['a.md']`);
/// widening it back over the path it hangs off shows the whole `inputs.review['a.md']`.
fn widen_to_path(template: &str, range: Range<usize>) -> Range<usize> {
    let bytes = template.as_bytes();
    let mut start = range.start;
    if !matches!(bytes.get(start), Some(b'.' | b'[')) {
        return range;
    }
    while start > 0 {
        match bytes[start - 1] {
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' => start -= 1,
            b']' => match template[..start - 1].rfind('[') {
                Some(open) => start = open,
                None => break,
            },
            _ => break,
        }
    }
    start..range.end
}

/// MiniJinja's message without its own "(in prompt:N)" location, which the error carries.
fn describe(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    }
}

/// Says what the context offers where the failing expression looked.
fn undefined_hint(expression: &str, context: &PromptContext) -> String {
    let root: String = expression
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let listed = |what: &str, keys: Vec<&String>| {
        if keys.is_empty() {
            format!("this run has no {what}")
        } else {
            let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
            format!("this run's {what}: {}", keys.join(", "))
        }
    };
    match root.as_str() {
        "params" => listed("params", context.params.keys().collect()),
        "inputs" => listed("inputs (by node)", context.inputs.keys().collect()),
        "requirement" if context.requirement.is_none() => {
            "this run has no requirement; guard with {% if requirement %}".to_owned()
        }
        "requirement" => "a requirement has title, body and url".to_owned(),
        "project" if context.project.is_none() => {
            "this run works on no project; guard with {% if project %}".to_owned()
        }
        "project" => listed(
            "project settings",
            context.project.iter().flat_map(|p| p.keys()).collect(),
        ),
        root if !VARIABLES.contains(&root) => unknown_variable_hint(root),
        _ => format!("`{root}` has no such attribute or key"),
    }
}

fn unknown_variable_hint(name: &str) -> String {
    format!(
        "there is no variable `{name}`; a prompt sees {}",
        VARIABLES.join(", ")
    )
}

/// The 1-based line of the first use of a variable inside a `{{ }}` or `{% %}` tag.
fn line_of_variable(template: &str, name: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(open) = template[from..].find('{').map(|i| from + i) {
        let close_marker = match template[open + 1..].chars().next() {
            Some('{') => "}}",
            Some('%') => "%}",
            _ => {
                from = open + 1;
                continue;
            }
        };
        let body_start = open + 2;
        let body_end = template[body_start..]
            .find(close_marker)
            .map_or(template.len(), |i| body_start + i);
        let body = &template[body_start..body_end];
        for (at, _) in body.match_indices(name) {
            let before = body[..at].chars().next_back();
            let after = body[at + name.len()..].chars().next();
            if !before.is_some_and(|c| is_ident(c) || c == '.') && !after.is_some_and(is_ident) {
                return Some(template[..body_start + at].matches('\n').count() + 1);
            }
        }
        from = body_end;
    }
    None
}
