//! A role's `permissions` on Copilot CLI: its `preToolUse` hook asks Gatehouse about every
//! call (`crate::permission::hook`). With `permissions` the command line first writes
//! `${COPILOT_HOME:-$HOME/.copilot}/settings.json` (the user settings; Copilot keeps its
//! own state in `config.json` beside it) holding one command hook running the shim, with
//! a timeout past the shim's longest wait for a person: Copilot runs the call when a hook
//! times out. It denies on a hook's non-zero exit, so a missing shim is a deny.
//!
//! A folder Copilot trusts could switch every hook off from its own settings
//! (`disableAllHooks`): prompt mode trusts none unless told to, so the role may not tell it
//! (`--trust-folder`, `COPILOT_ALLOW_ALL=true`), nor name hooks or plugins in its `args`.
//! Rules naming a tool Copilot has no counterpart for (`LS`, `MultiEdit`, `NotebookEdit`,
//! …) cannot hold in `deny` or `ask`, and an MCP server whose name has a `-` cannot be told
//! from its tool in Copilot's `SERVER-TOOL` names: such roles are refused.

use serde_json::json;

use crate::executor::Executor;
use crate::invocation::quote;
use crate::permission::hook::Hook;
use crate::permission::{List, Permissions, Rule};
use crate::role::{Role, RoleError};

/// Seconds Copilot waits for the hook: two days, past the shim's own limit (a day).
const TIMEOUT_SECS: u64 = 2 * 24 * 60 * 60;

/// Where Copilot reads its user settings, as shell words.
const SETTINGS_DIR: &str = "\"${COPILOT_HOME:-$HOME/.copilot}\"";

/// The Claude Code tools Copilot's calls are read as (`permission/hook/copilot.rs`).
const CALLED: [&str; 15] = [
    "Bash",
    "BashOutput",
    "KillShell",
    "Read",
    "Write",
    "Edit",
    "Grep",
    "Glob",
    "Agent",
    "Task",
    "Skill",
    "WebFetch",
    "WebSearch",
    "SendMessage",
    "ListAgents",
];

/// The shell step writing the settings that hook every call, before Copilot starts.
pub(super) fn settings() -> String {
    let settings = json!({"hooks": {"preToolUse": [{
        "type": "command",
        "bash": Hook::Copilot.command(),
        "timeoutSec": TIMEOUT_SECS,
    }]}});
    format!(
        "mkdir -p {SETTINGS_DIR} && printf '%s\\n' {} > {SETTINGS_DIR}/settings.json",
        quote(&settings.to_string())
    )
}

/// Why rules cannot hold on an MCP server named `name`, if they cannot.
pub(super) fn unhookable_mcp_name(name: &str) -> Option<&'static str> {
    name.contains('-').then_some(
        "an MCP server it gets (its `mcp` or its project's) has a `-` in its name, and Copilot \
         names MCP tools SERVER-TOOL, so the server cannot be told from its tool: rename it",
    )
}

/// Refuses what Copilot's hook cannot hold.
pub(super) fn check(role: &Role, permissions: &Permissions) -> Result<(), RoleError> {
    let trusting = role
        .args
        .iter()
        .any(|arg| ["trust", "hook", "plugin"].iter().any(|w| arg.contains(w)))
        || role.env.contains_key("COPILOT_ALLOW_ALL");
    if trusting {
        return Err(RoleError::PermissionsNotEnforced {
            executor: Executor::Copilot,
            why: "its `args` or `env` trust the working folder (`--trust-folder`, \
                  `COPILOT_ALLOW_ALL`) or name hooks or plugins, and a trusted folder's \
                  settings can switch off the hook Gatehouse asks through: drop them",
        });
    }
    Executor::check_mcp_names(role, role.mcp.iter().map(String::as_str))?;
    for (list, rules) in permissions.lists() {
        if list == List::Allow {
            continue;
        }
        if let Some(rule) = rules.iter().find(|rule| unenforced(rule)) {
            return Err(RoleError::PermissionRuleNotEnforced {
                executor: Executor::Copilot,
                list: list.as_str(),
                rule: rule.as_str().to_owned(),
                why: "Copilot CLI has no tool by that name (its shell does this: write the \
                      rule on the command, `Bash(…)`)"
                    .to_owned(),
            });
        }
    }
    Ok(())
}

fn unenforced(rule: &Rule) -> bool {
    !rule.is_mcp() && rule.tool().is_some_and(|tool| !CALLED.contains(&tool))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{check, settings};
    use crate::executor::Executor;
    use crate::permission::Permissions;
    use crate::role::{Role, RoleError};

    fn policy(value: Value) -> Permissions {
        serde_json::from_value(value).expect("permissions")
    }

    #[test]
    fn the_settings_hook_every_call_through_the_shim() {
        let home = tempfile::tempdir().expect("home");
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(settings())
            .env("HOME", home.path())
            .env_remove("COPILOT_HOME")
            .status()
            .expect("sh");
        assert!(status.success());
        let written =
            std::fs::read_to_string(home.path().join(".copilot/settings.json")).expect("settings");
        let settings: Value = serde_json::from_str(&written).expect("JSON");
        let hook = &settings["hooks"]["preToolUse"][0];
        assert_eq!(hook["type"], "command");
        assert_eq!(hook["timeoutSec"], 172_800);
        let command = hook["bash"].as_str().expect("bash");
        assert!(command.starts_with("\"${GATEHOUSE_ACP:?") && command.ends_with(" hook copilot"));
    }

    #[test]
    fn what_copilot_cannot_hold_is_refused() {
        let ok = policy(
            json!({"ask": ["Bash(git push*)", "mcp__files"], "deny": ["Read(secrets/*)", "WebFetch"]}),
        );
        let role = |args: &[&str], mcp: &[&str]| Role {
            permissions: Some(ok.clone()),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            mcp: mcp.iter().map(|a| (*a).to_owned()).collect(),
            ..Role::new(Executor::Copilot)
        };
        assert_eq!(check(&role(&[], &["files"]), &ok), Ok(()));
        assert!(matches!(
            check(&role(&["--trust-folder"], &[]), &ok),
            Err(RoleError::PermissionsNotEnforced { .. })
        ));
        assert!(matches!(
            check(&role(&[], &["my-files"]), &ok),
            Err(RoleError::PermissionsNotEnforced { .. })
        ));
        let ls = policy(json!({"deny": ["LS"]}));
        assert!(matches!(
            check(&role(&[], &[]), &ls),
            Err(RoleError::PermissionRuleNotEnforced { .. })
        ));
    }
}
