use gatehouse_agent::{Executor, Role, invocation};
use insta::assert_snapshot;

/// Where the runner writes the files, as the sandbox sees them.
const PROMPT: &str = "/in/.agent/prompt.md";
const SYSTEM: &str = "/in/.agent/system.md";
/// A path a user's workspace layout could produce: spaces and both kinds of quote.
const AWKWARD: &str = "/in/.agent/it's \"the\" prompt $HOME.md";

fn role(executor: Executor) -> Role {
    Role::new(executor)
}

#[test]
fn claude_code() {
    let bare = role(Executor::ClaudeCode);
    assert_snapshot!(invocation(&bare, PROMPT, None), @"claude -p --output-format stream-json --verbose --permission-mode bypassPermissions < /in/.agent/prompt.md");

    let full = Role {
        model: Some("claude-sonnet-4-5".to_owned()),
        args: vec![
            "--max-turns".to_owned(),
            "40".to_owned(),
            "--add-dir".to_owned(),
            "/in/docs and notes".to_owned(),
        ],
        ..role(Executor::ClaudeCode)
    };
    assert_snapshot!(invocation(&full, PROMPT, Some(SYSTEM)), @r#"claude -p --output-format stream-json --verbose --model claude-sonnet-4-5 --append-system-prompt "$(cat /in/.agent/system.md)" --permission-mode bypassPermissions --max-turns 40 --add-dir '/in/docs and notes' < /in/.agent/prompt.md"#);
    assert_snapshot!(invocation(&full, AWKWARD, Some(AWKWARD)), @r#"claude -p --output-format stream-json --verbose --model claude-sonnet-4-5 --append-system-prompt "$(cat "/in/.agent/it's \"the\" prompt "'$HOME.md')" --permission-mode bypassPermissions --max-turns 40 --add-dir '/in/docs and notes' < "/in/.agent/it's \"the\" prompt "'$HOME.md'"#);
}

#[test]
fn codex() {
    let bare = role(Executor::Codex);
    assert_snapshot!(invocation(&bare, PROMPT, None), @"codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox - < /in/.agent/prompt.md");

    let full = Role {
        model: Some("gpt-5-codex".to_owned()),
        args: vec![
            "-c".to_owned(),
            "model_reasoning_effort=\"high\"".to_owned(),
        ],
        ..role(Executor::Codex)
    };
    assert_snapshot!(invocation(&full, PROMPT, Some(SYSTEM)), @r#"{ cat /in/.agent/system.md; printf '\n\n'; cat /in/.agent/prompt.md; } | codex exec --json --model gpt-5-codex --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c 'model_reasoning_effort="high"' -"#);
    assert_snapshot!(invocation(&full, AWKWARD, Some(AWKWARD)), @r#"{ cat "/in/.agent/it's \"the\" prompt "'$HOME.md'; printf '\n\n'; cat "/in/.agent/it's \"the\" prompt "'$HOME.md'; } | codex exec --json --model gpt-5-codex --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c 'model_reasoning_effort="high"' -"#);
}

#[test]
fn command() {
    let role = Role {
        model: Some("my model".to_owned()),
        command: [
            "my-agent",
            "--prompt={prompt_file}",
            "--system",
            "{system_file}",
            "--model",
            "{model}",
            r#"{"effort":"high"}"#,
            "$(rm -rf /)",
        ]
        .map(String::from)
        .into(),
        ..role(Executor::Command)
    };
    assert_snapshot!(invocation(&role, PROMPT, Some(SYSTEM)), @r#"my-agent '--prompt=/in/.agent/prompt.md' --system /in/.agent/system.md --model 'my model' '{"effort":"high"}' '$(rm -rf /)'"#);
    assert_snapshot!(invocation(&role, AWKWARD, None), @r#"my-agent "--prompt=/in/.agent/it's \"the\" prompt "'$HOME.md' --system '' --model 'my model' '{"effort":"high"}' '$(rm -rf /)'"#);
}
