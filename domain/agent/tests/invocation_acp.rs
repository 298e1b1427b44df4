//! Command lines and role checks of executor `acp`: the shim, its options, the agent's argv.

use gatehouse_agent::Tools;
use gatehouse_agent::{Executor, Role, RoleError, Session, invocation, turn_invocation};
use insta::assert_snapshot;

const PROMPT: &str = "/in/.agent/prompt.md";
const SYSTEM: &str = "/in/.agent/system.md";
const TRANSCRIPT: &str = "/in/.agent/transcript.jsonl";
const AWKWARD: &str = "/in/.agent/it's \"the\" prompt $HOME.md";

fn agent(argv: &[&str]) -> Role {
    Role {
        command: argv.iter().map(|word| (*word).to_owned()).collect(),
        ..Role::new(Executor::Acp)
    }
}

#[test]
fn the_shim_runs_the_agents_argv_after_its_own_options() {
    let opencode = agent(&["opencode", "acp", "--pure"]);
    assert_snapshot!(invocation(&opencode, None, &Tools::none(), PROMPT, None), @r#"exec "${GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}" --prompt-file /in/.agent/prompt.md -- opencode acp --pure"#);

    let gemini = Role {
        model: Some("gemini-2.5-flash".to_owned()),
        args: vec!["--mode".to_owned(), "yolo".to_owned()],
        ..agent(&["gemini", "--acp", "-m", "{model}", "$(rm -rf /)"])
    };
    assert_snapshot!(invocation(&gemini, None, &Tools::none(), AWKWARD, Some(SYSTEM)), @r#"exec "${GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}" --prompt-file "/in/.agent/it's \"the\" prompt "'$HOME.md' --system-file /in/.agent/system.md --mode yolo -- gemini --acp -m gemini-2.5-flash '$(rm -rf /)'"#);
}

#[test]
fn a_turn_resumes_the_session_with_the_transcript_to_fall_back_on() {
    let role = agent(&["gemini", "--acp"]);
    let session = Session {
        resume: Some("ses_db1bf70dfffe5q5c2rCyKkGgWn"),
        transcript_file: Some(TRANSCRIPT),
    };
    assert_snapshot!(turn_invocation(&role, None, &Tools::none(), PROMPT, Some(SYSTEM), session).unwrap(), @r#"exec "${GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}" --prompt-file /in/.agent/prompt.md --system-file /in/.agent/system.md --resume ses_db1bf70dfffe5q5c2rCyKkGgWn --transcript-file /in/.agent/transcript.jsonl -- gemini --acp"#);
    // The first turn has a transcript too, but nothing to resume.
    let first = Session {
        resume: None,
        transcript_file: Some(TRANSCRIPT),
    };
    assert_eq!(
        turn_invocation(&role, None, &Tools::none(), PROMPT, None, first).unwrap(),
        invocation(&role, None, &Tools::none(), PROMPT, None)
    );
    assert!(Executor::Acp.reads_transcript());
    assert_eq!(Executor::Acp.session_files(), None);
}

#[test]
fn the_shim_and_the_agent_get_what_the_shell_expands() {
    let dir = tempfile::tempdir().unwrap();
    let shim = dir.path().join("shim");
    std::fs::write(
        &shim,
        "#!/bin/sh\nfor word in \"$@\"; do echo \"[$word]\"; done\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&shim)
        .status()
        .unwrap();
    let role = Role {
        model: Some("it's a model".to_owned()),
        ..agent(&["my agent", "--model={model}", "$HOME"])
    };
    let line = invocation(&role, None, &Tools::none(), AWKWARD, None);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env("GATEHOUSE_ACP", &shim)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[--prompt-file]\n[/in/.agent/it's \"the\" prompt $HOME.md]\n[--]\n[my agent]\n\
         [--model=it's a model]\n[$HOME]\n"
    );
    let unset = std::process::Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env_remove("GATEHOUSE_ACP")
        .output()
        .unwrap();
    assert!(!unset.status.success());
    assert!(
        String::from_utf8_lossy(&unset.stderr)
            .contains("the runner gave this sandbox no gatehouse-acp"),
        "{}",
        String::from_utf8_lossy(&unset.stderr)
    );
}

#[test]
fn an_acp_role_needs_the_agents_argv_with_at_most_a_model_placeholder() {
    assert_eq!(agent(&[]).check(), Err(RoleError::AgentCommandMissing));
    assert_eq!(
        RoleError::AgentCommandMissing.to_string(),
        "executor \"acp\" needs `command`, the ACP agent's argv, e.g. command = [\"gemini\", \
         \"--acp\"] or [\"opencode\", \"acp\"]"
    );
    assert_eq!(agent(&[" "]).check(), Err(RoleError::ProgramEmpty));
    assert_eq!(
        agent(&["gemini", "--acp", "-m", "{model}"]).check(),
        Err(RoleError::ModelPlaceholderWithoutModel)
    );
    let prompt = agent(&["my-agent", "--prompt={prompt_file}"]).check();
    assert_eq!(
        prompt.map_err(|e| e.to_string()),
        Err(
            "`command` argument \"--prompt={prompt_file}\" uses {prompt_file}, but an \"acp\" \
             agent's command takes only {model}: the prompt, system text and transcript go \
             through the protocol"
                .to_owned()
        )
    );
    let fine = Role {
        model: Some("m".to_owned()),
        args: vec!["--mode".to_owned(), "yolo".to_owned()],
        ..agent(&["gemini", "--acp", "-m", "{model}"])
    };
    assert_eq!(fine.check(), Ok(()));
    assert_eq!(fine.program(), Some("gemini"));
    assert_eq!(Executor::Acp.to_string(), "acp");
    assert!(Executor::Acp.model_apis().is_empty());
}
