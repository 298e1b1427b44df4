//! `permissions` on a role: checked per executor, and handed to Claude Code as its own
//! settings with the prompt tool, or `--permission-prompts none` without one.

use gatehouse_agent::{Executor, Permissions, Role, RoleError, Tools, invocation};
use insta::assert_snapshot;
use serde_json::json;

const PROMPT: &str = "/in/.agent/prompt.md";

fn with(executor: Executor, permissions: serde_json::Value) -> Role {
    let permissions: Permissions = serde_json::from_value(permissions).expect("permissions");
    Role {
        permissions: Some(permissions),
        command: if matches!(executor, Executor::Acp) {
            vec!["gemini".to_owned(), "--acp".to_owned()]
        } else {
            Vec::new()
        },
        ..Role::new(executor)
    }
}

fn brief() -> serde_json::Value {
    json!({
        "allow": ["Read", "Edit", "Bash(cargo test*)"],
        "ask": ["Bash(git push*)", "mcp__*__write*"],
        "deny": ["WebFetch"],
        "default": "allow",
    })
}

#[test]
fn claude_code_gets_its_own_settings_and_the_prompt_tool() {
    let role = with(Executor::ClaudeCode, brief());
    assert_eq!(role.check(), Ok(()));
    let tools = Tools {
        permission_tool: Some("mcp__gatehouse__permission".to_owned()),
        ..Tools::none()
    };
    assert_snapshot!(invocation(&role, None, &tools, PROMPT, None), @r#"claude -p --output-format stream-json --verbose --permission-mode default --settings '{"permissions":{"allow":["Read","Edit","Bash(cargo test*)","Agent","AskUserQuestion","Bash","BashOutput","CronCreate","CronDelete","CronList","EnterPlanMode","EnterWorktree","ExitPlanMode","ExitWorktree","Glob","Grep","KillShell","LS","ListAgents","Monitor","MultiEdit","NotebookEdit","NotebookRead","ReportFindings","ScheduleWakeup","SendMessage","Skill","SlashCommand","Task","TaskStop","TodoWrite","ToolSearch","WebFetch","WebSearch","Workflow","Write"],"ask":["Bash(git push*)"],"deny":["WebFetch"]}}' --permission-prompt-tool mcp__gatehouse__permission < /in/.agent/prompt.md"#);
    let strict = with(
        Executor::ClaudeCode,
        json!({"allow": ["Read", "Edit(src/*)"], "deny": ["Bash(rm *)"], "default": "deny"}),
    );
    assert_snapshot!(invocation(&strict, None, &Tools::none(), PROMPT, None), @r#"claude -p --output-format stream-json --verbose --permission-mode default --settings '{"permissions":{"allow":["Read","Edit(//**/src/**)"],"ask":[],"deny":["Bash(rm *)"]}}' --permission-prompts none < /in/.agent/prompt.md"#);
}

#[test]
fn executors_that_cannot_enforce_the_rules_are_refused_saying_which_can() {
    assert_eq!(with(Executor::Acp, brief()).check(), Ok(()));
    for executor in [Executor::Pi, Executor::Aider, Executor::Command] {
        let error = with(executor, brief()).check().unwrap_err();
        assert!(
            matches!(error, RoleError::PermissionsNotEnforced { .. }),
            "{executor}: {error}"
        );
        let message = error.to_string();
        assert!(
            message.contains("\"acp\"") && message.contains("claude-code"),
            "{message}"
        );
    }
}

#[test]
fn an_acp_agent_in_a_mode_that_never_asks_is_refused() {
    let mut role = with(Executor::Acp, brief());
    role.args = vec!["--mode".to_owned(), "yolo".to_owned()];
    let message = role.check().unwrap_err().to_string();
    assert!(message.contains("without asking"), "{message}");
    role.args = vec!["--mode".to_owned(), "default".to_owned()];
    assert_eq!(role.check(), Ok(()));
}

#[test]
fn a_bad_rule_is_refused_naming_its_place() {
    let role = with(
        Executor::ClaudeCode,
        json!({"ask": ["Bash(git push*)", "Bash(git push"]}),
    );
    let message = role.check().unwrap_err().to_string();
    assert_eq!(
        message,
        "`permissions.ask[1]` \"Bash(git push\": unbalanced parenthesis: write `Tool` or \
         `Tool(pattern)`, with one `(` after the tool name and the `)` last"
    );
    let unknown = with(Executor::Acp, json!({"deny": ["Fetch"]}));
    assert!(
        unknown
            .check()
            .unwrap_err()
            .to_string()
            .contains("unknown tool `Fetch`")
    );
    let claude = with(
        Executor::ClaudeCode,
        json!({"deny": ["WebFetch(https://x.io/*)"]}),
    );
    assert!(matches!(
        claude.check(),
        Err(RoleError::PermissionRuleNotEnforced { .. })
    ));
}

#[test]
fn a_role_without_permissions_keeps_its_command_line() {
    let bare = Role::new(Executor::ClaudeCode);
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @"claude -p --output-format stream-json --verbose --permission-mode bypassPermissions < /in/.agent/prompt.md");
}

#[test]
fn the_acp_shim_gets_the_policy_as_a_file_the_command_line_writes() {
    let role = with(
        Executor::Acp,
        json!({"deny": ["Bash(rm *)"], "default": "ask"}),
    );
    assert_snapshot!(invocation(&role, None, &Tools::none(), PROMPT, None), @r#"mkdir -p "$HOME"/.gatehouse && printf '%s\n' '{"deny":["Bash(rm *)"],"default":"ask"}' > "$HOME"/.gatehouse/acp-permissions.json && exec "${GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}" --prompt-file /in/.agent/prompt.md --permissions "$HOME"/.gatehouse/acp-permissions.json -- gemini --acp"#);
}
