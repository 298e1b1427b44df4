//! A role's `permissions` in Claude Code's own terms, handed over as `--settings` JSON
//! (`{"permissions": {"allow", "ask", "deny"}}`), so Claude Code enforces them itself: its
//! rules are decided deny, then ask, then allow, as Gatehouse's are, and are merged with
//! any other settings file with that precedence intact.
//!
//! Gatehouse's rule syntax is Claude Code's, except paths: a `*` in a Gatehouse path spans
//! folders and a relative pattern matches anywhere, while Claude Code reads gitignore
//! patterns relative to the working directory. So `src/*` becomes `//**/src/**`, `*.env`
//! `//**/*.env`, `/work/*` `//work/**`. A rule Claude Code's syntax cannot say exactly (a
//! star inside a folder name, a URL glob for WebFetch, a star in an MCP server name) is
//! left out of `allow` — the call then goes to `--permission-prompt-tool`, which decides it
//! by the whole policy on the runner, or is refused when there is none — and refused in
//! `ask` and `deny` by [`check`], unless no rule Claude Code allows could reach the same
//! calls (an MCP rule with no MCP rule in `allow`).
//!
//! `default = "allow"` adds every built-in tool's bare name to `allow` (deny and ask still
//! win over it), and each MCP server's when every MCP rule in `ask` and `deny` translated.
//! `default = "ask"` or `"deny"`: Claude Code asks the prompt tool (or, with none, refuses)
//! for anything not allowed — except reads, which it makes in its working directory without
//! asking (tested: tests/tests/agent_permissions.rs). So unless `allow` or `ask` names
//! `Read` itself, `Read` (which covers every reading tool) joins `deny` or `ask`; and a
//! patterned read rule in `allow` or `ask` is refused under such a default, since Claude
//! Code would read the rest of the working directory regardless.

use serde_json::{Value, json};

use crate::executor::Executor;
use crate::permission::{Decision, List, Pattern, Permissions, Rule, TOOLS};

/// The tools Claude Code's `Read` rules cover, which it runs in its working directory
/// without asking.
const READS: [&str; 5] = ["Read", "Glob", "Grep", "LS", "NotebookRead"];

/// Whether `rule` is about reading files, and whether it is `Read` whole.
fn reading(rule: &Rule) -> Option<bool> {
    let tool = rule.tool()?;
    READS
        .contains(&tool)
        .then(|| tool == "Read" && rule.pattern().is_none())
}

/// Under a default other than allow: whether `allow` or `ask` gives `Read` whole.
fn read_given(permissions: &Permissions) -> bool {
    permissions
        .allow
        .iter()
        .chain(&permissions.ask)
        .any(|rule| reading(rule) == Some(true))
}
use crate::role::RoleError;
use crate::tools::Tools;

/// Claude Code's form of one rule; `Err` says why there is none.
fn translate(rule: &Rule) -> Result<Option<String>, String> {
    let Some(tool) = rule.tool() else {
        return Err("it does not parse".to_owned());
    };
    if rule.is_mcp() {
        let name = &tool["mcp__".len()..];
        return match name.find('*') {
            None => Ok(Some(tool.to_owned())),
            Some(_) => match name.strip_suffix("__*") {
                Some(server) if !server.contains('*') && !server.contains("__") => {
                    Ok(Some(format!("mcp__{server}")))
                }
                _ => Err("Claude Code's MCP rules name one tool or one whole server \
                     (`mcp__github__create_issue`, `mcp__github`, `mcp__github__*`)"
                    .to_owned()),
            },
        };
    }
    if tool == "Other" {
        // An ACP agent's name; Claude Code has no such tool.
        return Ok(None);
    }
    let Some(pattern) = rule.pattern() else {
        return Ok(Some(tool.to_owned()));
    };
    let inner = match (tool, pattern) {
        ("Bash", Pattern::Glob(glob)) => glob.clone(),
        ("Bash", Pattern::Prefix(prefix)) => format!("{prefix}:*"),
        ("WebFetch", Pattern::Domain(host)) => format!("domain:{host}"),
        ("WebFetch", Pattern::Glob(_)) => {
            return Err(
                "Claude Code matches WebFetch by host only; write `WebFetch(domain:HOST)`"
                    .to_owned(),
            );
        }
        ("WebSearch", _) => {
            return Err("Claude Code takes no pattern for WebSearch; write `WebSearch`".to_owned());
        }
        ("Read" | "Edit", Pattern::Glob(glob)) => path(glob)?,
        (_, Pattern::Glob(glob)) => glob.clone(),
        _ => return Err("Claude Code has no such pattern".to_owned()),
    };
    Ok(Some(format!("{tool}({inner})")))
}

/// A Gatehouse path glob as a Claude Code (gitignore) pattern matching the same paths.
fn path(glob: &str) -> Result<String, String> {
    let relative = !glob.starts_with('/');
    let glob = glob.trim_start_matches("./");
    let segments: Vec<&str> = glob.trim_start_matches('/').split('/').collect();
    let last = segments.len() - 1;
    let mut out: Vec<String> = Vec::with_capacity(segments.len() + 1);
    for (at, segment) in segments.iter().enumerate() {
        if *segment == "*" {
            out.push("**".to_owned());
        } else if segment.contains('*') && at == last {
            // `*.rs` spans folders in Gatehouse: any depth, then the name.
            out.push("**".to_owned());
            out.push((*segment).to_owned());
        } else if segment.contains('*') {
            return Err(format!(
                "Claude Code cannot say `{glob}` exactly (a `*` inside a folder name); use \
                 `*` as a whole folder (`src/*/mod.rs`) or in the file name"
            ));
        } else {
            out.push((*segment).to_owned());
        }
    }
    let joined = out.join("/");
    Ok(if relative && !joined.starts_with("**") {
        format!("//**/{joined}")
    } else {
        format!("//{joined}")
    })
}

/// Refuses a role whose `ask` or `deny` rule Claude Code could not enforce.
pub(super) fn check(permissions: &Permissions) -> Result<(), RoleError> {
    if permissions.default != Decision::Allow {
        let partial = permissions
            .allow
            .iter()
            .chain(&permissions.ask)
            .find(|rule| reading(rule) == Some(false));
        if let Some(rule) = partial {
            let list = if permissions.allow.contains(rule) {
                "allow"
            } else {
                "ask"
            };
            return Err(RoleError::PermissionRuleNotEnforced {
                executor: Executor::ClaudeCode,
                list,
                rule: rule.as_str().to_owned(),
                why: format!(
                    "Claude Code reads any file in its working directory without asking, so \
                     under `default = \"{}\"` it cannot be held to some reads: give `Read` \
                     whole, or keep `default = \"allow\"` and deny the paths to keep \
                     (`deny = [\"Read(secrets/*)\"]`)",
                    permissions.default.as_str()
                ),
            });
        }
    }
    let mcp_allowed = permissions.allow.iter().any(Rule::is_mcp);
    for (list, rules) in permissions.lists() {
        if list == List::Allow {
            continue;
        }
        for rule in rules {
            if let Err(why) = translate(rule) {
                // Left out, the call falls to the prompt tool or is refused — unless an
                // allow rule Claude Code reads reaches it first.
                if rule.is_mcp() && !mcp_allowed {
                    continue;
                }
                return Err(RoleError::PermissionRuleNotEnforced {
                    executor: Executor::ClaudeCode,
                    list: list.as_str(),
                    rule: rule.as_str().to_owned(),
                    why,
                });
            }
        }
    }
    Ok(())
}

/// The `--settings` JSON for a role's `permissions`, with `tools`' MCP servers.
pub(super) fn settings(permissions: &Permissions, tools: &Tools) -> Value {
    let said = |rules: &[Rule]| -> Vec<String> {
        rules
            .iter()
            .filter_map(|rule| translate(rule).ok().flatten())
            .collect()
    };
    let mut allow = said(&permissions.allow);
    if permissions.default == Decision::Allow {
        allow.extend(
            TOOLS
                .iter()
                .filter(|tool| **tool != "Other")
                .map(|tool| (*tool).to_owned()),
        );
        let mcp_translated = permissions
            .ask
            .iter()
            .chain(&permissions.deny)
            .filter(|rule| rule.is_mcp())
            .all(|rule| translate(rule).is_ok());
        if mcp_translated {
            allow.extend(
                tools
                    .mcp
                    .iter()
                    .map(|server| format!("mcp__{}", server.name)),
            );
        }
    }
    let mut unique = Vec::with_capacity(allow.len());
    for rule in allow {
        if !unique.contains(&rule) {
            unique.push(rule);
        }
    }
    let mut ask = said(&permissions.ask);
    let mut deny = said(&permissions.deny);
    match permissions.default {
        Decision::Deny if !read_given(permissions) => deny.push("Read".to_owned()),
        Decision::Ask if !read_given(permissions) => ask.push("Read".to_owned()),
        _ => {}
    }
    json!({
        "permissions": {
            "allow": unique,
            "ask": ask,
            "deny": deny,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check, path, settings, translate};
    use crate::permission::{Permissions, Rule};
    use crate::tools::{McpServer, McpTransport, Tools};

    fn said(text: &str) -> Result<Option<String>, String> {
        translate(&Rule::parse(text).expect("rule"))
    }

    #[test]
    fn rules_are_said_in_claude_code_terms() {
        assert_eq!(said("Bash(git push*)"), Ok(Some("Bash(git push*)".into())));
        assert_eq!(
            said("Bash(git push:*)"),
            Ok(Some("Bash(git push:*)".into()))
        );
        assert_eq!(said("Read"), Ok(Some("Read".into())));
        assert_eq!(
            said("WebFetch(domain:x.io)"),
            Ok(Some("WebFetch(domain:x.io)".into()))
        );
        assert!(said("WebFetch(https://x.io/*)").is_err());
        assert_eq!(said("mcp__gh__create"), Ok(Some("mcp__gh__create".into())));
        assert_eq!(said("mcp__gh__*"), Ok(Some("mcp__gh".into())));
        assert!(said("mcp__*__write*").is_err());
        assert_eq!(said("Other"), Ok(None));
        assert_eq!(path("src/*"), Ok("//**/src/**".into()));
        assert_eq!(path("*.env"), Ok("//**/*.env".into()));
        assert_eq!(path("/work/*"), Ok("//work/**".into()));
        assert_eq!(path("/work/src/*.rs"), Ok("//work/src/**/*.rs".into()));
        assert_eq!(path("./a/*/mod.rs"), Ok("//**/a/**/mod.rs".into()));
        assert!(path("a*/b").is_err());
    }

    #[test]
    fn default_allow_allows_the_rest_and_untranslatable_ask_rules_are_refused_when_allow_could_reach_them()
     {
        let permissions: Permissions = serde_json::from_value(json!({
            "allow": ["Bash(cargo test*)"],
            "ask": ["Bash(git push*)", "mcp__*__write*"],
            "deny": ["WebFetch"],
        }))
        .expect("permissions");
        assert_eq!(check(&permissions), Ok(()));
        let tools = Tools {
            mcp: vec![McpServer {
                name: "files".into(),
                transport: McpTransport::Http {
                    url: "http://x".into(),
                    token_env: None,
                },
            }],
            ..Tools::none()
        };
        let said = settings(&permissions, &tools);
        let allow = said["permissions"]["allow"].as_array().expect("allow");
        assert_eq!(allow[0], "Bash(cargo test*)");
        assert!(allow.contains(&json!("Edit")));
        // The MCP ask rule could not be said: MCP calls go to the prompt tool.
        assert!(!allow.contains(&json!("mcp__files")));
        assert_eq!(said["permissions"]["ask"], json!(["Bash(git push*)"]));
        assert_eq!(said["permissions"]["deny"], json!(["WebFetch"]));

        let reachable: Permissions = serde_json::from_value(json!({
            "allow": ["mcp__files"],
            "ask": ["mcp__*__write*"],
        }))
        .expect("permissions");
        let message = check(&reachable).unwrap_err().to_string();
        assert!(message.contains("mcp__*__write*"), "{message}");
        let partial: Permissions =
            serde_json::from_value(json!({"allow": ["Read(src/*)"], "default": "deny"}))
                .expect("p");
        let message = check(&partial).unwrap_err().to_string();
        assert!(message.contains("reads any file"), "{message}");
        let strict: Permissions =
            serde_json::from_value(json!({"deny": ["Read(secrets/*)"], "default": "ask"}))
                .expect("p");
        assert_eq!(check(&strict), Ok(()));
        assert_eq!(
            settings(&strict, &Tools::none())["permissions"]["ask"],
            json!(["Read"])
        );
        let whole: Permissions =
            serde_json::from_value(json!({"allow": ["Read"], "default": "deny"})).expect("p");
        assert_eq!(
            settings(&whole, &Tools::none())["permissions"]["deny"],
            json!([])
        );
        let url: Permissions =
            serde_json::from_value(json!({"deny": ["WebFetch(https://x.io/*)"]})).expect("p");
        assert!(check(&url).unwrap_err().to_string().contains("domain:HOST"));
    }
}
