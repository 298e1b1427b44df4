//! Command lines that hand MCP servers to each CLI that takes them (`[mcp.NAME]`, issue
//! 40): a stdio server with arguments and variables that need quoting, and a remote one the
//! sandbox reaches through the runner's tools endpoint with the attempt's token, both
//! expanded by the shell. Snapshots, so a change of flags is seen in review; without MCP
//! servers the lines are those of invocation*.rs, unchanged.

use std::collections::BTreeMap;

use gatehouse_agent::{
    Executor, McpDefinition, ModelApi, Role, Session, Tools, invocation, mcp_servers,
    turn_invocation,
};
use insta::assert_snapshot;

const PROMPT: &str = "/in/.agent/prompt.md";
const SYSTEM: &str = "/in/.agent/system.md";

/// `[mcp.docs]` (stdio, awkward words) and `[mcp.wiki]` (remote), as the runner resolves
/// them for a role naming `docs` and a project naming `wiki`.
fn tools() -> Tools {
    let defined = BTreeMap::from([
        (
            "docs".to_owned(),
            McpDefinition::Stdio {
                command: vec![
                    "docs-mcp".to_owned(),
                    "--stdio".to_owned(),
                    "it's $(rm -rf /)".to_owned(),
                ],
                env: BTreeMap::from([("DOCS_MODE".to_owned(), "read \"only\"".to_owned())]),
            },
        ),
        ("wiki".to_owned(), McpDefinition::Remote),
    ]);
    let mcp = mcp_servers(&["docs".to_owned()], &["wiki".to_owned()], &defined)
        .expect("both are defined");
    Tools {
        mcp,
        ..Tools::none()
    }
}

fn role(executor: Executor) -> Role {
    Role {
        model: Some("m".to_owned()),
        mcp: vec!["docs".to_owned()],
        ..Role::new(executor)
    }
}

fn line(executor: Executor, api: Option<ModelApi>) -> String {
    invocation(&role(executor), api, &tools(), PROMPT, None)
}

#[test]
fn claude_code() {
    assert_snapshot!(line(Executor::ClaudeCode, Some(ModelApi::Anthropic)), @r#"claude -p --output-format stream-json --verbose --model m --mcp-config "{\"mcpServers\":{\"docs\":{\"args\":[\"--stdio\",\"it's "'$(rm -rf /)"],"command":"docs-mcp","env":{"DOCS_MODE":"read '"\\\"only\\\"\"},\"type\":\"stdio\"},\"wiki\":{\"headers\":{\"Authorization\":\"Bearer ""${GATEHOUSE_TOOLS_TOKEN}"'"},"type":"http","url":"'"${GATEHOUSE_TOOLS_URL}"'/mcp/wiki"}}}' --strict-mcp-config --permission-mode bypassPermissions < /in/.agent/prompt.md"#);
    let session = Session {
        resume: Some("0b6b2f4e-1d8f-4a57-a3a1-3f0f5f7f2d11"),
        transcript_file: None,
    };
    let turn = turn_invocation(
        &role(Executor::ClaudeCode),
        None,
        &tools(),
        PROMPT,
        Some(SYSTEM),
        session,
    )
    .expect("a good id");
    assert_snapshot!(turn, @r#"claude -p --output-format stream-json --verbose --resume 0b6b2f4e-1d8f-4a57-a3a1-3f0f5f7f2d11 --model m --append-system-prompt "$(cat /in/.agent/system.md)" --mcp-config "{\"mcpServers\":{\"docs\":{\"args\":[\"--stdio\",\"it's "'$(rm -rf /)"],"command":"docs-mcp","env":{"DOCS_MODE":"read '"\\\"only\\\"\"},\"type\":\"stdio\"},\"wiki\":{\"headers\":{\"Authorization\":\"Bearer ""${GATEHOUSE_TOOLS_TOKEN}"'"},"type":"http","url":"'"${GATEHOUSE_TOOLS_URL}"'/mcp/wiki"}}}' --strict-mcp-config --permission-mode bypassPermissions < /in/.agent/prompt.md"#);
}

#[test]
fn codex() {
    assert_snapshot!(line(Executor::Codex, None), @r#"codex exec --json --model m --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c "mcp_servers.docs={command=\"docs-mcp\",args=[\"--stdio\",\"it's "'$(rm -rf /)"],env={"DOCS_MODE"="read '"\\\"only\\\"\"}}" -c 'mcp_servers.wiki={url="'"${GATEHOUSE_TOOLS_URL}"'/mcp/wiki",bearer_token_env_var="GATEHOUSE_TOOLS_TOKEN"}' - < /in/.agent/prompt.md"#);
}

#[test]
fn gemini() {
    assert_snapshot!(line(Executor::Gemini, Some(ModelApi::Gemini)), @r#"mkdir -p "$HOME"/.gemini && printf '%s\n' "{\"general\":{\"enableAutoUpdate\":false,\"enableAutoUpdateNotification\":false,\"maxAttempts\":4},\"mcpServers\":{\"docs\":{\"args\":[\"--stdio\",\"it's "'$(rm -rf /)"],"command":"docs-mcp","env":{"DOCS_MODE":"read '"\\\"only\\\"\"}},\"wiki\":{\"headers\":{\"Authorization\":\"Bearer ""${GATEHOUSE_TOOLS_TOKEN}"'"},"httpUrl":"'"${GATEHOUSE_TOOLS_URL}"'/mcp/wiki"}},"privacy":{"usageStatisticsEnabled":false},"security":{"auth":{"selectedType":"gemini-api-key"}},"telemetry":{"enabled":false}}' > "$HOME"/.gemini/settings.json && gemini --output-format stream-json --approval-mode yolo --skip-trust --model m < /in/.agent/prompt.md"#);
}

#[test]
fn copilot() {
    assert_snapshot!(line(Executor::Copilot, None), @r#"mkdir -p "$HOME/.gatehouse" && rm -f "$HOME/.gatehouse/copilot-usage.json" && copilot --output-format json --allow-all --no-ask-user --no-auto-update --disable-client-telemetry --model m --additional-mcp-config "{\"mcpServers\":{\"docs\":{\"args\":[\"--stdio\",\"it's "'$(rm -rf /)"],"command":"docs-mcp","env":{"DOCS_MODE":"read '"\\\"only\\\"\"},\"tools\":[\"*\"],\"type\":\"local\"},\"wiki\":{\"headers\":{\"Authorization\":\"Bearer ""${GATEHOUSE_TOOLS_TOKEN}"'"},"tools":["*"],"type":"http","url":"'"${GATEHOUSE_TOOLS_URL}"'/mcp/wiki"}}}' --usage-output-file "$HOME/.gatehouse/copilot-usage.json" < /in/.agent/prompt.md; status=$?; if [ -s "$HOME/.gatehouse/copilot-usage.json" ]; then printf '{"type":"gatehouse.copilot_usage","data":'; tr -d '\n\r' < "$HOME/.gatehouse/copilot-usage.json"; printf '}\n'; fi; exit $status"#);
}

#[test]
fn opencode_and_kilo() {
    assert_snapshot!(line(Executor::Opencode, None), @r#"OPENCODE_CONFIG_CONTENT="{\"autoupdate\":false,\"mcp\":{\"docs\":{\"command\":[\"docs-mcp\",\"--stdio\",\"it's "'$(rm -rf /)"],"environment":{"DOCS_MODE":"read '"\\\"only\\\"\"},\"type\":\"local\"},\"wiki\":{\"headers\":{\"Authorization\":\"Bearer {env:GATEHOUSE_TOOLS_TOKEN}\"},\"type\":\"remote\",\"url\":\"{env:GATEHOUSE_TOOLS_URL}/mcp/wiki\"}},\"share\":\"disabled\",\"snapshot\":false}" opencode run --format json --pure --auto --title Gatehouse --model m < /in/.agent/prompt.md"#);
    assert_snapshot!(line(Executor::Kilo, None), @r#"KILO_CONFIG_CONTENT="{\"autoupdate\":false,\"mcp\":{\"docs\":{\"command\":[\"docs-mcp\",\"--stdio\",\"it's "'$(rm -rf /)"],"environment":{"DOCS_MODE":"read '"\\\"only\\\"\"},\"type\":\"local\"},\"wiki\":{\"headers\":{\"Authorization\":\"Bearer {env:GATEHOUSE_TOOLS_TOKEN}\"},\"type\":\"remote\",\"url\":\"{env:GATEHOUSE_TOOLS_URL}/mcp/wiki\"}},\"share\":\"disabled\",\"snapshot\":false}" kilo run --format json --pure --auto --title Gatehouse --model m < /in/.agent/prompt.md"#);
}

#[test]
fn acp() {
    let role = Role {
        command: vec!["goose".to_owned(), "acp".to_owned()],
        ..role(Executor::Acp)
    };
    assert_snapshot!(invocation(&role, None, &tools(), PROMPT, None), @r#"exec "${GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}" --prompt-file /in/.agent/prompt.md --mcp "[{\"args\":[\"--stdio\",\"it's "'$(rm -rf /)"],"command":"docs-mcp","env":[{"name":"DOCS_MODE","value":"read '"\\\"only\\\"\"}],\"name\":\"docs\"},{\"headers\":[{\"name\":\"Authorization\",\"value\":\"Bearer ""${GATEHOUSE_TOOLS_TOKEN}"'"}],"name":"wiki","type":"http","url":"'"${GATEHOUSE_TOOLS_URL}"'/mcp/wiki"}]' -- goose acp"#);
}

/// The arguments `line` gives the program `program` when a real `sh` runs it with the
/// runner's tools address and token set: a fake program prints them one a line.
#[cfg(unix)]
fn arguments(line: &str, program: &str) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("scratch");
    let fake = dir.path().join(program);
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n",
    )
    .expect("fake");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(dir.path().join("prompt.md"), "hi").expect("prompt");
    let line = line.replace(PROMPT, &dir.path().join("prompt.md").display().to_string());
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .env("GATEHOUSE_TOOLS_URL", "http://127.0.0.1:8720")
        .env("GATEHOUSE_TOOLS_TOKEN", "gh-tools-1")
        .env("GATEHOUSE_ACP", &fake)
        .output()
        .expect("sh");
    assert!(out.status.success(), "{line}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The argument after `option`, as JSON.
#[cfg(unix)]
fn json_after(arguments: &[String], option: &str) -> serde_json::Value {
    let at = arguments
        .iter()
        .position(|a| a == option)
        .unwrap_or_else(|| panic!("{option} in {arguments:?}"));
    serde_json::from_str(&arguments[at + 1]).expect("JSON")
}

#[cfg(unix)]
#[test]
fn the_shell_hands_each_cli_the_servers_with_the_address_and_token_filled_in() {
    use serde_json::json;
    let docs = json!({"type": "stdio", "command": "docs-mcp", "args": ["--stdio", "it's $(rm -rf /)"], "env": {"DOCS_MODE": "read \"only\""}});
    let claude = arguments(&line(Executor::ClaudeCode, None), "claude");
    assert_eq!(
        json_after(&claude, "--mcp-config"),
        json!({"mcpServers": {
            "docs": docs,
            "wiki": {"type": "http", "url": "http://127.0.0.1:8720/mcp/wiki", "headers": {"Authorization": "Bearer gh-tools-1"}},
        }})
    );
    let codex = arguments(&line(Executor::Codex, None), "codex");
    let settings: Vec<&String> = codex
        .iter()
        .filter(|a| a.starts_with("mcp_servers."))
        .collect();
    assert_eq!(
        settings,
        [
            r#"mcp_servers.docs={command="docs-mcp",args=["--stdio","it's $(rm -rf /)"],env={"DOCS_MODE"="read \"only\""}}"#,
            r#"mcp_servers.wiki={url="http://127.0.0.1:8720/mcp/wiki",bearer_token_env_var="GATEHOUSE_TOOLS_TOKEN"}"#,
        ]
    );
    let acp = Role {
        command: vec!["goose".to_owned(), "acp".to_owned()],
        ..role(Executor::Acp)
    };
    let shim = arguments(&invocation(&acp, None, &tools(), PROMPT, None), "shim");
    assert_eq!(
        json_after(&shim, "--mcp"),
        json!([
            {"name": "docs", "command": "docs-mcp", "args": ["--stdio", "it's $(rm -rf /)"], "env": [{"name": "DOCS_MODE", "value": "read \"only\""}]},
            {"type": "http", "name": "wiki", "url": "http://127.0.0.1:8720/mcp/wiki", "headers": [{"name": "Authorization", "value": "Bearer gh-tools-1"}]},
        ])
    );
}

#[test]
fn without_servers_nothing_is_added() {
    for executor in [
        Executor::ClaudeCode,
        Executor::Codex,
        Executor::Gemini,
        Executor::Copilot,
        Executor::Opencode,
        Executor::Kilo,
    ] {
        let line = invocation(&Role::new(executor), None, &Tools::none(), PROMPT, None);
        assert!(!line.contains("mcp"), "{executor}: {line}");
    }
}
