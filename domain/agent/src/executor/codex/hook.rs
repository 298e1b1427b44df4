//! A role's `permissions` on Codex: its `PreToolUse` hook asks Gatehouse about every call
//! (`crate::permission::hook`), configured on the command line when the role has
//! `permissions`:
//!
//! - `-c hooks.PreToolUse=[…]`: one command hook for every tool (`matcher = "*"`), the
//!   shim's command wrapped so that any exit but a clean allow (0) or deny (2, with a
//!   reason) becomes a deny with a reason: Codex 0.171 runs the call when a hook exits
//!   otherwise, times out, or prints what it cannot read. Its timeout outlasts the shim's
//!   longest wait for a person, so Codex never gives up on it first.
//! - `--dangerously-bypass-hook-trust`: Codex skips a hook nobody marked trusted in its
//!   state, without a word; this one is Gatehouse's own, written on this command line.
//!   (Project hooks stay off: `codex exec` loads no untrusted project's `.codex/`.)
//! - `--enable hooks`, after the role's `args`: on whatever a configuration file says.
//! - `--disable unified_exec_tty`: `write_stdin`, which types into a running command and
//!   has no hook, gets no terminal to type into (a command's stdin is closed without one).
//! - `-c web_search="disabled"` unless the policy allows `WebSearch` outright: the search
//!   runs at the model provider, where no hook sees it.
//!
//! Codex writes MCP names with `_` for `-` (server `my-files` gives `mcp__my_files__…`):
//! a role using a server with a `-` in its name, or an MCP rule with a character other
//! than letters, digits, `_` and `*`, is refused. Rules that name a tool Codex never calls
//! by that name (it has no `Glob`, `Grep`, `LS` or `WebFetch`: its shell does those) cannot
//! hold in `deny` or `ask`, nor can a `WebSearch` rule with a pattern or one in `ask`: such
//! roles are refused, saying why.

use serde_json::json;

use crate::executor::Executor;
use crate::invocation::quote;
use crate::permission::hook::Hook;
use crate::permission::{Decision, List, Permissions, Rule, ToolUse};
use crate::role::{Role, RoleError};

/// Seconds Codex waits for the hook: two days, past the shim's own limit on a person's
/// answer (a day), after which the shim denies.
const TIMEOUT_SECS: u64 = 2 * 24 * 60 * 60;

/// The Claude Code tools a rule may name that Codex's calls are read as
/// (`permission/hook/codex.rs`); `Edit` covers `Write`, `Task` is `Agent`.
const CALLED: [&str; 9] = [
    "Bash",
    "Edit",
    "Write",
    "Read",
    "AskUserQuestion",
    "Agent",
    "Task",
    "SendMessage",
    "ToolSearch",
];

/// The words after the role's `args` that make Codex ask the hook before every call.
pub(super) fn flags(permissions: &Permissions) -> Vec<String> {
    let command = format!(
        "( {} ); status=$?; if [ \"$status\" -ne 0 ]; then [ \"$status\" -eq 2 ] || echo \
         \"Gatehouse denied the call: its permission hook failed (exit $status)\" >&2; exit 2; fi",
        Hook::Codex.command()
    );
    // TOML's basic strings take JSON's escapes.
    let hooks = format!(
        "hooks.PreToolUse=[{{matcher=\"*\",hooks=[{{type=\"command\",command={},timeout={TIMEOUT_SECS}}}]}}]",
        json!(command)
    );
    let mut words: Vec<String> = [
        "--enable",
        "hooks",
        "--disable",
        "unified_exec_tty",
        "--dangerously-bypass-hook-trust",
        "-c",
    ]
    .map(String::from)
    .into();
    words.push(quote(&hooks));
    if !searches(permissions) {
        words.push("-c".to_owned());
        words.push(quote("web_search=\"disabled\""));
    }
    words
}

/// Whether the policy lets a web search run without asking, whatever it searches.
fn searches(permissions: &Permissions) -> bool {
    let search = ToolUse {
        tool: "WebSearch".to_owned(),
        input: json!({}),
    };
    permissions.decide(&search).decision == Decision::Allow
}

/// Why rules cannot hold on an MCP server named `name`, if they cannot.
pub(super) fn unhookable_mcp_name(name: &str) -> Option<&'static str> {
    name.contains('-').then_some(
        "an MCP server it gets (its `mcp` or its project's) has a `-` in its name, which Codex \
         writes as `_` in its tools' names, so rules naming the server would not hold: \
         rename it",
    )
}

/// Refuses a rule Codex's hook cannot hold, and `args` that would turn the hook off.
pub(super) fn check(role: &Role, permissions: &Permissions) -> Result<(), RoleError> {
    Executor::check_mcp_names(role, role.mcp.iter().map(String::as_str))?;
    if role.args.iter().any(|arg| turns_off(arg)) {
        return Err(RoleError::PermissionsNotEnforced {
            executor: Executor::Codex,
            why: "its `args` set Codex's hooks, `unified_exec_tty` or `web_search`, which \
                  Gatehouse sets to enforce them: drop those arguments",
        });
    }
    for (list, rules) in permissions.lists() {
        if list == List::Allow {
            if let Some(rule) = rules
                .iter()
                .find(|rule| searching(rule) && rule.pattern().is_some())
            {
                return Err(refused(list, rule, WEB_SEARCH));
            }
            continue;
        }
        for rule in rules {
            if let Some(why) = unenforced(rule, list) {
                return Err(refused(list, rule, why));
            }
        }
    }
    Ok(())
}

const WEB_SEARCH: &str = "Codex's web search runs at the model provider, where no hook sees \
                          it, so nobody can be asked and its query cannot be matched: allow \
                          `WebSearch` whole or leave it out (Gatehouse then turns the search off)";

fn refused(list: List, rule: &Rule, why: &str) -> RoleError {
    RoleError::PermissionRuleNotEnforced {
        executor: Executor::Codex,
        list: list.as_str(),
        rule: rule.as_str().to_owned(),
        why: why.to_owned(),
    }
}

/// Why a deny or ask rule cannot hold on Codex, if it cannot.
fn unenforced(rule: &Rule, list: List) -> Option<&'static str> {
    let tool = rule.tool()?;
    if rule.is_mcp() {
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '*';
        return (!tool.chars().all(plain)).then_some(
            "Codex writes MCP server and tool names with `_` for every other character \
             (`my-server` is `mcp__my_server__…`): write the rule as Codex names the tool",
        );
    }
    if searching(rule) {
        return (list == List::Ask || rule.pattern().is_some()).then_some(WEB_SEARCH);
    }
    (!CALLED.contains(&tool)).then_some(
        "Codex has no tool by that name (it reads, searches and fetches with its shell, a \
         `Bash` call): write the rule on the command, `Bash(curl*)`, or on `Read`/`Edit`",
    )
}

fn searching(rule: &Rule) -> bool {
    rule.tool() == Some("WebSearch")
}

/// Whether a role argument would loosen the hook: hooks, hook trust, the terminal
/// `write_stdin` types into, or the web search.
fn turns_off(arg: &str) -> bool {
    ["hook", "unified_exec", "web_search"]
        .iter()
        .any(|word| arg.contains(word))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check, flags};
    use crate::executor::Executor;
    use crate::permission::Permissions;
    use crate::role::{Role, RoleError};

    fn policy(value: serde_json::Value) -> Permissions {
        serde_json::from_value(value).expect("permissions")
    }

    fn role(permissions: &Permissions, args: &[&str]) -> Role {
        Role {
            permissions: Some(permissions.clone()),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            ..Role::new(Executor::Codex)
        }
    }

    #[test]
    fn the_hook_runs_the_shim_for_every_tool_and_web_search_follows_the_policy() {
        let open = policy(json!({"ask": ["Bash(git push*)"]}));
        let words = flags(&open).join(" ");
        assert!(
            words.contains("--enable hooks --disable unified_exec_tty"),
            "{words}"
        );
        assert!(words.contains("--dangerously-bypass-hook-trust"), "{words}");
        assert!(
            words.contains(r#"matcher=\"*\""#) || words.contains(r#"matcher="*""#),
            "{words}"
        );
        assert!(words.contains("hook codex"), "{words}");
        assert!(words.contains("timeout=172800"), "{words}");
        assert!(!words.contains("web_search"), "{words}");
        let closed = policy(json!({"allow": ["Bash"], "default": "deny"}));
        assert!(
            flags(&closed)
                .join(" ")
                .contains(r#"web_search="disabled""#)
        );
    }

    #[test]
    fn rules_codex_cannot_hold_are_refused() {
        let ok = policy(json!({
            "allow": ["WebSearch", "Glob"],
            "ask": ["Bash(git push*)", "mcp__*__write*", "Edit(src/*)", "Task"],
            "deny": ["Read(secrets/*)", "WebSearch", "Write"],
        }));
        assert_eq!(check(&role(&ok, &[]), &ok), Ok(()));
        for (value, rule) in [
            (json!({"deny": ["WebFetch"]}), "WebFetch"),
            (json!({"ask": ["Grep"]}), "Grep"),
            (json!({"ask": ["WebSearch"]}), "WebSearch"),
            (json!({"allow": ["WebSearch(rust*)"]}), "WebSearch(rust*)"),
            (json!({"deny": ["mcp__my-files"]}), "mcp__my-files"),
        ] {
            let permissions = policy(value);
            match check(&role(&permissions, &[]), &permissions) {
                Err(RoleError::PermissionRuleNotEnforced { rule: refused, .. }) => {
                    assert_eq!(refused, rule);
                }
                other => panic!("{rule}: {other:?}"),
            }
        }
        assert!(matches!(
            check(&role(&ok, &["--disable", "hooks"]), &ok),
            Err(RoleError::PermissionsNotEnforced { .. })
        ));
        let dashed = Role {
            mcp: vec!["my-files".to_owned()],
            ..role(&ok, &[])
        };
        assert!(matches!(
            check(&dashed, &ok),
            Err(RoleError::PermissionsNotEnforced { .. })
        ));
    }

    #[test]
    fn the_wrapped_shim_denies_whatever_goes_wrong() {
        let words = flags(&policy(json!({})));
        let setting = &words[words.iter().position(|w| w == "-c").expect("-c") + 1];
        // The shell gives the setting to Codex as one word; Codex reads its TOML.
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s' {setting}"))
            .output()
            .expect("sh");
        let setting = String::from_utf8(output.stdout).expect("utf-8");
        let start = setting.find("command=").expect("command") + "command=".len();
        let command: String = serde_json::Deserializer::from_str(&setting[start..])
            .into_iter()
            .next()
            .expect("a string")
            .expect("JSON's escapes");
        let dir = tempfile::tempdir().expect("dir");
        let run = |shim: Option<&str>, shell: &str| {
            let mut sh = std::process::Command::new(shell);
            sh.arg("-c").arg(&command).env_remove("GATEHOUSE_ACP");
            if let Some(shim) = shim {
                let path = dir.path().join("shim");
                std::fs::write(&path, format!("#!/bin/sh\n{shim}\n")).expect("shim");
                std::process::Command::new("chmod")
                    .arg("+x")
                    .arg(&path)
                    .status()
                    .expect("chmod");
                sh.env("GATEHOUSE_ACP", &path);
            }
            let output = sh.output().expect("run");
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        };
        for shell in ["sh", "bash"] {
            assert_eq!(run(Some("exit 0"), shell), (Some(0), String::new()));
            let (code, stderr) = run(Some("echo 'no: policy' >&2; exit 2"), shell);
            assert_eq!((code, stderr.trim()), (Some(2), "no: policy"));
            for broken in ["exit 1", "kill -9 $$", "exit 3"] {
                let (code, stderr) = run(Some(broken), shell);
                assert_eq!(code, Some(2), "{shell} {broken}");
                assert!(stderr.contains("Gatehouse denied the call"), "{stderr}");
            }
            let (code, stderr) = run(None, shell);
            assert_eq!(code, Some(2), "{shell}: {stderr}");
            assert!(stderr.contains("no gatehouse-acp"), "{stderr}");
        }
    }
}
