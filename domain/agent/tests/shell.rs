//! The invocations run through a real `sh` against fake CLIs that print what they were given,
//! so the quoting is checked by the shell itself, not by reading it.
#![cfg(unix)]

use gatehouse_agent::Tools;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use gatehouse_agent::{Executor, ModelApi, Role, Session, invocation, turn_invocation};

/// Prints each argument as `[arg]`, then stdin.
const FAKE_CLI: &str =
    "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\nprintf 'stdin:'\ncat\n";

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "gatehouse-agent-shell-{test}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("bin")).expect("scratch dir");
        for cli in ["claude", "codex", "gemini", "pi", "my-agent"] {
            let path = dir.join("bin").join(cli);
            fs::write(&path, FAKE_CLI).expect("fake cli");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        Self(dir)
    }

    /// Writes a file whose name has spaces, both quotes and a `$`, and returns its path.
    fn file(&self, stem: &str, text: &str) -> String {
        let path = self.0.join(format!("{stem} it's \"q\" $HOME.md"));
        fs::write(&path, text).expect("input file");
        path.to_str().expect("utf-8 path").to_owned()
    }

    /// Installs `script` as the fake CLI `name`, in place of the one that prints its input.
    fn install(&self, name: &str, script: &str) {
        let path = self.0.join("bin").join(name);
        fs::write(&path, script).expect("fake cli");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// Runs `command`, which must succeed: its stdout.
    fn run(&self, command: &str) -> String {
        let (code, stdout) = self.run_at_home(command, &[]);
        assert_eq!(code, Some(0), "{command}: {stdout}");
        stdout
    }

    /// The scratch's `home`, `$HOME` of [`Scratch::run_at_home`].
    fn home(&self) -> PathBuf {
        self.0.join("home")
    }
}

impl Scratch {
    /// Runs `command` with `$HOME` the scratch's `home` and `vars` set: its exit code and
    /// stdout.
    fn run_at_home(&self, command: &str, vars: &[(&str, &str)]) -> (Option<i32>, String) {
        let path = format!(
            "{}:{}",
            self.0.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let output = Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("PATH", path)
            .env("HOME", self.home())
            .envs(vars.iter().copied())
            .current_dir(Path::new(&self.0))
            .output()
            .expect("sh runs");
        (
            output.status.code(),
            String::from_utf8(output.stdout).expect("utf-8 output"),
        )
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A session id as Claude Code and Codex print them.
const SESSION: &str = "40e7b02d-9a3c-4b5e-8f1a-2c6d7e8f9a0b";

fn role(executor: Executor) -> Role {
    Role {
        model: Some("the model".to_owned()),
        args: vec!["--extra".to_owned(), "a 'b' \"c\"".to_owned()],
        ..Role::new(executor)
    }
}

#[test]
fn claude_code_gets_the_system_text_as_an_argument_and_the_prompt_on_stdin() {
    let scratch = Scratch::new("claude");
    let prompt = scratch.file("prompt", "Fix `it` in $(pwd).\n");
    let system = scratch.file("system", "Be brief.\n\nRules:\n- Don't push.");
    let output = scratch.run(&invocation(
        &role(Executor::ClaudeCode),
        None,
        &Tools::none(),
        &prompt,
        Some(&system),
    ));
    assert_eq!(
        output,
        "[-p]\n[--output-format]\n[stream-json]\n[--verbose]\n[--model]\n[the model]\n[--append-system-prompt]\n\
         [Be brief.\n\nRules:\n- Don't push.]\n[--permission-mode]\n[bypassPermissions]\n\
         [--extra]\n[a 'b' \"c\"]\nstdin:Fix `it` in $(pwd).\n"
    );
}

#[test]
fn codex_reads_the_system_text_then_the_prompt_from_stdin() {
    let scratch = Scratch::new("codex");
    let prompt = scratch.file("prompt", "Fix it.\n");
    let system = scratch.file("system", "Be brief.");
    let output = scratch.run(&invocation(
        &role(Executor::Codex),
        None,
        &Tools::none(),
        &prompt,
        Some(&system),
    ));
    assert_eq!(
        output,
        "[exec]\n[--json]\n[--model]\n[the model]\n[--skip-git-repo-check]\n\
         [--dangerously-bypass-approvals-and-sandbox]\n[--extra]\n[a 'b' \"c\"]\n[-]\n\
         stdin:Be brief.\n\nFix it.\n"
    );
    let without_system = scratch.run(&invocation(
        &role(Executor::Codex),
        None,
        &Tools::none(),
        &prompt,
        None,
    ));
    assert!(
        without_system.ends_with("[-]\nstdin:Fix it.\n"),
        "{without_system}"
    );
}

#[test]
fn command_gets_its_placeholders_filled_as_single_arguments() {
    let scratch = Scratch::new("command");
    let prompt = scratch.file("prompt", "");
    let system = scratch.file("system", "");
    let role = Role {
        command: [
            "my-agent",
            "--prompt={prompt_file}",
            "{system_file}",
            "{model}",
            "$(echo not run)",
        ]
        .map(String::from)
        .into(),
        args: Vec::new(),
        ..role(Executor::Command)
    };
    let output = scratch.run(&invocation(
        &role,
        None,
        &Tools::none(),
        &prompt,
        Some(&system),
    ));
    assert_eq!(
        output,
        format!("[--prompt={prompt}]\n[{system}]\n[the model]\n[$(echo not run)]\nstdin:")
    );
}

#[test]
fn claude_code_turn_resumes_the_session_with_the_system_text_and_the_prompt_on_stdin() {
    let scratch = Scratch::new("claude-turn");
    let prompt = scratch.file("prompt", "And the tests?\n");
    let system = scratch.file("system", "Be brief.");
    let session = Session {
        resume: Some(SESSION),
        transcript_file: Some("/unused"),
    };
    let command = turn_invocation(
        &role(Executor::ClaudeCode),
        None,
        &Tools::none(),
        &prompt,
        Some(&system),
        session,
    )
    .expect("a valid session id");
    assert_eq!(
        scratch.run(&command),
        format!(
            "[-p]\n[--output-format]\n[stream-json]\n[--verbose]\n[--resume]\n[{SESSION}]\n\
             [--model]\n[the model]\n[--append-system-prompt]\n[Be brief.]\n\
             [--permission-mode]\n[bypassPermissions]\n[--extra]\n[a 'b' \"c\"]\n\
             stdin:And the tests?\n"
        )
    );
}

#[test]
fn codex_turn_resumes_after_the_exec_options_with_only_the_prompt_on_stdin() {
    let scratch = Scratch::new("codex-turn");
    let prompt = scratch.file("prompt", "And the tests?\n");
    let system = scratch.file("system", "Be brief.");
    let session = Session {
        resume: Some(SESSION),
        transcript_file: None,
    };
    let command = turn_invocation(
        &role(Executor::Codex),
        None,
        &Tools::none(),
        &prompt,
        Some(&system),
        session,
    )
    .expect("a valid session id");
    assert_eq!(
        scratch.run(&command),
        format!(
            "[exec]\n[--json]\n[--model]\n[the model]\n[--skip-git-repo-check]\n\
             [--dangerously-bypass-approvals-and-sandbox]\n[--extra]\n[a 'b' \"c\"]\n\
             [resume]\n[{SESSION}]\n[-]\nstdin:And the tests?\n"
        )
    );
}

#[test]
fn command_turn_gets_the_transcript_file_as_one_argument() {
    let scratch = Scratch::new("command-turn");
    let prompt = scratch.file("prompt", "");
    let transcript = scratch.file("transcript", "ana: hi\n");
    let role = Role {
        command: [
            "my-agent",
            "--transcript={transcript_file}",
            "{transcript_file}",
            "{prompt_file}",
        ]
        .map(String::from)
        .into(),
        args: Vec::new(),
        ..role(Executor::Command)
    };
    let session = Session {
        resume: Some(SESSION),
        transcript_file: Some(&transcript),
    };
    let command = turn_invocation(&role, None, &Tools::none(), &prompt, None, session)
        .expect("a valid session id");
    assert_eq!(
        scratch.run(&command),
        format!("[--transcript={transcript}]\n[{transcript}]\n[{prompt}]\nstdin:")
    );
    // A node has no conversation: the placeholder is an empty argument, not a missing one.
    assert_eq!(
        scratch.run(&invocation(&role, None, &Tools::none(), &prompt, None)),
        format!("[--transcript=]\n[]\n[{prompt}]\nstdin:")
    );
}

#[test]
fn gemini_gets_its_settings_file_and_the_system_text_then_the_prompt_on_stdin() {
    let scratch = Scratch::new("gemini");
    let prompt = scratch.file("prompt", "Fix it.\n");
    let system = scratch.file("system", "Be brief.");
    let command = invocation(
        &role(Executor::Gemini),
        Some(ModelApi::Gemini),
        &Tools::none(),
        &prompt,
        Some(&system),
    );
    let (code, output) = scratch.run_at_home(&command, &[]);
    assert_eq!(code, Some(0), "{command}");
    assert_eq!(
        output,
        "[--output-format]\n[stream-json]\n[--approval-mode]\n[yolo]\n[--skip-trust]\n\
         [--model]\n[the model]\n[--extra]\n[a 'b' \"c\"]\nstdin:Be brief.\n\nFix it.\n"
    );
    let settings =
        fs::read_to_string(scratch.0.join("home/.gemini/settings.json")).expect("settings");
    let settings: serde_json::Value = serde_json::from_str(&settings).expect("JSON settings");
    assert_eq!(
        settings["security"]["auth"]["selectedType"],
        "gemini-api-key"
    );
    assert_eq!(settings["privacy"]["usageStatisticsEnabled"], false);
    assert_eq!(settings["general"]["maxAttempts"], 4);
    // Rewritten every call: without the gateway no method is chosen.
    let own = invocation(&role(Executor::Gemini), None, &Tools::none(), &prompt, None);
    scratch.run_at_home(&own, &[]);
    let settings =
        fs::read_to_string(scratch.0.join("home/.gemini/settings.json")).expect("settings");
    assert!(!settings.contains("selectedType"), "{settings}");
}

/// Prints its environment's provider variables and stdin, writes a usage file where
/// `--usage-output-file` says (pretty-printed, counting the calls so far), and exits 3.
const FAKE_COPILOT: &str = "#!/bin/sh\n\
    printf '[%s %s %s]\\n' \"$COPILOT_PROVIDER_TYPE\" \"$COPILOT_PROVIDER_BASE_URL\" \"$COPILOT_PROVIDER_API_KEY\"\n\
    printf 'stdin:'; cat\n\
    while [ $# -gt 0 ]; do [ \"$1\" = --usage-output-file ] && file=$2; shift; done\n\
    n=$(cat \"$HOME/calls\" 2>/dev/null || echo 0); n=$((n + 10)); echo $n > \"$HOME/calls\"\n\
    printf '{\\n  \"modelMetrics\": {\\n    \"m\": {\"usage\": {\"inputTokens\": %s}}\\n  }\\n}\\n' $n > \"$file\"\n\
    exit 3\n";

#[test]
fn copilot_reads_the_gateway_at_run_time_and_its_usage_follows_its_output() {
    let scratch = Scratch::new("copilot");
    let cli = scratch.0.join("bin/copilot");
    fs::write(&cli, FAKE_COPILOT).expect("fake copilot");
    fs::set_permissions(&cli, fs::Permissions::from_mode(0o755)).expect("chmod");
    let prompt = scratch.file("prompt", "Fix it.\n");
    let system = scratch.file("system", "Be brief.");
    let vars = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("OPENAI_API_KEY", "it's $(token)"),
    ];
    let role = role(Executor::Copilot);
    let first = invocation(
        &role,
        Some(ModelApi::OpenAi),
        &Tools::none(),
        &prompt,
        Some(&system),
    );
    let (code, output) = scratch.run_at_home(&first, &vars);
    // Copilot's exit code is the command line's, after the usage line.
    assert_eq!(code, Some(3), "{first}");
    assert_eq!(
        output,
        "[openai http://127.0.0.1:9/v1 it's $(token)]\nstdin:Be brief.\n\nFix it.\n\
         {\"type\":\"gatehouse.copilot_usage\",\"data\":{  \"modelMetrics\": {    \"m\": {\"usage\": {\"inputTokens\": 10}}  }}}\n"
    );
    let session = Session {
        resume: Some(SESSION),
        transcript_file: None,
    };
    let turn = turn_invocation(
        &role,
        Some(ModelApi::OpenAi),
        &Tools::none(),
        &prompt,
        Some(&system),
        session,
    )
    .expect("a valid session id");
    let (code, output) = scratch.run_at_home(&turn, &vars);
    assert_eq!(code, Some(3));
    // The previous call's file, then this one's: the trace takes the difference.
    assert!(
        output.ends_with(
            "stdin:Fix it.\n\
             {\"type\":\"gatehouse.copilot_usage_before\",\"data\":{  \"modelMetrics\": {    \"m\": {\"usage\": {\"inputTokens\": 10}}  }}}\n\
             {\"type\":\"gatehouse.copilot_usage\",\"data\":{  \"modelMetrics\": {    \"m\": {\"usage\": {\"inputTokens\": 20}}  }}}\n"
        ),
        "{output}"
    );
    // A copilot that never starts prints no usage line and keeps its failure.
    fs::remove_file(&cli).expect("no copilot");
    let (code, output) = scratch.run_at_home(&first, &vars);
    assert_eq!((code, output.as_str()), (Some(127), ""));
}

#[test]
fn pi_gets_a_models_file_naming_the_key_variable_and_the_gateway_address() {
    let scratch = Scratch::new("pi-models");
    let prompt = scratch.file("prompt", "Fix $(it).\n");
    let system = scratch.file("system", "Be brief.\nNo \"quotes\".");
    let role = Role {
        model: Some("claude's \"model\"".to_owned()),
        ..Role::new(Executor::Pi)
    };
    let line = invocation(
        &role,
        Some(ModelApi::Anthropic),
        &Tools::none(),
        &prompt,
        Some(&system),
    );
    let (code, stdout) = scratch.run_at_home(
        &line,
        &[
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/gw x"),
            ("ANTHROPIC_API_KEY", "secret-token"),
        ],
    );
    assert_eq!(code, Some(0), "{line}: {stdout}");
    assert_eq!(
        stdout,
        "[-p]\n[--mode]\n[json]\n[--provider]\n[gatehouse]\n[--model]\n[claude's \"model\"]\n\
         [--append-system-prompt]\n[Be brief.\nNo \"quotes\".]\nstdin:Fix $(it).\n"
    );
    let models =
        fs::read_to_string(scratch.home().join(".pi/agent/models.json")).expect("models.json");
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
    let scratch = Scratch::new("aider-message");
    scratch.install("aider", FAKE_AIDER);
    // A home whose path the shell would split or expand unquoted.
    let home = scratch.0.join("home $x");
    fs::create_dir_all(&home).expect("home");
    let prompt = scratch.file("prompt", "Fix $(it).\n");
    let system = scratch.file("system", "Be brief.\n");
    let role = Role {
        model: Some("gpt's \"model\"".to_owned()),
        ..Role::new(Executor::Aider)
    };
    let line = invocation(
        &role,
        Some(ModelApi::OpenAi),
        &Tools::none(),
        &prompt,
        Some(&system),
    );
    let (code, stdout) = scratch.run_at_home(
        &line,
        &[
            ("HOME", home.to_str().expect("utf-8")),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/gw x/v1"),
        ],
    );
    assert_eq!(code, Some(0), "{line}: {stdout}");
    assert_eq!(
        stdout,
        "base:http://127.0.0.1:9/gw x/v1\nBe brief.\n\nFix $(it).\nmodel:openai/gpt's \"model\"\n"
    );
}
