//! The line of the configuration file a key is on, so `config check` says
//! `gatehouse.toml:12: roles.dev.permissions.ask[1] …` of a bad permission rule, and
//! `gatehouse.toml line 3` of a misspelt key, rather than leaving the user to search. figment keeps no positions, so the file is read again with toml_edit, whose
//! spans do; a rule set by a `GATEHOUSE_ROLES__…` variable, or a file that cannot be read
//! again, is reported without a line.

use std::path::Path;

/// Where a rule sits: `roles.<role>.permissions.<list>[<index>]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulePlace {
    pub role: String,
    pub list: &'static str,
    pub index: usize,
}

impl RulePlace {
    /// As the message names it.
    pub fn key(&self) -> String {
        format!(
            "roles.{}.permissions.{}[{}]",
            self.role, self.list, self.index
        )
    }
}

/// The 1-based line of the rule at `place` in `source`, if it is there.
pub fn line_of(source: &str, place: &RulePlace) -> Option<usize> {
    let document = toml_edit::ImDocument::parse(source).ok()?;
    let rule = document
        .get("roles")?
        .get(&place.role)?
        .get("permissions")?
        .get(place.list)?
        .as_array()?
        .get(place.index)?;
    let start = rule.span()?.start;
    Some(source.get(..start)?.matches('\n').count() + 1)
}

/// The 1-based line of the key at `path` (`["schedules", "0", "sop"]`) in `source`: the
/// line of its value, else of the deepest table above it the file names (a key that
/// figment reports inside a table only implied by dotted keys has no span of its own).
pub fn line_of_path(source: &str, path: &[String]) -> Option<usize> {
    let document = toml_edit::ImDocument::parse(source).ok()?;
    let mut item = document.as_item();
    let mut start = None;
    for segment in path {
        let next = match (segment.parse::<usize>(), item) {
            (
                Ok(index),
                toml_edit::Item::ArrayOfTables(_)
                | toml_edit::Item::Value(toml_edit::Value::Array(_)),
            ) => item.get(index),
            _ => item.get(segment.as_str()),
        };
        let Some(next) = next else {
            break;
        };
        item = next;
        start = item.span().map(|span| span.start).or(start);
    }
    Some(source.get(..start?)?.matches('\n').count() + 1)
}

/// `file:line: ` for the rule at `place` in `file`, or nothing when it cannot be found.
pub fn prefix(file: &Path, place: &RulePlace) -> String {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|source| line_of(&source, place))
        .map(|line| format!("{}:{line}: ", file.display()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{RulePlace, line_of, line_of_path};

    fn place(role: &str, list: &'static str, index: usize) -> RulePlace {
        RulePlace {
            role: role.to_owned(),
            list,
            index,
        }
    }

    #[test]
    fn inline_and_table_forms_are_found_on_their_line() {
        let source = "[roles.dev]\nexecutor = \"claude-code\"\npermissions = { allow = [\"Read\"], ask = [\n  \"Bash(git push*)\",\n  \"Bash(git push\",\n] }\n\n[roles.ops.permissions]\ndeny = [\"WebFetch\", \"Shell\"]\n";
        assert_eq!(line_of(source, &place("dev", "ask", 1)), Some(5));
        assert_eq!(line_of(source, &place("dev", "allow", 0)), Some(3));
        assert_eq!(line_of(source, &place("ops", "deny", 1)), Some(9));
        assert_eq!(line_of(source, &place("ops", "deny", 2)), None);
        assert_eq!(line_of(source, &place("nobody", "deny", 0)), None);
        assert_eq!(line_of("not = [toml", &place("dev", "ask", 0)), None);
    }

    #[test]
    fn keys_are_found_in_tables_arrays_and_inline_tables() {
        let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        let source = "[server]\nlisten = \"x\"\nlisen = \"y\"\n\n[[schedules]]\nname = \"a\"\n\n[[schedules]]\nname = \"b\"\nbogus = 1\n\n[roles.dev]\npermissions = { alow = [] }\nsop_dirs = [\"a\",\n  2]\n";
        assert_eq!(line_of_path(source, &path("server.lisen")), Some(3));
        assert_eq!(line_of_path(source, &path("schedules.1.bogus")), Some(10));
        assert_eq!(
            line_of_path(source, &path("roles.dev.permissions.alow")),
            Some(13)
        );
        assert_eq!(
            line_of_path(source, &path("roles.dev.sop_dirs.1")),
            Some(15)
        );
        // Not in the file (set from the environment): the nearest table that is.
        assert_eq!(line_of_path(source, &path("server.nowhere")), Some(1));
        assert_eq!(line_of_path(source, &path("telemetry.x")), None);
    }
}

#[cfg(test)]
mod loading {
    use crate::config::Config;

    /// Loads `toml` as `gatehouse.toml` in a private working directory.
    #[allow(clippy::result_large_err)]
    fn load(toml: &str) -> Result<Config, String> {
        let mut result = None;
        figment::Jail::expect_with(|jail| {
            jail.create_file("gatehouse.toml", toml)?;
            result = Some(Config::load(None).map_err(|e| e.to_string()));
            Ok(())
        });
        result.unwrap_or_else(|| Err("the jail did not run".to_owned()))
    }

    #[test]
    fn a_bad_rule_is_reported_on_its_line_and_good_ones_load() {
        let good = "[roles.dev]\nexecutor = \"claude-code\"\npermissions = { allow = [\"Read\", \"Edit\", \"Bash(cargo test*)\"], ask = [\"Bash(git push*)\", \"mcp__*__write*\"], deny = [\"WebFetch\"], default = \"allow\" }\n";
        let config = load(good).expect("a good policy loads");
        assert_eq!(
            config.roles["dev"]
                .permissions
                .as_ref()
                .map(|p| p.ask.len()),
            Some(2)
        );
        let bad = "[roles.dev]\nexecutor = \"acp\"\ncommand = [\"gemini\", \"--acp\"]\n\n[roles.dev.permissions]\nallow = [\"Read\"]\nask = [\n  \"Bash(git push*)\",\n  \"Bash(git push\",\n]\n";
        assert_eq!(
            load(bad).unwrap_err(),
            "gatehouse.toml:9: roles.dev.permissions.ask[1]: \"Bash(git push\": unbalanced \
             parenthesis: write `Tool` or `Tool(pattern)`, with one `(` after the tool name \
             and the `)` last"
        );
        let unknown =
            "[roles.dev]\nexecutor = \"claude-code\"\npermissions = { deny = [\"Fetch\"] }\n";
        let message = load(unknown).unwrap_err();
        assert!(
            message.starts_with(
                "gatehouse.toml:3: roles.dev.permissions.deny[0]: \"Fetch\": unknown tool `Fetch`"
            ),
            "{message}"
        );
        let key = "[roles.dev]\nexecutor = \"claude-code\"\npermissions = { alow = [\"Read\"] }\n";
        let message = load(key).unwrap_err();
        assert!(message.contains("alow"), "{message}");
        let executor = "[roles.dev]\nexecutor = \"pi\"\npermissions = { deny = [\"WebFetch\"] }\n";
        let message = load(executor).unwrap_err();
        assert!(
            message.starts_with("roles.dev: executor \"pi\" cannot enforce"),
            "{message}"
        );
    }
}
