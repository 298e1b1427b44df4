//! Conversation turns on the runner, end to end on the process sandbox: `turn.dispatch`
//! jobs written to the outbox as the scheduler writes them, run by the real runner with
//! stand-ins for Claude Code and a user's own agent command (scripts printing each CLI's
//! real output format); the attempts, tools, usage and progress message recorded, the
//! session resumed, the workspace kept, checkpointed, released and restored, failures
//! explained, stops obeyed, and an attempt begun before never run again; a `deliver` turn
//! pushing the workspace of a project's repository and opening (then updating) its pull
//! request on the fake GitHub, recorded with the requirement. Then the turn tables on
//! their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;
use gatehouse_agent::{Executor, Price, Role};
use gatehouse_bus::{Bus, ConsumerSpec, InProcessBus};
use gatehouse_events::{
    ChatThread, Envelope, Event, RepositoryCheckout, RepositoryMode, RequirementState,
    RunWorkspace, TurnCancel, TurnDispatch, TurnFinished, TurnOutcome, TurnTask,
};
use gatehouse_fake_forge::git::git;
use gatehouse_runner::RunnerOptions;
use gatehouse_store::{
    NewTurnAttempt, RequirementRow, Store, TurnAttemptRow, TurnEnd, TurnKey, TurnStatus,
    TurnToolCallRow, TurnUsageRow,
};
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};
use uuid::Uuid;

/// Claude Code's `--output-format stream-json --verbose` events (shapes as in agents.rs):
/// the session, a Read and a failed Bash, then the result quoting the prompt it read on
/// stdin. It leaves its argv and the prompt in the workspace, its working directory, and
/// keeps its session where Claude Code does, below `~/.claude/projects` (the runner
/// resumes only a session its home holds).
const FAKE_CLAUDE: &str = r#"#!/bin/sh
prompt=$(cat)
echo "$*" >> argv.txt
echo "$prompt" >> notes.txt
mkdir -p "$HOME/.claude/projects/work" && echo "$prompt" >> "$HOME/.claude/projects/work/s1.jsonl"
echo '{"type":"system","subtype":"init","session_id":"s1","tools":["Bash","Read"],"model":"claude-sonnet-4-5"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"src/lib.rs"}}]},"session_id":"s1"}'
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"fn main() {}","is_error":false}]},"session_id":"s1"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Bash","input":{"command":"cargo test"}}]},"session_id":"s1"}'
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_2","type":"tool_result","content":"1 failed","is_error":true}]},"session_id":"s1"}'
printf '{"type":"result","subtype":"success","is_error":false,"result":"Fixed: %s","session_id":"s1","total_cost_usd":0.0109,"usage":{"input_tokens":1000,"cache_creation_input_tokens":100,"cache_read_input_tokens":200,"output_tokens":500},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":1000,"outputTokens":500,"cacheReadInputTokens":200,"cacheCreationInputTokens":100,"costUSD":0.0109}}}\n' "$prompt"
"#;

/// A user's own agent: `my-agent PROMPT_FILE TRANSCRIPT_FILE`, replying with what the
/// transcript holds so far and Gatehouse's usage line.
const FAKE_COMMAND: &str = r#"#!/bin/sh
echo "turns so far: $(wc -l < "$2" | tr -d ' ')"
cat "$2"
echo "you said: $(cat "$1")"
echo '{"gatehouse_usage": {"model": "my-model", "input_tokens": 10, "output_tokens": 20}}'
"#;

/// Dies with a message on stderr.
const EXITS_3: &str = r#"#!/bin/sh
cat > /dev/null
echo 'partial'
echo 'error: the disk is full' >&2
exit 3
"#;

/// Prints nothing Claude Code would.
const GARBAGE: &str = r#"#!/bin/sh
cat > /dev/null
echo 'hello'
echo 'world'
"#;

/// Counts its runs, names its session, then takes its time.
const SLOW: &str = r#"#!/bin/sh
cat > /dev/null
echo run >> invocations.txt
echo '{"type":"system","subtype":"init","session_id":"s-slow","tools":[],"model":"claude-sonnet-4-5"}'
sleep 20
"#;

/// Claude Code that cannot reach its model: one retry announced, a wait, then it gives up.
const RETRYING: &str = r#"#!/bin/sh
cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"s-retry","tools":[],"model":"claude-sonnet-4-5"}'
echo '{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":500,"error_status":503,"error":"server_error","session_id":"s-retry"}'
sleep 4
echo '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 503 overloaded","session_id":"s-retry","modelUsage":{}}'
exit 1
"#;

/// A reviewer that scribbles in the workspace while it looks at it.
const LOOKER: &str = r#"#!/bin/sh
touch scribble.txt
echo "looked at: $(ls | tr '\n' ' ')"
"#;

/// A reviewer that tries to write through the workspace's `escape` link.
const ESCAPER: &str = r#"#!/bin/sh
echo escaped > escape/escaped.txt 2>/dev/null
echo "tried"
"#;

on_both_backends!(
    a_turn_replies_and_the_next_resumes_its_session_in_the_same_workspace,
    a_command_turn_reads_the_conversation_so_far,
    failed_turns_say_why,
    a_turn_shows_its_cli_retrying_and_says_it_gave_up,
    a_stopped_turn_fails_as_stopped,
    a_turn_begun_before_is_interrupted_not_run_again,
    a_turn_outliving_the_shutdown_grace_is_handed_back,
    a_released_workspace_comes_back_from_its_checkpoint,
    an_ask_of_a_read_only_role_changes_nothing,
    a_deliver_opens_the_pull_request_and_the_next_updates_it,
    a_draft_is_opened_as_one_and_an_unchanged_workspace_has_nothing_to_deliver,
    a_delivery_that_cannot_be_made_fails_saying_why,
    a_delivery_lost_after_github_opened_its_pull_request_does_not_open_another,
    turn_attempts_are_begun_once_and_end_once,
    an_ask_cannot_write_through_a_link_back_into_the_workspace,
);

/// A project with one repository on the fake GitHub: the runner delivers to its bare
/// repository under `git/`.
const PROJECT: &str = "[[projects]]\nname = \"api\"\nrepositories = [{ repo = \"acme/api\" }]\n";
const REPO: &str = "acme/api";

/// Writes `script` as an executable `name` in `dir`.
fn install(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A role of `executor` whose CLI is found in `bin`.
fn role(executor: Executor, bin: &Path) -> Role {
    Role {
        model: Some("claude-sonnet-4-5".into()),
        env: BTreeMap::from([("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))]),
        ..Role::new(executor)
    }
}

/// The services with the stand-in CLIs installed, each role finding its own.
async fn stack(backend: Backend) -> Gatehouse {
    let data = tempfile::tempdir().unwrap();
    let configure = configure(data.path());
    Gatehouse::builder_on(TestDb::new(backend).await, data)
        .runner(configure)
        .start()
        .await
}

/// [`stack`] with [`PROJECT`], so the runner clones and delivers its repository.
async fn delivering(backend: Backend) -> Gatehouse {
    let data = tempfile::tempdir().unwrap();
    let configure = configure(data.path());
    Gatehouse::builder_on(TestDb::new(backend).await, data)
        .projects(PROJECT)
        .runner(configure)
        .start()
        .await
}

/// Installs the stand-in CLIs under `data` and gives the runner their roles and prices.
fn configure(data: &Path) -> impl FnOnce(&mut RunnerOptions) + 'static {
    let bin = |name: &str| data.join("bin").join(name);
    install(&bin("assistant"), "claude", FAKE_CLAUDE);
    install(&bin("custom"), "my-agent", FAKE_COMMAND);
    install(&bin("exits"), "claude", EXITS_3);
    install(&bin("garbage"), "claude", GARBAGE);
    install(&bin("slow"), "claude", SLOW);
    install(&bin("retrying"), "claude", RETRYING);
    install(&bin("reviewer"), "looker", LOOKER);
    install(&bin("escaper"), "escaper", ESCAPER);
    std::fs::create_dir_all(bin("missing")).unwrap();
    let mut custom = role(Executor::Command, &bin("custom"));
    custom.command = vec![
        "my-agent".into(),
        "{prompt_file}".into(),
        "{transcript_file}".into(),
    ];
    let mut reviewer = role(Executor::Command, &bin("reviewer"));
    reviewer.command = vec!["looker".into()];
    reviewer.read_only = true;
    reviewer.askable = true;
    let mut escaper = role(Executor::Command, &bin("escaper"));
    escaper.command = vec!["escaper".into()];
    escaper.read_only = true;
    escaper.askable = true;
    let mut roles = BTreeMap::from([
        ("custom".to_owned(), custom),
        ("reviewer".to_owned(), reviewer),
        ("escaper".to_owned(), escaper),
    ]);
    for name in [
        "assistant",
        "exits",
        "garbage",
        "slow",
        "missing",
        "retrying",
    ] {
        roles.insert(name.to_owned(), role(Executor::ClaudeCode, &bin(name)));
    }
    let prices = BTreeMap::from([(
        "claude-sonnet-4-5".to_owned(),
        Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
    )]);
    move |options| {
        options.roles = roles;
        options.prices = prices;
    }
}

/// A conversation as the dispatches name it.
#[derive(Clone, Copy)]
struct Conversation {
    id: Uuid,
    requirement: Uuid,
    /// The project's repositories its workspace checks out.
    repositories: &'static [&'static str],
}

impl Conversation {
    fn new() -> Self {
        Self::on(&[])
    }

    fn on(repositories: &'static [&'static str]) -> Self {
        Self {
            id: Uuid::now_v7(),
            requirement: Uuid::now_v7(),
            repositories,
        }
    }

    /// Stores its requirement, as ingest does when the thread starts.
    async fn record_requirement(&self, stack: &Gatehouse, title: &str) {
        let mut tx = stack.db.store.begin().await.unwrap();
        tx.insert_requirement(&RequirementRow {
            id: self.requirement,
            source_key: format!("slack:C1:{}", self.id),
            source: r#"{"kind":"slack","channel":"C1","thread_ts":"1.2"}"#.into(),
            title: title.into(),
            body: String::new(),
            url: None,
            state: RequirementState::Open,
            requested_by: "ana".into(),
            source_updated_at: String::new(),
            project: Some("api".into()),
            created_at: Utc::now(),
            updated_at: Utc::now(),
        })
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }

    fn key(&self, seq: i64, attempt: i32) -> TurnKey {
        TurnKey {
            conversation_id: self.id,
            seq,
            attempt,
        }
    }

    fn dir(&self, stack: &Gatehouse) -> PathBuf {
        stack.data.path().join(format!("conversations/{}", self.id))
    }

    fn workspace(&self, stack: &Gatehouse) -> PathBuf {
        self.dir(stack).join("workspace")
    }

    /// Whether the store names a checkpoint of the workspace (in the blob store).
    async fn checkpointed(&self, stack: &Gatehouse) -> bool {
        let workspace = format!("conversation:{}", self.id);
        stack
            .db
            .store
            .latest_checkpoint(&workspace)
            .await
            .unwrap()
            .is_some()
    }

    /// Dispatches `task`, as the scheduler does.
    async fn dispatch(&self, stack: &Gatehouse, task: TurnTask) {
        stack
            .emit(Event::TurnDispatch(TurnDispatch {
                conversation_id: self.id,
                requirement_id: self.requirement,
                thread: ChatThread {
                    platform: "slack".into(),
                    channel: "C1".into(),
                    thread: "1.2".into(),
                },
                workspace: RunWorkspace {
                    project: "api".into(),
                    repositories: self
                        .repositories
                        .iter()
                        .map(|repo| RepositoryCheckout {
                            repo: (*repo).into(),
                            branch: None,
                            mode: RepositoryMode::Auto,
                            branch_name: None,
                            url: None,
                            forge: None,
                            path: None,
                            history: Default::default(),
                        })
                        .collect(),
                    settings: BTreeMap::from([("language".into(), "rust".into())]),
                },
                adopt_run: None,
                task,
            }))
            .await;
    }

    /// Dispatches attempt 1 of turn `seq` to `role` and waits for its end.
    async fn turn(
        &self,
        stack: &Gatehouse,
        seq: u64,
        role: &str,
        text: &str,
        resume: Option<&str>,
    ) -> TurnAttemptRow {
        self.dispatch(stack, turn(seq, 1, role, text, resume)).await;
        self.ended(stack, seq as i64, 1).await
    }

    /// Dispatches attempt 1 of the delivery `seq` and waits for its end.
    async fn deliver(&self, stack: &Gatehouse, seq: u64, draft: bool) -> TurnAttemptRow {
        let task = TurnTask::Deliver {
            seq,
            attempt: 1,
            draft,
        };
        self.dispatch(stack, task).await;
        self.ended(stack, seq as i64, 1).await
    }

    /// The attempt, once it has ended.
    async fn ended(&self, stack: &Gatehouse, seq: i64, attempt: i32) -> TurnAttemptRow {
        let key = self.key(seq, attempt);
        for _ in 0..1000 {
            if let Some(row) = stack.db.store.turn_attempt(key).await.unwrap()
                && row.status != TurnStatus::Running
            {
                return row;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("turn {seq} attempt {attempt} did not end");
    }

    /// What the turn's progress message says.
    async fn progress(&self, stack: &Gatehouse, seq: u64) -> String {
        let key = format!("conversation:{}:turn:{seq}:progress", self.id);
        let row = stack.db.store.chat_message(&key).await.unwrap();
        let row = row.unwrap_or_else(|| panic!("no progress message {key}"));
        assert_eq!(
            (
                row.platform.as_str(),
                row.channel.as_str(),
                row.thread.as_deref()
            ),
            ("slack", "C1", Some("1.2"))
        );
        match serde_json::from_str(&row.body).unwrap() {
            gatehouse_chat::Body::Text { text } => text,
            other => panic!("not a text message: {other:?}"),
        }
    }
}

fn turn(seq: u64, attempt: u32, role: &str, text: &str, resume: Option<&str>) -> TurnTask {
    TurnTask::Turn {
        seq,
        attempt,
        role: role.into(),
        text: text.into(),
        resume_session: resume.map(Into::into),
        ask: false,
        timeout_secs: None,
        feedback: None,
    }
}

/// The first `n` `turn.finished` events on the bus, read by a consumer of the test's own.
async fn finished(store: &Store, n: usize) -> Vec<TurnFinished> {
    let bus = InProcessBus::new(store.clone());
    let name = format!("test-{}", Uuid::now_v7().simple());
    let mut events = bus
        .subscribe(&ConsumerSpec::new(name, "turn.finished"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < n {
        let delivery = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("turn.finished on the bus")
            .unwrap();
        let envelope = Envelope::from_slice(&delivery.payload).unwrap();
        if let Event::TurnFinished(finished) = envelope.decode().unwrap() {
            seen.push(finished);
        }
        delivery.ack().await.unwrap();
    }
    seen
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The conversation's transcript once it has `expected` lines, or as it is after a few
/// seconds: the runner adds a turn's exchange after it has reported the turn's end.
async fn transcript_after_turn(dir: &Path, expected: usize) -> Vec<String> {
    let path = dir.join("transcript.jsonl");
    for _ in 0..250 {
        let found = lines(&path);
        if found.len() >= expected {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    lines(&path)
}

async fn a_turn_replies_and_the_next_resumes_its_session_in_the_same_workspace(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    let first = c.turn(&stack, 1, "assistant", "fix the login", None).await;
    assert_eq!(
        (
            first.status,
            first.reply.as_deref(),
            first.session_id.as_deref()
        ),
        (
            TurnStatus::Replied,
            Some("Fixed: fix the login"),
            Some("s1")
        ),
        "{first:?}"
    );
    assert!(
        first.duration_ms >= first.cli_ms && first.cli_ms.is_some(),
        "{first:?}"
    );
    let done = c.progress(&stack, 1).await;
    assert!(
        done.starts_with("Done in ") && done.ends_with("s · 2 tools · 1,800 tokens"),
        "{done}"
    );

    let second = c
        .turn(&stack, 2, "assistant", "and the logout", Some("s1"))
        .await;
    assert_eq!(second.reply.as_deref(), Some("Fixed: and the logout"));
    let workspace = c.workspace(&stack);
    let argv = lines(&workspace.join("argv.txt"));
    assert_eq!(argv.len(), 2, "one workspace, kept: {argv:?}");
    assert!(!argv[0].contains("--resume"), "{argv:?}");
    assert!(argv[1].contains("--resume s1"), "{argv:?}");
    assert_eq!(
        lines(&workspace.join("notes.txt")),
        ["fix the login", "and the logout"]
    );
    assert!(
        c.checkpointed(&stack).await,
        "checkpointed into the blob store"
    );

    let calls = stack.db.store.turn_tool_calls(c.id).await.unwrap();
    let tools: Vec<(i64, &str, &str, bool)> = calls
        .iter()
        .map(|t| (t.seq, t.tool.as_str(), t.summary.as_str(), t.failed))
        .collect();
    assert_eq!(
        tools,
        [
            (1, "Read", "src/lib.rs", false),
            (1, "Bash", "cargo test", true),
            (2, "Read", "src/lib.rs", false),
            (2, "Bash", "cargo test", true),
        ]
    );
    let usage = stack.db.store.turn_usage(c.id).await.unwrap();
    assert_eq!(usage.len(), 2);
    assert_eq!(
        (
            usage[0].requirement_id,
            usage[0].input_tokens,
            usage[0].cache_write_tokens
        ),
        (c.requirement, 1000, 100)
    );
    let total = stack
        .db
        .store
        .requirement_turn_usage(c.requirement)
        .await
        .unwrap();
    assert_eq!(total.len(), 1);
    assert_eq!(
        (total[0].input_tokens, total[0].output_tokens),
        (2000, 1000)
    );
    assert!((total[0].cost_usd.unwrap() - 2.0 * 0.010935).abs() < 1e-9);

    let reported = finished(&stack.db.store, 2).await;
    assert_eq!(
        reported
            .iter()
            .map(|f| (f.seq, f.attempt, f.outcome.clone(), f.session_id.as_deref()))
            .collect::<Vec<_>>(),
        [
            (
                1,
                1,
                TurnOutcome::Replied {
                    reply: "Fixed: fix the login".into()
                },
                Some("s1")
            ),
            (
                2,
                1,
                TurnOutcome::Replied {
                    reply: "Fixed: and the logout".into()
                },
                Some("s1")
            ),
        ]
    );
    stack.stop().await;
}

async fn a_command_turn_reads_the_conversation_so_far(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    let first = c.turn(&stack, 1, "custom", "hello", None).await;
    assert_eq!(
        first.reply.as_deref(),
        Some("turns so far: 0\nyou said: hello"),
        "the usage line is not part of the reply"
    );
    let second = c.turn(&stack, 2, "custom", "again", None).await;
    assert_eq!(
        second.reply.as_deref(),
        Some(
            "turns so far: 2\n{\"role\":\"user\",\"text\":\"hello\"}\n{\"role\":\"assistant\",\"text\":\"turns so far: 0\\nyou said: hello\"}\nyou said: again"
        )
    );
    assert_eq!(transcript_after_turn(&c.dir(&stack), 4).await.len(), 4);
    let usage = stack.db.store.turn_usage(c.id).await.unwrap();
    assert_eq!(
        (
            usage[0].model.as_str(),
            usage[0].input_tokens,
            usage[0].output_tokens,
            usage[0].cost_usd
        ),
        ("my-model", 10, 20, None)
    );
    let done = c.progress(&stack, 2).await;
    assert!(
        done.starts_with("Done in ") && done.ends_with("s · 30 tokens"),
        "{done}"
    );
    stack.stop().await;
}

async fn failed_turns_say_why(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    for (seq, role, reason) in [
        (
            1,
            "exits",
            "the CLI exited with code 3: error: the disk is full",
        ),
        (
            2,
            "garbage",
            "the CLI ended without a result; 2 lines of its output could not be read",
        ),
        (
            3,
            "missing",
            "the sandbox has no `claude` command (role `missing`, executor claude-code)",
        ),
        (
            4,
            "nobody",
            "the role `nobody` is not configured (add [roles.nobody])",
        ),
    ] {
        let row = c.turn(&stack, seq, role, "try", None).await;
        assert_eq!(
            (row.status, row.failure.as_deref()),
            (TurnStatus::Failed, Some(reason)),
            "{role}"
        );
        let message = c.progress(&stack, seq).await;
        assert!(message.starts_with("Failed after "), "{message}");
    }
    let reported = finished(&stack.db.store, 4).await;
    assert!(
        reported
            .iter()
            .all(|f| matches!(f.outcome, TurnOutcome::Failed { .. })),
        "{reported:?}"
    );
    stack.stop().await;
}

/// Issue 38 item 8: while the CLI waits to retry its model, the thread's progress message
/// says so; when it gives up, the failure names the retries.
async fn a_turn_shows_its_cli_retrying_and_says_it_gave_up(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    c.dispatch(&stack, turn(1, 1, "retrying", "try", None))
        .await;
    let key = format!("conversation:{}:turn:1:progress", c.id);
    let mut shown = String::new();
    for _ in 0..300 {
        if let Some(row) = stack.db.store.chat_message(&key).await.unwrap() {
            shown = row.body;
            if shown.contains("model API unreachable") {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        shown.contains("model API unreachable, retry 1/1 (503 server_error)"),
        "{shown}"
    );
    let row = c.ended(&stack, 1, 1).await;
    assert_eq!(
        (row.status, row.failure.as_deref()),
        (
            TurnStatus::Failed,
            Some(
                "the CLI exited with code 1: API Error: 503 overloaded; it gave up after 1 retry \
                 of the model request (last: 503 server_error)"
            )
        )
    );
    let message = c.progress(&stack, 1).await;
    assert!(message.starts_with("Failed after "), "{message}");
    stack.stop().await;
}

async fn a_stopped_turn_fails_as_stopped(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    c.dispatch(&stack, turn(1, 1, "slow", "take your time", None))
        .await;
    wait_for_session(&stack, c.key(1, 1)).await;
    let asked = Instant::now();
    stack
        .emit(Event::TurnCancel(TurnCancel {
            conversation_id: c.id,
            seq: 1,
            attempt: 1,
        }))
        .await;
    let row = c.ended(&stack, 1, 1).await;
    assert_eq!(
        (
            row.status,
            row.failure.as_deref(),
            row.session_id.as_deref()
        ),
        (TurnStatus::Failed, Some("stopped"), Some("s-slow"))
    );
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    let message = c.progress(&stack, 1).await;
    assert!(message.starts_with("Stopped after "), "{message}");

    // A cancel that comes before its job: the attempt never runs.
    stack
        .emit(Event::TurnCancel(TurnCancel {
            conversation_id: c.id,
            seq: 2,
            attempt: 1,
        }))
        .await;
    wait_for_cancel(&stack, c.key(2, 1)).await;
    let row = c.turn(&stack, 2, "slow", "never mind", None).await;
    assert_eq!(row.failure.as_deref(), Some("stopped"));
    assert_eq!(lines(&c.workspace(&stack).join("invocations.txt")).len(), 1);
    stack.stop().await;
}

async fn a_turn_begun_before_is_interrupted_not_run_again(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    c.dispatch(&stack, turn(1, 1, "slow", "take your time", None))
        .await;
    wait_for_session(&stack, c.key(1, 1)).await;
    // The runner dies mid-turn; its job comes back to the runner of the next process.
    let (db, data) = stack.crash();
    let configure = configure(data.path());
    let stack = Gatehouse::builder_on(db, data)
        .runner(configure)
        .start()
        .await;
    let row = c.ended(&stack, 1, 1).await;
    assert_eq!(
        (row.status, row.session_id.as_deref()),
        (TurnStatus::Interrupted, Some("s-slow"))
    );
    assert_eq!(
        lines(&c.workspace(&stack).join("invocations.txt")),
        ["run"],
        "never run twice"
    );
    assert_eq!(
        c.progress(&stack, 1).await,
        "Interrupted (the runner stopped); trying again"
    );
    let reported = finished(&stack.db.store, 1).await;
    assert_eq!(
        (
            reported[0].outcome.clone(),
            reported[0].session_id.as_deref()
        ),
        (TurnOutcome::Interrupted, Some("s-slow"))
    );
    stack.stop().await;
}

async fn a_turn_outliving_the_shutdown_grace_is_handed_back(backend: Backend) {
    let data = tempfile::tempdir().unwrap();
    let setup = configure(data.path());
    let stack = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .runner(setup)
        .runner(|options| options.shutdown_grace = Duration::from_millis(300))
        .start()
        .await;
    let c = Conversation::new();
    c.dispatch(&stack, turn(1, 1, "slow", "take your time", None))
        .await;
    wait_for_session(&stack, c.key(1, 1)).await;
    let stopping = Instant::now();
    let (db, data) = stack.halt().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "{:?}",
        stopping.elapsed()
    );
    let row = db.store.turn_attempt(c.key(1, 1)).await.unwrap().unwrap();
    assert_eq!(
        row.status,
        TurnStatus::Running,
        "nothing is reported at shutdown"
    );
    // Handed back: the next process's runner finds it begun.
    let setup = configure(data.path());
    let stack = Gatehouse::builder_on(db, data).runner(setup).start().await;
    let row = c.ended(&stack, 1, 1).await;
    assert_eq!(row.status, TurnStatus::Interrupted);
    assert_eq!(lines(&c.workspace(&stack).join("invocations.txt")), ["run"]);
    stack.stop().await;
}

async fn a_released_workspace_comes_back_from_its_checkpoint(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    c.turn(&stack, 1, "assistant", "first", None).await;
    let workspace = c.workspace(&stack);
    assert!(workspace.join("notes.txt").exists());
    c.dispatch(&stack, TurnTask::Release { timer: 1 }).await;
    stack
        .until("the workspace to be released", || {
            (!workspace.exists()).then_some(())
        })
        .await;
    assert!(
        c.checkpointed(&stack).await,
        "checkpointed into the blob store"
    );
    // Released again: nothing to do.
    c.dispatch(&stack, TurnTask::Release { timer: 2 }).await;

    let second = c.turn(&stack, 2, "assistant", "second", Some("s1")).await;
    assert_eq!(second.status, TurnStatus::Replied);
    assert_eq!(lines(&workspace.join("notes.txt")), ["first", "second"]);
    stack.stop().await;
}

async fn an_ask_of_a_read_only_role_changes_nothing(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    c.turn(&stack, 1, "assistant", "first", None).await;
    c.dispatch(
        &stack,
        TurnTask::Turn {
            seq: 2,
            attempt: 1,
            role: "reviewer".into(),
            text: "what do you think?".into(),
            resume_session: None,
            ask: true,
            timeout_secs: None,
            feedback: None,
        },
    )
    .await;
    let row = c.ended(&stack, 2, 1).await;
    assert!(row.ask);
    assert_eq!(
        row.reply.as_deref(),
        Some("looked at: argv.txt notes.txt scribble.txt")
    );
    let workspace = c.workspace(&stack);
    assert!(
        !workspace.join("scribble.txt").exists(),
        "a copy was scribbled on"
    );
    assert!(workspace.join("notes.txt").exists());
    assert_eq!(
        lines(&c.dir(&stack).join("transcript.jsonl")).len(),
        2,
        "the ask is not part of the assistant's conversation"
    );
    let scratch = c.dir(&stack).join("scratch");
    assert_eq!(
        std::fs::read_dir(&scratch).map(|d| d.count()).unwrap_or(0),
        0,
        "the copy is gone"
    );
    stack.stop().await;
}

async fn an_ask_cannot_write_through_a_link_back_into_the_workspace(backend: Backend) {
    let stack = stack(backend).await;
    let c = Conversation::new();
    c.turn(&stack, 1, "assistant", "first", None).await;
    // From the read-only copy (`scratch/read-only-…`), this leads to the workspace.
    let workspace = c.workspace(&stack);
    std::os::unix::fs::symlink("../../workspace", workspace.join("escape")).unwrap();
    c.dispatch(
        &stack,
        TurnTask::Turn {
            seq: 2,
            attempt: 1,
            role: "escaper".into(),
            text: "have a look".into(),
            resume_session: None,
            ask: true,
            timeout_secs: None,
            feedback: None,
        },
    )
    .await;
    let row = c.ended(&stack, 2, 1).await;
    assert_eq!(row.reply.as_deref(), Some("tried"));
    assert!(
        !workspace.join("escaped.txt").exists(),
        "the ask wrote into the workspace through a link"
    );
    assert!(
        workspace.join("escape").is_symlink(),
        "the workspace keeps its link"
    );
    stack.stop().await;
}

/// The bare repository the fake GitHub's `repo` is pushed to.
fn bare(stack: &Gatehouse, repo: &str) -> PathBuf {
    stack.data.path().join(format!("git/{repo}.git"))
}

/// The pull requests recorded for the requirement: repository, number, what delivered
/// into it last, and its branch.
async fn recorded(stack: &Gatehouse, c: &Conversation) -> Vec<(String, i64, Uuid, String)> {
    let rows = stack
        .db
        .store
        .pull_requests_of_requirement(c.requirement)
        .await
        .unwrap();
    rows.into_iter()
        .map(|r| (r.repo, r.number, r.run_id, r.branch))
        .collect()
}

async fn a_deliver_opens_the_pull_request_and_the_next_updates_it(backend: Backend) {
    let stack = delivering(backend).await;
    let c = Conversation::on(&[REPO]);
    c.record_requirement(&stack, "Fix the login").await;
    let first = c.turn(&stack, 1, "assistant", "fix the login", None).await;
    assert_eq!(first.status, TurnStatus::Replied, "{first:?}");

    let delivered = c.deliver(&stack, 2, false).await;
    let pulls = stack.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let pull = pulls[0].clone();
    let url = format!("https://github.com/{REPO}/pull/{}", pull.number);
    assert_eq!(
        (
            delivered.status,
            delivered.role.as_str(),
            delivered.ask,
            delivered.reply.clone()
        ),
        (
            TurnStatus::Replied,
            "deliver",
            false,
            Some(format!("Opened {REPO}#{}: {url}", pull.number))
        ),
        "{delivered:?}"
    );
    assert_eq!(
        (
            pull.repo.as_str(),
            pull.base.as_str(),
            pull.title.as_str(),
            pull.draft
        ),
        (REPO, "main", "Fix the login", false)
    );
    assert!(pull.head.starts_with("gatehouse/r-"), "{pull:?}");
    assert!(
        pull.body
            .contains(&format!("Delivered by Gatehouse conversation `{}`", c.id)),
        "{}",
        pull.body
    );
    let work = |file: &str| {
        git(
            &bare(&stack, REPO),
            &["show", &format!("{}:{file}", pull.head)],
        )
    };
    assert_eq!(work("notes.txt"), "fix the login\n");
    assert_eq!(work("README.md"), "Hello World\n");
    assert_eq!(
        recorded(&stack, &c).await,
        [(REPO.to_owned(), pull.number as i64, c.id, pull.head.clone())],
        "recorded with the requirement, the conversation delivering"
    );
    let message = c.progress(&stack, 2).await;
    assert!(
        message.starts_with("Delivered in ") && message.ends_with(" · 1 pull request"),
        "{message}"
    );

    // More work, delivered again: the same pull request, its branch moved on.
    c.turn(&stack, 3, "assistant", "and the logout", Some("s1"))
        .await;
    let again = c.deliver(&stack, 4, true).await;
    assert_eq!(
        again.reply,
        Some(format!("Updated {REPO}#{}: {url}", pull.number)),
        "an open pull request is updated, not made a draft: {again:?}"
    );
    let pulls = stack.github.pulls();
    assert_eq!(pulls.len(), 1, "one pull request: {pulls:#?}");
    assert_eq!(work("notes.txt"), "fix the login\nand the logout\n");
    let commits = git(
        &bare(&stack, REPO),
        &["rev-list", "--count", &format!("main..{}", pull.head)],
    );
    assert_eq!(commits.trim(), "2", "one commit per delivery");
    assert_eq!(recorded(&stack, &c).await.len(), 1);

    let reported = finished(&stack.db.store, 4).await;
    let deliveries: Vec<(u64, TurnOutcome, Option<String>)> = reported
        .into_iter()
        .filter(|f| f.seq % 2 == 0)
        .map(|f| (f.seq, f.outcome, f.session_id))
        .collect();
    assert_eq!(
        deliveries,
        [
            (
                2,
                TurnOutcome::Replied {
                    reply: format!("Opened {REPO}#{}: {url}", pull.number)
                },
                None
            ),
            (
                4,
                TurnOutcome::Replied {
                    reply: format!("Updated {REPO}#{}: {url}", pull.number)
                },
                None
            ),
        ]
    );
    stack.stop().await;
}

async fn a_draft_is_opened_as_one_and_an_unchanged_workspace_has_nothing_to_deliver(
    backend: Backend,
) {
    let stack = delivering(backend).await;
    // No requirement stored: the pull request is named after the conversation.
    let c = Conversation::on(&[REPO]);
    let nothing = c.deliver(&stack, 1, true).await;
    assert_eq!(
        (nothing.status, nothing.reply.as_deref()),
        (
            TurnStatus::Replied,
            Some("Nothing to deliver: no repository has changes.")
        ),
        "{nothing:?}"
    );
    assert_eq!(c.progress(&stack, 1).await, "Nothing to deliver");
    assert!(stack.github.pulls().is_empty());
    assert!(
        c.workspace(&stack).join("README.md").exists(),
        "checked out to be delivered"
    );

    c.turn(&stack, 2, "assistant", "fix it", None).await;
    let draft = c.deliver(&stack, 3, true).await;
    let pulls = stack.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let pull = &pulls[0];
    assert!(pull.draft, "{pull:?}");
    assert_eq!(pull.title, format!("Gatehouse conversation {}", c.id));
    assert_eq!(
        draft.reply,
        Some(format!(
            "Opened {REPO}#{n} (draft): https://github.com/{REPO}/pull/{n}",
            n = pull.number
        ))
    );
    stack.stop().await;
}

async fn a_delivery_that_cannot_be_made_fails_saying_why(backend: Backend) {
    // No GitHub: the node's reason.
    let stack = stack(backend).await;
    let c = Conversation::on(&[REPO]);
    let row = c.deliver(&stack, 1, false).await;
    assert_eq!(
        (row.status, row.failure.as_deref()),
        (
            TurnStatus::Failed,
            Some(
                "deliver needs a way to the repositories: [github] with a token or an app, or repositories that name their own `url` (or `forge`)"
            )
        )
    );
    assert!(
        c.progress(&stack, 1)
            .await
            .starts_with("Delivery failed after ")
    );
    let reported = finished(&stack.db.store, 1).await;
    assert!(
        matches!(&reported[0].outcome, TurnOutcome::Failed { reason } if reason.starts_with("deliver needs a way to the repositories")),
        "{reported:?}"
    );
    stack.stop().await;

    let stack = delivering(backend).await;
    let none = Conversation::new();
    let row = none.deliver(&stack, 1, false).await;
    assert_eq!(
        row.failure.as_deref(),
        Some("deliver needs repositories: the conversation's project has none")
    );

    // Stopped before it starts: nothing is delivered.
    let stopped = Conversation::on(&[REPO]);
    stopped.turn(&stack, 1, "assistant", "fix it", None).await;
    stack
        .emit(Event::TurnCancel(TurnCancel {
            conversation_id: stopped.id,
            seq: 2,
            attempt: 1,
        }))
        .await;
    wait_for_cancel(&stack, stopped.key(2, 1)).await;
    let row = stopped.deliver(&stack, 2, false).await;
    assert_eq!(row.failure.as_deref(), Some("stopped"), "{row:?}");
    let message = stopped.progress(&stack, 2).await;
    assert!(message.starts_with("Stopped after "), "{message}");
    assert!(stack.github.pulls().is_empty());

    // The remote refuses the push (a branch `gatehouse` leaves no room for
    // `gatehouse/…`): the reason names the branch and the repository, and nothing is opened.
    let c = Conversation::on(&[REPO]);
    c.turn(&stack, 1, "assistant", "fix it", None).await;
    git(
        &bare(&stack, REPO),
        &["update-ref", "refs/heads/gatehouse", "main"],
    );
    let row = c.deliver(&stack, 2, false).await;
    assert_eq!(row.status, TurnStatus::Failed, "{row:?}");
    let reason = row.failure.unwrap_or_default();
    assert!(
        reason.starts_with("pushing `gatehouse/r-")
            && reason.contains(&format!("` to {REPO} failed: ")),
        "{reason}"
    );
    assert!(stack.github.pulls().is_empty());
    assert!(recorded(&stack, &c).await.is_empty());
    stack.stop().await;
}

async fn a_delivery_lost_after_github_opened_its_pull_request_does_not_open_another(
    backend: Backend,
) {
    let stack = delivering(backend).await;
    let c = Conversation::on(&[REPO]);
    c.turn(&stack, 1, "assistant", "fix it", None).await;
    // GitHub opens the pull request and the process dies before the answer comes.
    stack.github.hold_pull_creates(true);
    let attempt = |attempt| TurnTask::Deliver {
        seq: 2,
        attempt,
        draft: false,
    };
    c.dispatch(&stack, attempt(1)).await;
    stack
        .until("a pull request", || {
            (!stack.github.pulls().is_empty()).then_some(())
        })
        .await;
    let github = stack.github.clone();
    let (db, data) = stack.crash();
    github.hold_pull_creates(false);
    let configure = configure(data.path());
    let stack = Gatehouse::builder_on(db, data)
        .projects(PROJECT)
        .fake_github(github)
        .runner(configure)
        .start()
        .await;
    let lost = c.ended(&stack, 2, 1).await;
    assert_eq!(lost.status, TurnStatus::Interrupted, "{lost:?}");

    // The next attempt finds the pull request open: it is the thread's, recorded, once.
    c.dispatch(&stack, attempt(2)).await;
    let row = c.ended(&stack, 2, 2).await;
    let pulls = stack.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let number = pulls[0].number;
    assert_eq!(
        row.reply,
        Some(format!(
            "Opened {REPO}#{number}: https://github.com/{REPO}/pull/{number}"
        )),
        "{row:?}"
    );
    let creates = stack
        .github
        .calls()
        .iter()
        .filter(|call| *call == &format!("POST /repos/{REPO}/pulls"))
        .count();
    assert_eq!(creates, 1, "found open, not created again");
    assert_eq!(
        recorded(&stack, &c).await,
        [(REPO.to_owned(), number as i64, c.id, pulls[0].head.clone())]
    );
    stack.stop().await;
}

async fn wait_for_session(stack: &Gatehouse, key: TurnKey) {
    for _ in 0..1000 {
        let row = stack.db.store.turn_attempt(key).await.unwrap();
        if row.is_some_and(|r| r.session_id.is_some()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the turn never named its session");
}

async fn wait_for_cancel(stack: &Gatehouse, key: TurnKey) {
    for _ in 0..1000 {
        if stack.db.store.turn_cancelled(key).await.unwrap() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the cancel was never recorded");
}

async fn turn_attempts_are_begun_once_and_end_once(backend: Backend) {
    let db = TestDb::new(backend).await;
    let store = &db.store;
    let (conversation, requirement) = (Uuid::now_v7(), Uuid::now_v7());
    let key = |seq, attempt| TurnKey {
        conversation_id: conversation,
        seq,
        attempt,
    };
    let begin = |key| NewTurnAttempt {
        key,
        requirement_id: requirement,
        role: "assistant",
        ask: false,
    };
    assert!(store.begin_turn_attempt(&begin(key(1, 1))).await.unwrap());
    assert!(
        !store.begin_turn_attempt(&begin(key(1, 1))).await.unwrap(),
        "begun before"
    );
    let mut tx = store.begin().await.unwrap();
    tx.record_turn_session(key(1, 1), "s-1").await.unwrap();
    tx.commit().await.unwrap();

    let tool = TurnToolCallRow {
        conversation_id: conversation,
        seq: 1,
        attempt: 1,
        n: 0,
        tool: "Bash".into(),
        summary: "cargo test".into(),
        started_ms: 5,
        duration_ms: Some(7),
        failed: false,
    };
    let usage = |attempt, model: &str, cost| TurnUsageRow {
        conversation_id: conversation,
        seq: 1,
        attempt,
        model: model.into(),
        requirement_id: requirement,
        input_tokens: 10,
        output_tokens: 20,
        cache_read_tokens: 30,
        cache_write_tokens: 40,
        cost_usd: cost,
    };
    let rows = [usage(1, "m", Some(0.25)), usage(1, "n", None)];
    let ending = TurnEnd {
        key: key(1, 1),
        status: TurnStatus::Replied,
        session_id: None,
        reply: Some("done"),
        failure: None,
        duration_ms: Some(900),
        cli_ms: Some(800),
        tools: std::slice::from_ref(&tool),
        usage: &rows,
    };
    let mut tx = store.begin().await.unwrap();
    assert!(tx.finish_turn_attempt(&ending).await.unwrap());
    tx.commit().await.unwrap();
    let mut tx = store.begin().await.unwrap();
    assert!(
        !tx.finish_turn_attempt(&TurnEnd {
            status: TurnStatus::Interrupted,
            ..ending
        })
        .await
        .unwrap(),
        "an ended attempt stays as it ended"
    );
    tx.commit().await.unwrap();

    // A second attempt, and another conversation of the same requirement.
    assert!(store.begin_turn_attempt(&begin(key(1, 2))).await.unwrap());
    let more = [usage(2, "m", Some(0.5))];
    let mut tx = store.begin().await.unwrap();
    tx.finish_turn_attempt(&TurnEnd {
        key: key(1, 2),
        status: TurnStatus::Failed,
        session_id: Some("s-2"),
        reply: None,
        failure: Some("stopped"),
        duration_ms: Some(1),
        cli_ms: None,
        tools: &[],
        usage: &more,
    })
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let attempts = store.turn_attempts(conversation).await.unwrap();
    let seen: Vec<_> = attempts
        .iter()
        .map(|a| {
            (
                a.seq,
                a.attempt,
                a.status,
                a.session_id.as_deref(),
                a.reply.as_deref(),
                a.failure.as_deref(),
                a.duration_ms,
                a.cli_ms,
                a.finished_at.is_some(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                1,
                1,
                TurnStatus::Replied,
                Some("s-1"),
                Some("done"),
                None,
                Some(900),
                Some(800),
                true
            ),
            (
                1,
                2,
                TurnStatus::Failed,
                Some("s-2"),
                None,
                Some("stopped"),
                Some(1),
                None,
                true
            ),
        ]
    );
    assert_eq!(store.turn_tool_calls(conversation).await.unwrap(), [tool]);
    assert_eq!(
        store.turn_usage(conversation).await.unwrap(),
        [
            usage(1, "m", Some(0.25)),
            usage(1, "n", None),
            usage(2, "m", Some(0.5))
        ]
    );
    let totals = store.requirement_turn_usage(requirement).await.unwrap();
    let summed: Vec<_> = totals
        .iter()
        .map(|t| {
            (
                t.model.as_str(),
                t.input_tokens,
                t.cache_write_tokens,
                t.cost_usd,
            )
        })
        .collect();
    assert_eq!(summed, [("m", 20, 80, Some(0.75)), ("n", 10, 40, None)]);
    assert!(
        store
            .turn_attempts(Uuid::now_v7())
            .await
            .unwrap()
            .is_empty()
    );

    assert!(!store.turn_cancelled(key(3, 1)).await.unwrap());
    for _ in 0..2 {
        let mut tx = store.begin().await.unwrap();
        tx.record_turn_cancel(key(3, 1)).await.unwrap();
        tx.commit().await.unwrap();
    }
    assert!(store.turn_cancelled(key(3, 1)).await.unwrap());
    assert!(!store.turn_cancelled(key(3, 2)).await.unwrap());
    db.cleanup().await;
}
