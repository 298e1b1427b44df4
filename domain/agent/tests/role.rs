use std::collections::BTreeMap;

use gatehouse_agent::{Executor, Role, RoleError};

fn role(executor: Executor) -> Role {
    Role::new(executor)
}

fn command(argv: &[&str]) -> Role {
    Role {
        command: argv.iter().map(|a| (*a).to_owned()).collect(),
        ..role(Executor::Command)
    }
}

#[test]
fn cli_executors_need_nothing_but_the_executor() {
    assert_eq!(role(Executor::ClaudeCode).check(), Ok(()));
    let codex = Role {
        model: Some("gpt-5-codex".to_owned()),
        args: vec![
            "-c".to_owned(),
            "model_reasoning_effort=\"high\"".to_owned(),
        ],
        ..role(Executor::Codex)
    };
    assert_eq!(codex.check(), Ok(()));
}

#[test]
fn command_executor_needs_a_command() {
    let error = role(Executor::Command).check();
    assert_eq!(error, Err(RoleError::CommandMissing));
    assert_eq!(
        RoleError::CommandMissing.to_string(),
        "executor \"command\" needs `command`, the argv to run, e.g. command = \
         [\"my-agent\", \"--prompt\", \"{prompt_file}\"]"
    );
    assert_eq!(command(&[" ", "x"]).check(), Err(RoleError::ProgramEmpty));
}

#[test]
fn command_for_another_executor_is_refused() {
    let claude = Role {
        command: vec!["claude".to_owned()],
        ..role(Executor::ClaudeCode)
    };
    let error = claude.check();
    assert_eq!(
        error,
        Err(RoleError::CommandNotAllowed {
            executor: Executor::ClaudeCode
        })
    );
    assert_eq!(
        error.map_err(|e| e.to_string()),
        Err(
            "`command` is only read for executors \"command\" and \"acp\", not \"claude-code\"; \
             remove it, or use `args` to add arguments to the claude-code command line"
                .to_owned()
        )
    );
}

#[test]
fn args_for_the_command_executor_are_refused() {
    let role = Role {
        args: vec!["--fast".to_owned()],
        ..command(&["my-agent", "{prompt_file}"])
    };
    assert_eq!(role.check(), Err(RoleError::ArgsNotAllowed));
}

#[test]
fn placeholders_must_be_known() {
    let good = Role {
        model: Some("m".to_owned()),
        system_prompt: Some("Be brief.".to_owned()),
        ..command(&[
            "my-agent",
            "--prompt={prompt_file}",
            "--system",
            "{system_file}",
            "-m",
            "{model}",
            r#"{"literal":"json"}"#,
        ])
    };
    assert_eq!(good.check(), Ok(()));

    let error = command(&["my-agent", "--in={prompt}"]).check();
    assert_eq!(
        error,
        Err(RoleError::UnknownPlaceholder {
            name: "prompt".to_owned(),
            argument: "--in={prompt}".to_owned(),
        })
    );
    assert_eq!(
        error.map_err(|e| e.to_string()),
        Err(
            "`command` argument \"--in={prompt}\" uses the unknown placeholder {prompt}; the \
             placeholders are {prompt_file}, {system_file}, {transcript_file} and {model}"
                .to_owned()
        )
    );
}

#[test]
fn placeholders_need_what_they_stand_for() {
    assert_eq!(
        command(&["a", "{model}"]).check(),
        Err(RoleError::ModelPlaceholderWithoutModel)
    );
    assert_eq!(
        command(&["a", "{system_file}"]).check(),
        Err(RoleError::SystemPlaceholderWithoutSystem)
    );
    let with_rules = Role {
        rules: vec!["Never push.".to_owned()],
        ..command(&["a", "{system_file}"])
    };
    assert_eq!(with_rules.check(), Ok(()));
}

#[test]
fn empty_model_and_nul_characters_are_refused() {
    let empty = Role {
        model: Some(String::new()),
        ..role(Executor::Codex)
    };
    assert_eq!(empty.check(), Err(RoleError::ModelEmpty));
    let nul = Role {
        args: vec!["a\0b".to_owned()],
        ..role(Executor::Codex)
    };
    assert_eq!(nul.check(), Err(RoleError::Nul { field: "args" }));
}

#[test]
fn system_text_is_the_prompt_then_the_rules() {
    assert_eq!(role(Executor::ClaudeCode).system_text(), None);
    let blank = Role {
        system_prompt: Some("  \n".to_owned()),
        rules: vec![" ".to_owned()],
        ..role(Executor::ClaudeCode)
    };
    assert_eq!(blank.system_text(), None);

    let full = Role {
        system_prompt: Some("You fix bugs in acme/app.\n".to_owned()),
        rules: vec![
            "Run the tests before you finish.".to_owned(),
            "Never force-push.\nAsk in the summary instead.".to_owned(),
        ],
        ..role(Executor::ClaudeCode)
    };
    assert_eq!(
        full.system_text().as_deref(),
        Some(
            "You fix bugs in acme/app.\n\
             \n\
             Rules:\n\
             - Run the tests before you finish.\n\
             - Never force-push.\n  Ask in the summary instead."
        )
    );

    let rules_only = Role {
        rules: vec!["Be brief.".to_owned()],
        ..role(Executor::Codex)
    };
    assert_eq!(
        rules_only.system_text().as_deref(),
        Some("Rules:\n- Be brief.")
    );
    let prompt_only = Role {
        system_prompt: Some("Be brief.".to_owned()),
        ..role(Executor::Codex)
    };
    assert_eq!(prompt_only.system_text().as_deref(), Some("Be brief."));
}

#[test]
fn a_role_round_trips_through_json() {
    let role = Role {
        model: Some("claude-sonnet-4-5".to_owned()),
        system_prompt: Some("You fix bugs.".to_owned()),
        rules: vec!["Be brief.".to_owned()],
        env: BTreeMap::from([("CI".to_owned(), "1".to_owned())]),
        secrets: vec!["ANTHROPIC_API_KEY".to_owned()],
        sandbox: Some("networked".to_owned()),
        args: vec!["--max-turns".to_owned(), "40".to_owned()],
        ..role(Executor::ClaudeCode)
    };
    let json = serde_json::to_string(&role).unwrap_or_default();
    assert_eq!(
        json,
        r#"{"executor":"claude-code","model":"claude-sonnet-4-5","system_prompt":"You fix bugs.","rules":["Be brief."],"env":{"CI":"1"},"secrets":["ANTHROPIC_API_KEY"],"sandbox":"networked","args":["--max-turns","40"]}"#
    );
    let back: Result<Role, _> = serde_json::from_str(&json);
    assert_eq!(back.ok(), Some(role));
}

#[test]
fn a_minimal_role_reads_with_defaults_and_unknown_keys_are_refused() {
    let minimal: Result<Role, _> = serde_json::from_str(r#"{"executor":"codex"}"#);
    assert_eq!(minimal.ok(), Some(role(Executor::Codex)));
    let typo: Result<Role, _> = serde_json::from_str(r#"{"executor":"codex","modle":"x"}"#);
    assert!(
        typo.as_ref()
            .is_err_and(|e| e.to_string().contains("unknown field `modle`")),
        "{typo:?}"
    );
    let bad_executor: Result<Role, _> = serde_json::from_str(r#"{"executor":"claude"}"#);
    assert!(bad_executor.is_err());
}

#[test]
fn read_only_is_written_only_when_set() {
    let reader: Result<Role, _> = serde_json::from_str(r#"{"executor":"codex","read_only":true}"#);
    let reader = reader.ok();
    assert_eq!(
        reader,
        Some(Role {
            read_only: true,
            ..role(Executor::Codex)
        })
    );
    let json = reader.map(|r| serde_json::to_string(&r).unwrap_or_default());
    assert_eq!(
        json.as_deref(),
        Some(r#"{"executor":"codex","read_only":true}"#)
    );
    let plain = serde_json::to_string(&role(Executor::Codex)).unwrap_or_default();
    assert_eq!(
        plain, r#"{"executor":"codex"}"#,
        "frozen roles read as before"
    );
}

#[test]
fn an_asked_role_gets_its_secrets_only_when_it_says_so() {
    let keyed = Role {
        secrets: vec!["DEPLOY_KEY".into()],
        ..role(Executor::Codex)
    };
    assert_eq!(keyed.secrets_for(false), ["DEPLOY_KEY"]);
    assert!(keyed.secrets_for(true).is_empty(), "asked: no secrets");
    let trusted = Role {
        ask_secrets: true,
        ..keyed
    };
    assert_eq!(trusted.secrets_for(true), ["DEPLOY_KEY"]);
    let parsed: Role =
        serde_json::from_str(r#"{"executor":"codex","askable":true,"ask_secrets":true}"#).unwrap();
    assert!(parsed.askable && parsed.ask_secrets);
    let plain: Role = serde_json::from_str(r#"{"executor":"codex"}"#).unwrap();
    assert!(!plain.askable && !plain.ask_secrets, "neither unless said");
}
