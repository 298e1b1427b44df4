//! Agent nodes end to end on the process sandbox: deterministic stand-ins for Claude Code,
//! Codex and a user's own agent command (scripts that edit the workspace and print usage in
//! each CLI's format) run by the real runner; prompts rendered, workspaces checkpointed and
//! restored on send-back, usage parsed, priced and summed.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use gatehouse_agent::{Executor, Price, Role};
use gatehouse_events::{Event, GateDecisionKind, RequirementState, RunRequested};
use gatehouse_ingest::views::UsageTotal;
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_store::RequirementRow;
use gatehouse_tests::{Backend, Gatehouse, TestDb, actor, on_both_backends};
use uuid::Uuid;

/// Claude Code's `--output-format stream-json --verbose` events, as the real CLI prints them
/// (shapes from domain/agent/tests/fixtures/claude_stream_*.jsonl): the session, a Bash
/// call and its result, a failed Edit, then the result object (fields from
/// domain/agent/fixtures/claude), after reading the prompt on stdin and editing the
/// workspace.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
prompt=$(cat)
printf '%s\n' "$prompt" > "$GATEHOUSE_ARTIFACTS/prompt.md"
echo "args: $*" | tr '\n' ' ' >&2
echo edit >> work.txt
echo '{"type":"system","subtype":"init","session_id":"s1","tools":["Bash","Edit"],"model":"claude-sonnet-4-5"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cargo test --lib","description":"Run the tests"}}]},"session_id":"s1"}'
sleep 0.2
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"ok","is_error":false}]},"session_id":"s1"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Edit","input":{"file_path":"src/lexer.rs","old_string":"a","new_string":"b"}}]},"session_id":"s1"}'
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_2","type":"tool_result","content":"File has not been read yet.","is_error":true}]},"session_id":"s1"}'
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":8722,"num_turns":3,"result":"Implemented.","session_id":"s1","total_cost_usd":0.0109,"usage":{"input_tokens":1000,"cache_creation_input_tokens":100,"cache_read_input_tokens":200,"output_tokens":500},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":1000,"outputTokens":500,"cacheReadInputTokens":200,"cacheCreationInputTokens":100,"costUSD":0.0109}}}\n'
"#;

/// `codex exec --json` events (shapes from domain/agent/fixtures/codex).
const FAKE_CODEX: &str = r#"#!/bin/sh
cat > "$GATEHOUSE_ARTIFACTS/prompt.md"
echo '{"type":"thread.started","thread_id":"t1"}'
echo '{"type":"turn.started"}'
echo '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Reviewed."}}'
echo '{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":300}}'
"#;

/// A user's own agent: Gatehouse's generic usage line.
const FAKE_COMMAND: &str = r#"#!/bin/sh
test -s "$1" || exit 3
echo "my-agent: model $2"
echo '{"gatehouse_usage": {"model": "my-model", "input_tokens": 10, "output_tokens": 20}}'
"#;

/// Claude Code reporting an error result (domain/agent/fixtures/claude/invalid_api_key.json).
const FAILING_CLAUDE: &str = r#"#!/bin/sh
cat >/dev/null
echo '{"is_error":true,"result":"Invalid API key · Fix external API key","session_id":"s","modelUsage":{}}'
"#;

/// Claude Code refusing to start, as it does as root without `IS_SANDBOX`: no result,
/// only stderr (the key it was given appears there too, and must be masked).
const SILENT_CLAUDE: &str = r#"#!/bin/sh
cat >/dev/null
echo "starting" >&2
echo "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons (key $CARGO_MANIFEST_DIR)" >&2
exit 1
"#;

const SILENT: &str = r#"
name: silent
nodes:
  silent: { kind: agent, role: silent, prompt: "Try." }
"#;

const CODING: &str = r#"
name: coding
params: { topic: { default: "parsers" } }
nodes:
  plan: { kind: script, run: "echo 'plan: split the lexer' > $GATEHOUSE_ARTIFACTS/plan.md", artifacts: [plan.md] }
  code:
    kind: agent
    needs: [plan]
    role: coder
    prompt: |
      Work on {{ params.topic }} for "{{ requirement.title }}".
      {{ inputs.plan["plan.md"] }}
      {% if rework_comment %}Reviewer asked: {{ rework_comment }}{% endif %}
    artifacts: [prompt.md]
  review: { kind: gate, needs: [code], approvers: [ana], send_back: [code] }
  after: { kind: script, needs: [review], run: "cat work.txt" }
"#;

const REVIEWS: &str = r#"
name: reviews
nodes:
  codex: { kind: agent, role: reviewer, prompt: "Review it.", artifacts: [prompt.md] }
  mine: { kind: agent, needs: [codex], role: custom, prompt: "Do {{ node }}." }
"#;

const ERRING: &str = r#"
name: erring
nodes:
  erring: { kind: agent, role: erring, prompt: "Try." }
"#;

const ROLELESS: &str = r#"
name: roleless
nodes:
  unknown: { kind: agent, role: nobody, prompt: "Try." }
"#;

on_both_backends!(
    an_agent_gets_its_prompt_and_rework_starts_from_the_checkpoint,
    codex_and_command_agents_report_usage,
    agent_errors_and_unknown_roles_fail_the_node,
);

/// Writes `script` as an executable `name` in `dir`.
fn install(dir: &std::path::Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A role of `executor` whose CLI is found in `bin`.
fn role(executor: Executor, model: &str, bin: &std::path::Path) -> Role {
    Role {
        model: Some(model.into()),
        system_prompt: Some("Be brief.".into()),
        rules: vec!["Never push.".into()],
        env: BTreeMap::from([("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))]),
        ..Role::new(executor)
    }
}

/// The services with the fake CLIs installed; `roles` gets their directory.
async fn stack(
    backend: Backend,
    sops: &[(&str, &str)],
    roles: impl FnOnce(&std::path::Path) -> BTreeMap<String, Role>,
) -> Gatehouse {
    let data = tempfile::tempdir().unwrap();
    let bin = data.path().join("bin");
    install(&bin, "claude", FAKE_CLAUDE);
    install(&bin, "codex", FAKE_CODEX);
    install(&bin, "my-agent", FAKE_COMMAND);
    install(&bin.join("erring"), "claude", FAILING_CLAUDE);
    install(&bin.join("silent"), "claude", SILENT_CLAUDE);
    let roles = roles(&bin);
    let prices = BTreeMap::from([(
        "claude-sonnet-4-5".to_owned(),
        Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
    )]);
    Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sops(sops)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = roles;
            options.prices = prices;
        })
        .start()
        .await
}

async fn an_agent_gets_its_prompt_and_rework_starts_from_the_checkpoint(backend: Backend) {
    let stack = stack(backend, &[("coding", CODING)], |bin| {
        BTreeMap::from([(
            "coder".to_owned(),
            role(Executor::ClaudeCode, "claude-sonnet-4-5", bin),
        )])
    })
    .await;
    let requirement = Uuid::now_v7();
    let mut tx = stack.db.store.begin().await.unwrap();
    tx.insert_requirement(&RequirementRow {
        id: requirement,
        source_key: format!("api:{requirement}"),
        source: r#"{"kind":"api"}"#.into(),
        title: "Fix the tokenizer".into(),
        body: "It drops the last token.".into(),
        url: None,
        state: RequirementState::Open,
        requested_by: "bob".into(),
        source_updated_at: String::new(),
        project: None,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    })
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let run = Uuid::now_v7();
    stack
        .emit(Event::RunRequested(RunRequested {
            run_id: run,
            sop: "coding".into(),
            params: BTreeMap::new(),
            requirement_id: Some(requirement),
            requested_by: actor("bob"),
            schedule: None,
            parent: None,
            workspace: None,
        }))
        .await;
    stack.wait_run(run, "waiting").await;

    let prompt = stack.artifact(run, "code", 1, "prompt.md");
    assert_eq!(
        prompt.trim(),
        "Work on parsers for \"Fix the tokenizer\".\nplan: split the lexer"
    );
    let logs = stack.db.store.logs(run, 0, 1000).await.unwrap();
    let args = logs
        .iter()
        .find(|l| l.line.starts_with("args: "))
        .expect("the CLI's arguments")
        .line
        .clone();
    for expected in [
        "-p",
        "--output-format stream-json --verbose",
        "--model claude-sonnet-4-5",
        "--append-system-prompt Be brief.",
        "Rules:",
        "Never push.",
    ] {
        assert!(args.contains(expected), "{expected} in {args}");
    }
    assert!(
        logs.iter()
            .any(|l| l.node == "code" && l.line.contains("workspace checkpointed")),
        "{logs:#?}"
    );
    // The tools the agent called, read from its stream as it ran.
    let tools = stack.db.store.tool_calls(run).await.unwrap();
    let called: Vec<(&str, &str, bool)> = tools
        .iter()
        .map(|t| (t.tool.as_str(), t.summary.as_str(), t.failed))
        .collect();
    assert_eq!(
        called,
        [
            ("Bash", "cargo test --lib", false),
            ("Edit", "src/lexer.rs", true)
        ]
    );
    assert!(
        tools[0].duration_ms.is_some_and(|ms| ms >= 150),
        "timed from the lines' arrival: {tools:?}"
    );
    let usage = stack.db.store.usage_of_run(run).await.unwrap();
    assert_eq!(usage.len(), 1);
    let first = &usage[0];
    assert_eq!(
        (first.node.as_str(), first.attempt, first.model.as_str()),
        ("code", 1, "claude-sonnet-4-5")
    );
    assert_eq!(
        (
            first.input_tokens,
            first.output_tokens,
            first.cache_read_tokens,
            first.cache_write_tokens
        ),
        (1000, 500, 200, 100)
    );
    // 1000 × $3 + 500 × $15 + 200 × $0.30 + 100 × $3.75, per million tokens.
    assert!(
        (first.cost_usd.unwrap() - 0.010935).abs() < 1e-9,
        "{first:?}"
    );

    stack
        .decide(
            run,
            "review",
            1,
            GateDecisionKind::SendBack { to: "code".into() },
            Some("cover the empty input"),
        )
        .await;
    stack
        .wait(run, "the gate's second attempt", |_, state| {
            state["nodes"]["review"]["attempt"] == 2
                && state["nodes"]["review"]["status"] == "waiting_approval"
        })
        .await;
    assert!(
        stack
            .artifact(run, "code", 2, "prompt.md")
            .contains("Reviewer asked: cover the empty input"),
    );
    stack
        .decide(run, "review", 2, GateDecisionKind::Approve, None)
        .await;
    stack.wait_run(run, "succeeded").await;
    // The rework started from the workspace as `code` first found it: one edit, not two.
    let work = stack
        .data
        .path()
        .join(format!("runs/{run}/workspace/work.txt"));
    assert_eq!(std::fs::read_to_string(work).unwrap(), "edit\n");

    let run_usage = stack.db.store.usage_of_run(run).await.unwrap();
    assert_eq!(run_usage.len(), 2);
    let total = UsageTotal::of(
        &stack
            .db
            .store
            .usage_of_requirement(requirement)
            .await
            .unwrap(),
    );
    assert_eq!(
        (
            total.input_tokens,
            total.output_tokens,
            total.cache_read_tokens
        ),
        (2000, 1000, 400)
    );
    assert!((total.cost_usd - 2.0 * 0.010935).abs() < 1e-9);
    stack.stop().await;
}

async fn codex_and_command_agents_report_usage(backend: Backend) {
    let stack = stack(backend, &[("reviews", REVIEWS)], |bin| {
        let mut custom = role(Executor::Command, "my-model", bin);
        custom.command = vec!["my-agent".into(), "{prompt_file}".into(), "{model}".into()];
        custom.system_prompt = None;
        custom.rules = Vec::new();
        BTreeMap::from([
            (
                "reviewer".to_owned(),
                role(Executor::Codex, "gpt-5-codex", bin),
            ),
            ("custom".to_owned(), custom),
        ])
    })
    .await;
    let run = stack.request("reviews").await;
    stack.wait_run(run, "succeeded").await;

    // Codex reads the role's system text and the prompt on stdin.
    assert_eq!(
        stack.artifact(run, "codex", 1, "prompt.md"),
        "Be brief.\n\nRules:\n- Never push.\n\nReview it."
    );
    let usage = stack.db.store.usage_of_run(run).await.unwrap();
    let codex = usage.iter().find(|u| u.node == "codex").unwrap();
    // OpenAI counts cached tokens inside input_tokens; Gatehouse stores them apart.
    assert_eq!(
        (
            codex.model.as_str(),
            codex.input_tokens,
            codex.cache_read_tokens,
            codex.output_tokens,
            codex.cost_usd
        ),
        ("gpt-5-codex", 1000, 200, 300, None)
    );
    let mine = usage.iter().find(|u| u.node == "mine").unwrap();
    assert_eq!(
        (mine.model.as_str(), mine.input_tokens, mine.output_tokens),
        ("my-model", 10, 20)
    );
    let total = UsageTotal::of(&usage);
    assert_eq!(total.unpriced_models, vec!["gpt-5-codex", "my-model"]);
    stack.stop().await;
}

async fn agent_errors_and_unknown_roles_fail_the_node(backend: Backend) {
    let sops = [
        ("erring", ERRING),
        ("roleless", ROLELESS),
        ("silent", SILENT),
    ];
    let stack = stack(backend, &sops, |bin| {
        let mut silent = role(
            Executor::ClaudeCode,
            "claude-sonnet-4-5",
            &bin.join("silent"),
        );
        // One every `cargo test` process has, so the runner can read it.
        silent.secrets = vec!["CARGO_MANIFEST_DIR".into()];
        BTreeMap::from([
            (
                "erring".to_owned(),
                role(
                    Executor::ClaudeCode,
                    "claude-sonnet-4-5",
                    &bin.join("erring"),
                ),
            ),
            ("silent".to_owned(), silent),
        ])
    })
    .await;
    for (sop, error) in [
        (
            "erring",
            "the agent reported an error: Invalid API key · Fix external API key",
        ),
        (
            "roleless",
            "the agent role `nobody` is not configured (add [roles.nobody])",
        ),
        // Item 8 of issue 38: no result, so its last words on stderr say why (masked).
        (
            "silent",
            "exit code 1; the agent printed no result; its last words on stderr: \"starting\" / \"--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons (key [secret])\"",
        ),
    ] {
        let run = stack.request(sop).await;
        stack.wait_run(run, "failed").await;
        let attempts = stack.db.store.attempts(run).await.unwrap();
        assert_eq!(attempts[0].error.as_deref(), Some(error), "{sop}");
    }
    stack.stop().await;
}
