//! A `SKILL.md`'s front matter: its `name` and `description`, read without a YAML parser
//! (the two keys, plain, quoted or as a block; everything else skipped).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{MAX_DESCRIPTION_LEN, SkillError};

/// What a `SKILL.md`'s front matter says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontMatter {
    pub name: String,
    pub description: String,
}

/// Reads the front matter of a `SKILL.md`: a first line `---`, `key: value` lines, a line
/// `---`. Only `name` and `description` are read (plain, quoted, or a `|`/`>` block);
/// other keys, and lines indented under them, are skipped. `skill` names the skill in
/// messages.
pub fn front_matter(skill: &str, text: &[u8]) -> Result<FrontMatter, SkillError> {
    let problem = |problem: &str| SkillError::FrontMatter {
        name: skill.to_owned(),
        problem: problem.to_owned(),
    };
    let text = std::str::from_utf8(text).map_err(|_| problem("is not UTF-8 text"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(problem(
            "has no front matter: start it with a line `---`, then `name:` and \
             `description:`, then `---`",
        ));
    }
    let mut body = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        body.push(line);
    }
    if !closed {
        return Err(problem("front matter has no closing `---` line"));
    }
    let mut fields: BTreeMap<&str, String> = BTreeMap::new();
    let mut at = 0;
    while at < body.len() {
        let line = body[at];
        at += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') || line.starts_with(' ') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(problem(&format!(
                "front matter line {} is not `key: value`",
                at + 1
            )));
        };
        let key = key.trim();
        let value = value.trim();
        let mut block = Vec::new();
        while at < body.len() && (body[at].starts_with(' ') || body[at].trim().is_empty()) {
            block.push(body[at].trim());
            at += 1;
        }
        if key != "name" && key != "description" {
            continue;
        }
        let value = match value.chars().next() {
            Some('|') => block.join("\n").trim().to_owned(),
            Some('>') => fold(&block),
            Some('"') => unquote_double(value)
                .ok_or_else(|| problem(&format!("`{key}` has an unclosed quote")))?,
            Some('\'') => value
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .map(|v| v.replace("''", "'"))
                .ok_or_else(|| problem(&format!("`{key}` has an unclosed quote")))?,
            _ => {
                let mut all = vec![value];
                all.extend(block.iter().copied());
                fold(&all)
            }
        };
        if fields
            .insert(if key == "name" { "name" } else { "description" }, value)
            .is_some()
        {
            return Err(problem(&format!("front matter gives `{key}` twice")));
        }
    }
    let name = fields.remove("name").filter(|n| !n.is_empty());
    let description = fields.remove("description").filter(|d| !d.is_empty());
    let (Some(name), Some(description)) = (name, description) else {
        return Err(problem(
            "front matter needs both `name:` and `description:`",
        ));
    };
    if description.len() > MAX_DESCRIPTION_LEN {
        return Err(problem(&format!(
            "`description` is longer than {MAX_DESCRIPTION_LEN} bytes"
        )));
    }
    Ok(FrontMatter { name, description })
}

/// Plain lines folded into one, as YAML folds them.
fn fold(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn unquote_double(value: &str) -> Option<String> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    if inner.is_empty() {
        return Some(String::new());
    }
    serde_json::from_str(value)
        .ok()
        .or_else(|| Some(inner.to_owned()))
}
