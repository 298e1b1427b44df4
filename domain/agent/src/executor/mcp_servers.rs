//! What the executors share in handing [`crate::Tools::mcp`] to their CLIs: each CLI takes
//! the servers in a JSON or TOML shape of its own (written in its file), but all of them
//! name a stdio server's program and arguments apart, send a remote server's token as
//! `Authorization: Bearer`, and leave the runner's address and the attempt's token to the
//! shell (`${GATEHOUSE_TOOLS_URL}`, `${GATEHOUSE_TOOLS_TOKEN}`), so neither is written
//! into the command line the runner logs.

use crate::tools::{McpServer, McpTransport};

/// The variables the servers' settings name as `${NAME}`: those in remote servers' URLs
/// and their token variables; [`super::expand`] lets exactly these expand.
pub(super) fn variables(servers: &[McpServer]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for server in servers {
        let McpTransport::Http { url, token_env } = &server.transport else {
            continue;
        };
        names.extend(named(url));
        names.extend(token_env.iter().cloned());
    }
    names.sort();
    names.dedup();
    names
}

/// The `${NAME}`s in `text`, NAME being letters, digits and `_`.
fn named(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find('}') else { break };
        let name = &rest[..end];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            names.push(name.to_owned());
        }
        rest = &rest[end + 1..];
    }
    names
}

/// The `Authorization` header's value for a token in the variable `token_env`, for the
/// shell to expand.
pub(super) fn bearer(token_env: &str) -> String {
    format!("Bearer ${{{token_env}}}")
}

/// A stdio server's program and its arguments; an empty argv (refused by the configuration
/// check) gives an empty program.
pub(super) fn program(command: &[String]) -> (&str, &[String]) {
    match command.split_first() {
        Some((program, args)) => (program.as_str(), args),
        None => ("", &[]),
    }
}

/// `text` with each `${NAME}` written as `{env:NAME}`: OpenCode's own substitution, read
/// when it loads its configuration (which the shell does not expand).
pub(super) fn opencode_env(text: &str) -> String {
    let mut out = text.to_owned();
    for name in named(text) {
        out = out.replace(&format!("${{{name}}}"), &format!("{{env:{name}}}"));
    }
    out
}

/// The words of a command line with these variables expanded: `variables` as `&str`s.
pub(super) fn as_strs(variables: &[String]) -> Vec<&str> {
    variables.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_variable_names_are_taken() {
        assert_eq!(named("${A}/mcp/${B_2}"), ["A", "B_2"]);
        assert_eq!(named("${}${a-b}${C"), Vec::<String>::new());
        assert_eq!(
            opencode_env("${GATEHOUSE_TOOLS_URL}/mcp/docs"),
            "{env:GATEHOUSE_TOOLS_URL}/mcp/docs"
        );
    }
}
