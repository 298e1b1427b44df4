//! Declared parameters and the values they accept.
//!
//! A parameter's value comes from whoever starts the run (an API call, a chat command, a
//! GitHub label), so it is checked against its declared type before the run starts: a run
//! never sees a value its SOP did not allow.

use std::fmt;

use regex::Regex;
use serde::{Serialize, Serializer};

use crate::quote::shown;

/// A declared parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Param {
    /// Starting a run without it is refused.
    pub required: bool,
    /// Used when not given; satisfies [`Param::kind`] (checked when the SOP is parsed).
    pub default: Option<String>,
    /// For help texts.
    pub description: String,
    /// The values it accepts (`type:` in the YAML).
    #[serde(flatten)]
    pub kind: ParamType,
}

impl Param {
    /// Whether `value` is one the parameter `name` accepts; the message names the
    /// parameter and says what is allowed.
    pub fn check(&self, name: &str, value: &str) -> Result<(), String> {
        if self.kind.accepts(value) {
            return Ok(());
        }
        let got = shown(value);
        Err(match &self.kind {
            ParamType::String { pattern } => format!(
                "parameter `{name}` must match `{}`, got `{got}`",
                pattern.as_ref().map_or(".*", Pattern::as_str)
            ),
            ParamType::Int => format!("parameter `{name}` must be an integer, got `{got}`"),
            ParamType::Bool => format!("parameter `{name}` must be true or false, got `{got}`"),
            ParamType::Enum { values } => format!(
                "parameter `{name}` must be one of: {}; got `{got}`",
                values.join(", ")
            ),
        })
    }
}

/// The values a parameter accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ParamType {
    /// Any text, or only text matching `pattern` as a whole.
    String {
        /// The pattern the whole value must match.
        pattern: Option<Pattern>,
    },
    /// A 64-bit signed integer in decimal.
    Int,
    /// `true` or `false`, nothing else.
    Bool,
    /// One of `values`, exactly.
    Enum {
        /// The accepted values, in file order; never empty.
        values: Vec<String>,
    },
}

impl ParamType {
    pub fn accepts(&self, value: &str) -> bool {
        match self {
            Self::String { pattern } => pattern.as_ref().is_none_or(|p| p.matches(value)),
            Self::Int => value.parse::<i64>().is_ok(),
            Self::Bool => matches!(value, "true" | "false"),
            Self::Enum { values } => values.iter().any(|v| v == value),
        }
    }

    /// The YAML name of the type.
    pub fn name(&self) -> &'static str {
        match self {
            Self::String { .. } => "string",
            Self::Int => "int",
            Self::Bool => "bool",
            Self::Enum { .. } => "enum",
        }
    }
}

impl Default for ParamType {
    /// A parameter without `type:` takes any string.
    fn default() -> Self {
        Self::String { pattern: None }
    }
}

/// A regular expression a whole value must match: `abc` accepts `abc`, not `xabcx`.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    anchored: Regex,
}

impl Pattern {
    /// Compiles `source`, anchored at both ends. The error is the regex library's reason,
    /// on one line.
    pub fn new(source: &str) -> Result<Self, String> {
        // Compiled alone first so that an unbalanced `)` cannot close the anchoring group.
        Regex::new(source).map_err(|e| one_line(&e))?;
        let anchored = Regex::new(&format!("^(?:{source})$")).map_err(|e| one_line(&e))?;
        Ok(Self {
            source: source.to_owned(),
            anchored,
        })
    }

    /// Whether the whole of `value` matches.
    pub fn matches(&self, value: &str) -> bool {
        self.anchored.is_match(value)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for Pattern {}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

/// The regex library's error without the multi-line drawing of the pattern: its
/// `error: ...` line, or the whole text joined when there is none.
fn one_line(err: &regex::Error) -> String {
    let text = err.to_string();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(
            || text.split_whitespace().collect::<Vec<_>>().join(" "),
            str::to_owned,
        )
}
