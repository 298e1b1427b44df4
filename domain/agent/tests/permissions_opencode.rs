//! `permissions` for OpenCode and Kilo: the command line writes Gatehouse's plugin into the
//! CLI's configuration folder, keeps every tool denied until the plugin loads, and runs the
//! CLI without `--pure` and without the workspace's configuration. The real CLIs are run
//! with it in tests/tests/agent_permissions/{opencode,kilo}.rs.

use std::path::Path;
use std::process::Command;

use gatehouse_agent::{Executor, McpServer, McpTransport, Permissions, Role, Tools, invocation};
use serde_json::{Value, json};

const PROMPT: &str = "/in/.agent/prompt.md";

fn role(executor: Executor) -> Role {
    let permissions: Permissions =
        serde_json::from_value(json!({"ask": ["Bash(git push*)"]})).expect("permissions");
    Role {
        permissions: Some(permissions),
        ..Role::new(executor)
    }
}

fn tools() -> Tools {
    Tools {
        mcp: vec![McpServer {
            name: "github".to_owned(),
            transport: McpTransport::Http {
                url: "http://runner/mcp".to_owned(),
                token_env: None,
            },
        }],
        ..Tools::none()
    }
}

/// Runs `line` under `sh` in `home`, `program` on the PATH being a script that prints
/// its arguments and configuration; returns what it printed.
fn run(line: &str, program: &str, config_variable: &str, home: &Path) -> String {
    let bin = home.join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let script = bin.join(program);
    std::fs::write(
        &script,
        format!("#!/bin/sh\nprintf '%s\\n' \"$*\" \"${config_variable}\" \"$OPENCODE_DISABLE_PROJECT_CONFIG$KILO_DISABLE_PROJECT_CONFIG\"\n"),
    )
    .expect("script");
    Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");
    let line = line.replace(PROMPT, "/dev/null");
    let output = Command::new("/bin/sh")
        .args(["-c", &line])
        .env("HOME", home)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .expect("sh");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn check(executor: Executor, program: &str, dir: &str, package: &str, variable: &str) {
    let role = role(executor);
    assert_eq!(role.check(), Ok(()));
    assert!(Executor::needs_shim(&role));
    let line = invocation(&role, None, &tools(), PROMPT, None);
    let home = tempfile::tempdir().expect("home");
    let stale = home.path().join(dir).join("plugin");
    std::fs::create_dir_all(&stale).expect("stale");
    std::fs::write(
        stale.join("mine.js"),
        "export const Mine = async () => ({});",
    )
    .expect("mine");
    let printed = run(&line, program, variable, home.path());
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        lines[0], "run --format json --auto --title Gatehouse",
        "no --pure"
    );
    let config: Value = serde_json::from_str(lines[1]).expect("config");
    assert_eq!(config["permission"], json!({"*": "deny"}));
    assert_eq!(lines[2], "true", "the workspace's configuration is off");
    let folder = home.path().join(dir);
    assert!(folder.join("node_modules").is_dir());
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("package-lock.json")).expect("lock"),
    )
    .expect("lock json");
    assert_eq!(lock["packages"][""]["dependencies"][package], "*");
    let plugins: Vec<_> = std::fs::read_dir(folder.join("plugins"))
        .expect("plugins")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(plugins, ["gatehouse-permissions.js"]);
    let plugin =
        std::fs::read_to_string(folder.join("plugins/gatehouse-permissions.js")).expect("plugin");
    assert!(
        plugin.contains(&format!(
            r#"const COMMAND = "\"${{GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}}\" hook {program}";"#
        )),
        "{plugin}"
    );
    assert!(
        plugin.contains(r#"const MCP_SERVERS = ["github"];"#),
        "{plugin}"
    );
    assert!(!plugin.contains("__GATEHOUSE_"), "{plugin}");
    assert!(!stale.exists(), "only Gatehouse's plugin is loaded");
}

#[test]
fn opencode_gets_the_plugin_and_no_tool_until_it_loads() {
    check(
        Executor::Opencode,
        "opencode",
        ".config/opencode",
        "@opencode-ai/plugin",
        "OPENCODE_CONFIG_CONTENT",
    );
}

#[test]
fn kilo_gets_the_plugin_in_its_own_folder() {
    check(
        Executor::Kilo,
        "kilo",
        ".config/kilo",
        "@kilocode/plugin",
        "KILO_CONFIG_CONTENT",
    );
}

#[test]
fn without_permissions_the_command_line_is_as_before() {
    let line = invocation(&Role::new(Executor::Opencode), None, &tools(), PROMPT, None);
    assert!(line.contains(" --pure "), "{line}");
    assert!(!line.contains("plugins"), "{line}");
    assert!(!Executor::needs_shim(&Role::new(Executor::Opencode)));
}
