//! The native executors' command lines run through a real `sh` against a fake CLI that
//! prints what it was given, so the settings files they write are checked by the shell.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use gatehouse_agent::{Executor, ModelApi, Role, invocation};

/// Prints each argument as `[arg]`, then stdin.
const FAKE_CLI: &str =
    "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\nprintf 'stdin:'\ncat\n";

#[test]
fn pi_gets_a_models_file_naming_the_key_variable_and_the_gateway_address() {
    let dir = tempfile::tempdir().expect("scratch");
    let (bin, home) = (dir.path().join("bin"), dir.path().join("home"));
    fs::create_dir_all(&bin).expect("bin");
    fs::create_dir_all(&home).expect("home");
    fs::write(bin.join("pi"), FAKE_CLI).expect("fake pi");
    fs::set_permissions(bin.join("pi"), fs::Permissions::from_mode(0o755)).expect("chmod");
    let prompt = dir.path().join("prompt it's.md");
    let system = dir.path().join("system.md");
    fs::write(&prompt, "Fix $(it).\n").expect("prompt");
    fs::write(&system, "Be brief.\nNo \"quotes\".").expect("system");
    let role = Role {
        model: Some("claude's \"model\"".to_owned()),
        ..Role::new(Executor::Pi)
    };
    let line = invocation(
        &role,
        Some(ModelApi::Anthropic),
        prompt.to_str().expect("utf-8"),
        system.to_str(),
    );
    let output = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/gw x")
        .env("ANTHROPIC_API_KEY", "secret-token")
        .output()
        .expect("sh runs");
    assert!(output.status.success(), "{line}: {output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "[-p]\n[--mode]\n[json]\n[--provider]\n[gatehouse]\n[--model]\n[claude's \"model\"]\n\
         [--append-system-prompt]\n[Be brief.\nNo \"quotes\".]\nstdin:Fix $(it).\n"
    );
    let models = fs::read_to_string(home.join(".pi/agent/models.json")).expect("models.json");
    let models: serde_json::Value = serde_json::from_str(&models).expect("JSON");
    assert_eq!(
        models,
        serde_json::json!({"providers": {"gatehouse": {
            "api": "anthropic-messages",
            "apiKey": "ANTHROPIC_API_KEY",
            "baseUrl": "http://127.0.0.1:9/gw x",
            "models": [{"id": "claude's \"model\""}],
        }}})
    );
    assert!(!line.contains("secret-token"));
}

/// Prints `OPENAI_API_BASE`, then the message file it was given (`--message-file F`).
const FAKE_AIDER: &str = "#!/bin/sh\nprintf 'base:%s\\n' \"$OPENAI_API_BASE\"\n\
     while [ $# -gt 0 ]; do [ \"$1\" = --message-file ] && cat \"$2\"; \
     [ \"$1\" = --model ] && printf 'model:%s\\n' \"$2\"; shift; done\n";

#[test]
fn aider_reads_the_system_text_then_the_prompt_and_the_gateway_address() {
    let dir = tempfile::tempdir().expect("scratch");
    let (bin, home) = (dir.path().join("bin"), dir.path().join("home $x"));
    fs::create_dir_all(&bin).expect("bin");
    fs::create_dir_all(&home).expect("home");
    fs::write(bin.join("aider"), FAKE_AIDER).expect("fake aider");
    fs::set_permissions(bin.join("aider"), fs::Permissions::from_mode(0o755)).expect("chmod");
    let prompt = dir.path().join("prompt it's.md");
    let system = dir.path().join("system.md");
    fs::write(&prompt, "Fix $(it).\n").expect("prompt");
    fs::write(&system, "Be brief.\n").expect("system");
    let role = Role {
        model: Some("gpt's \"model\"".to_owned()),
        ..Role::new(Executor::Aider)
    };
    let line = invocation(
        &role,
        Some(ModelApi::OpenAi),
        prompt.to_str().expect("utf-8"),
        system.to_str(),
    );
    let output = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", &home)
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/gw x/v1")
        .output()
        .expect("sh runs");
    assert!(output.status.success(), "{line}: {output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "base:http://127.0.0.1:9/gw x/v1\nBe brief.\n\nFix $(it).\nmodel:openai/gpt's \"model\"\n"
    );
}
