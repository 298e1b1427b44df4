//! Command lines of the native executors added for issue 39 (OpenCode, Kilo, pi, aider),
//! with and without the gateway: snapshots, so a change of flags is seen in review.

use gatehouse_agent::Tools;
use gatehouse_agent::{Executor, ModelApi, Role, Session, invocation, turn_invocation};
use insta::assert_snapshot;

/// Where the runner writes the files, as the sandbox sees them.
const PROMPT: &str = "/in/.agent/prompt.md";
const SYSTEM: &str = "/in/.agent/system.md";
/// A path a user's workspace layout could produce: spaces and both kinds of quote.
const AWKWARD: &str = "/in/.agent/it's \"the\" prompt $HOME.md";

fn role(executor: Executor, model: Option<&str>) -> Role {
    Role {
        model: model.map(str::to_owned),
        ..Role::new(executor)
    }
}

fn turn(role: &Role, api: Option<ModelApi>, id: &str) -> String {
    let session = Session {
        resume: Some(id),
        transcript_file: None,
    };
    turn_invocation(role, api, &Tools::none(), PROMPT, Some(SYSTEM), session)
        .expect("a valid session id")
}

#[test]
fn opencode() {
    let bare = role(Executor::Opencode, None);
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @r#"OPENCODE_CONFIG_CONTENT='{"autoupdate":false,"share":"disabled","snapshot":false}' opencode run --format json --pure --auto --title Gatehouse < /in/.agent/prompt.md"#);
    let own = Role {
        args: vec!["--agent".to_owned(), "plan it".to_owned()],
        ..role(Executor::Opencode, Some("anthropic/claude-sonnet-4-5"))
    };
    assert_snapshot!(invocation(&own, None, &Tools::none(), AWKWARD, Some(SYSTEM)), @r#"{ cat /in/.agent/system.md; printf '\n\n'; cat "/in/.agent/it's \"the\" prompt "'$HOME.md'; } | OPENCODE_CONFIG_CONTENT='{"autoupdate":false,"share":"disabled","snapshot":false}' opencode run --format json --pure --auto --title Gatehouse --model anthropic/claude-sonnet-4-5 --agent 'plan it'"#);
}

#[test]
fn opencode_through_the_gateway_reads_its_address_and_key_from_the_environment() {
    let role = role(Executor::Opencode, Some("claude-sonnet-4-5"));
    assert_snapshot!(invocation(&role, Some(ModelApi::Anthropic), &Tools::none(), PROMPT, Some(SYSTEM)), @r#"{ cat /in/.agent/system.md; printf '\n\n'; cat /in/.agent/prompt.md; } | OPENCODE_CONFIG_CONTENT='{"autoupdate":false,"provider":{"gatehouse":{"models":{"claude-sonnet-4-5":{}},"name":"Gatehouse","npm":"@ai-sdk/anthropic","options":{"apiKey":"{env:ANTHROPIC_API_KEY}","baseURL":"{env:ANTHROPIC_BASE_URL}/v1"}}},"share":"disabled","snapshot":false}' opencode run --format json --pure --auto --title Gatehouse --model gatehouse/claude-sonnet-4-5"#);
    let gpt = self::role(Executor::Opencode, Some("gpt-5's \"best\""));
    assert_snapshot!(invocation(&gpt, Some(ModelApi::OpenAi), &Tools::none(), PROMPT, None), @r#"OPENCODE_CONFIG_CONTENT="{\"autoupdate\":false,\"provider\":{\"gatehouse\":{\"models\":{\"gpt-5's \\\"best\\\"\":{}},\"name\":\"Gatehouse\",\"npm\":\"@ai-sdk/openai\",\"options\":{\"apiKey\":\"{env:OPENAI_API_KEY}\",\"baseURL\":\"{env:OPENAI_BASE_URL}\"}}},\"share\":\"disabled\",\"snapshot\":false}" opencode run --format json --pure --auto --title Gatehouse --model "gatehouse/gpt-5's \"best\"" < /in/.agent/prompt.md"#);
    // A turn continues the session; the session holds the system text already.
    assert_snapshot!(turn(&role, Some(ModelApi::Anthropic), "ses_db25fe315ffeg2ytzPSJomgH2W"), @r#"OPENCODE_CONFIG_CONTENT='{"autoupdate":false,"provider":{"gatehouse":{"models":{"claude-sonnet-4-5":{}},"name":"Gatehouse","npm":"@ai-sdk/anthropic","options":{"apiKey":"{env:ANTHROPIC_API_KEY}","baseURL":"{env:ANTHROPIC_BASE_URL}/v1"}}},"share":"disabled","snapshot":false}' opencode run --format json --pure --auto --title Gatehouse --model gatehouse/claude-sonnet-4-5 -s ses_db25fe315ffeg2ytzPSJomgH2W < /in/.agent/prompt.md"#);
}

#[test]
fn pi() {
    let bare = role(Executor::Pi, None);
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @"pi -p --mode json < /in/.agent/prompt.md");
    let own = Role {
        args: vec!["--thinking".to_owned(), "high".to_owned()],
        ..role(Executor::Pi, Some("anthropic/claude-sonnet-4-5"))
    };
    assert_snapshot!(invocation(&own, None, &Tools::none(), AWKWARD, Some(AWKWARD)), @r#"pi -p --mode json --model anthropic/claude-sonnet-4-5 --append-system-prompt "$(cat "/in/.agent/it's \"the\" prompt "'$HOME.md')" --thinking high < "/in/.agent/it's \"the\" prompt "'$HOME.md'"#);
}

#[test]
fn pi_through_the_gateway_writes_its_models_file_first() {
    let role = role(Executor::Pi, Some("fake-model"));
    assert_snapshot!(invocation(&role, Some(ModelApi::Anthropic), &Tools::none(), PROMPT, Some(SYSTEM)), @r#"mkdir -p "$HOME"/.pi/agent && printf '%s\n' '{"providers":{"gatehouse":{"api":"anthropic-messages","apiKey":"ANTHROPIC_API_KEY","baseUrl":"'"${ANTHROPIC_BASE_URL}"'","models":[{"id":"fake-model"}]}}}' > "$HOME"/.pi/agent/models.json && pi -p --mode json --provider gatehouse --model fake-model --append-system-prompt "$(cat /in/.agent/system.md)" < /in/.agent/prompt.md"#);
    assert_snapshot!(turn(&role, Some(ModelApi::OpenAi), "01a24e3e-766c-7414-bf1a-1725bdc45a3a"), @r#"mkdir -p "$HOME"/.pi/agent && printf '%s\n' '{"providers":{"gatehouse":{"api":"openai-responses","apiKey":"OPENAI_API_KEY","baseUrl":"'"${OPENAI_BASE_URL}"'","models":[{"id":"fake-model"}]}}}' > "$HOME"/.pi/agent/models.json && pi -p --mode json --provider gatehouse --model fake-model --session 01a24e3e-766c-7414-bf1a-1725bdc45a3a --append-system-prompt "$(cat /in/.agent/system.md)" < /in/.agent/prompt.md"#);
    let gemini = self::role(Executor::Pi, Some("it's $(rm -rf /)"));
    assert_snapshot!(invocation(&gemini, Some(ModelApi::Gemini), &Tools::none(), PROMPT, None), @r#"mkdir -p "$HOME"/.pi/agent && printf '%s\n' '{"providers":{"gatehouse":{"api":"google-generative-ai","apiKey":"GEMINI_API_KEY","baseUrl":"'"${GOOGLE_GEMINI_BASE_URL}""/v1beta\",\"models\":[{\"id\":\"it's "'$(rm -rf /)"}]}}}' > "$HOME"/.pi/agent/models.json && pi -p --mode json --provider gatehouse --model "it's "'$(rm -rf /)' < /in/.agent/prompt.md"#);
}

#[test]
fn aider() {
    let bare = role(Executor::Aider, None);
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @r#"mkdir -p "$HOME"/.aider && aider --message-file /in/.agent/prompt.md --yes-always --no-auto-commits --no-git --no-gitignore --no-check-update --no-show-release-notes --analytics-disable --no-show-model-warnings --no-pretty --no-stream --chat-history-file "$HOME"/.aider/chat.md --input-history-file "$HOME"/.aider/input.history < /dev/null"#);
    let own = Role {
        args: vec!["--file".to_owned(), "src/it's.rs".to_owned()],
        ..role(Executor::Aider, Some("anthropic/claude-sonnet-4-5"))
    };
    assert_snapshot!(invocation(&own, None, &Tools::none(), AWKWARD, Some(AWKWARD)), @r#"mkdir -p "$HOME"/.aider && { cat "/in/.agent/it's \"the\" prompt "'$HOME.md' && printf '\n' && cat "/in/.agent/it's \"the\" prompt "'$HOME.md'; } > "$HOME"/.aider/message.md && aider --message-file "$HOME"/.aider/message.md --yes-always --no-auto-commits --no-git --no-gitignore --no-check-update --no-show-release-notes --analytics-disable --no-show-model-warnings --no-pretty --no-stream --chat-history-file "$HOME"/.aider/chat.md --input-history-file "$HOME"/.aider/input.history --model anthropic/claude-sonnet-4-5 --file "src/it's.rs" < /dev/null"#);
    let role = role(Executor::Aider, Some("fake-model"));
    assert_snapshot!(invocation(&role, Some(ModelApi::OpenAi), &Tools::none(), PROMPT, Some(SYSTEM)), @r#"mkdir -p "$HOME"/.aider && { cat /in/.agent/system.md && printf '\n' && cat /in/.agent/prompt.md; } > "$HOME"/.aider/message.md && OPENAI_API_BASE="${OPENAI_BASE_URL}" aider --message-file "$HOME"/.aider/message.md --yes-always --no-auto-commits --no-git --no-gitignore --no-check-update --no-show-release-notes --analytics-disable --no-show-model-warnings --no-pretty --no-stream --chat-history-file "$HOME"/.aider/chat.md --input-history-file "$HOME"/.aider/input.history --model openai/fake-model < /dev/null"#);
    assert_snapshot!(turn(&role, Some(ModelApi::Anthropic), "aider"), @r#"mkdir -p "$HOME"/.aider && ANTHROPIC_API_BASE="${ANTHROPIC_BASE_URL}" aider --message-file /in/.agent/prompt.md --yes-always --no-auto-commits --no-git --no-gitignore --no-check-update --no-show-release-notes --analytics-disable --no-show-model-warnings --no-pretty --no-stream --chat-history-file "$HOME"/.aider/chat.md --input-history-file "$HOME"/.aider/input.history --restore-chat-history --model anthropic/fake-model < /dev/null"#);
    let prefixed = self::role(Executor::Aider, Some("openai/gpt-5 $(x)"));
    assert_snapshot!(invocation(&prefixed, Some(ModelApi::OpenAi), &Tools::none(), PROMPT, None), @r#"mkdir -p "$HOME"/.aider && OPENAI_API_BASE="${OPENAI_BASE_URL}" aider --message-file /in/.agent/prompt.md --yes-always --no-auto-commits --no-git --no-gitignore --no-check-update --no-show-release-notes --analytics-disable --no-show-model-warnings --no-pretty --no-stream --chat-history-file "$HOME"/.aider/chat.md --input-history-file "$HOME"/.aider/input.history --model 'openai/gpt-5 $(x)' < /dev/null"#);
}

#[test]
fn kilo() {
    let bare = role(Executor::Kilo, None);
    assert_snapshot!(invocation(&bare, None, &Tools::none(), PROMPT, None), @r#"KILO_CONFIG_CONTENT='{"autoupdate":false,"share":"disabled","snapshot":false}' kilo run --format json --pure --auto --title Gatehouse < /in/.agent/prompt.md"#);
    let role = role(Executor::Kilo, Some("fake-model"));
    assert_snapshot!(invocation(&role, Some(ModelApi::Anthropic), &Tools::none(), PROMPT, Some(SYSTEM)), @r#"{ cat /in/.agent/system.md; printf '\n\n'; cat /in/.agent/prompt.md; } | KILO_CONFIG_CONTENT='{"autoupdate":false,"provider":{"gatehouse":{"models":{"fake-model":{}},"name":"Gatehouse","npm":"@ai-sdk/anthropic","options":{"apiKey":"{env:ANTHROPIC_API_KEY}","baseURL":"{env:ANTHROPIC_BASE_URL}/v1"}}},"share":"disabled","snapshot":false}' kilo run --format json --pure --auto --title Gatehouse --model gatehouse/fake-model"#);
    assert_snapshot!(turn(&role, Some(ModelApi::OpenAi), "ses_db25fe315ffeg2ytzPSJomgH2W"), @r#"KILO_CONFIG_CONTENT='{"autoupdate":false,"provider":{"gatehouse":{"models":{"fake-model":{}},"name":"Gatehouse","npm":"@ai-sdk/openai","options":{"apiKey":"{env:OPENAI_API_KEY}","baseURL":"{env:OPENAI_BASE_URL}"}}},"share":"disabled","snapshot":false}' kilo run --format json --pure --auto --title Gatehouse --model gatehouse/fake-model -s ses_db25fe315ffeg2ytzPSJomgH2W < /in/.agent/prompt.md"#);
}
