//! Conversations end to end against the fake Slack: a mention in a project's channel is a
//! turn of the assistant role, run by the real runner in the conversation's kept
//! workspace, continuing one CLI session across turns; messages during a turn queue,
//! `steer` interrupts, `stop` and `status` answer; another role answers `ask`; a turn
//! killed with the process runs once more after the restart, resuming its session, and
//! nothing is posted twice. The CLIs are stand-ins speaking Claude Code's stream-json and
//! a `command` executor's plain output.

#[path = "agent_clis/installed.rs"]
mod installed;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_blobs::{BlobStore, LocalBlobs};
use gatehouse_discord::GatewaySink;
use gatehouse_ingest::DiscordSink;
use gatehouse_ingest::Scope;
use gatehouse_runner::RunnerOptions;
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_scheduler::AssistantSettings;
use gatehouse_store::{ConnectionOwner, ConnectionRow, ConnectionVerdict, HomeRow};
use gatehouse_tests::fake_slack::{BOT_USER, SlackMessage};
use gatehouse_tests::gatehouse::chat::{self, ANA, BO, CY, DISCORD_REQUESTS};
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};
use serde_json::{Value, json};
use uuid::Uuid;

const PROJECTS: &str = r#"
[[projects]]
name = "api"
repositories = [{ repo = "acme/api" }]
channels = ["slack:C0API", "discord:900000000000000002"]
converse = ["ana", "bo"]
"#;

const CHANNEL: &str = "C0API";

/// Claude Code as a conversation sees it: reads the message on stdin, keeps a turn count
/// in the workspace, resumes the session it is given (or names a new one), calls a tool,
/// and answers with the count and the message. A message saying `slow` takes 30 s, one
/// saying `pause` 5 s. Every call is logged to `$CALLS`. Its sessions are kept as Claude
/// Code keeps them, one file each below `~/.claude/projects` (in the directory of the
/// working directory that started it), written as the turn starts; asked to resume one its
/// home lacks, it fails as Claude Code does.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
prompt=$(cat)
echo "$*" >> "$CALLS"
session="sess-$$"
file="$HOME/.claude/projects/$(pwd | tr / -)/$session.jsonl"
case "$*" in *--resume*)
    session=$(echo "$*" | sed 's/.*--resume \([^ ]*\).*/\1/')
    file=$(ls "$HOME"/.claude/projects/*/"$session.jsonl" 2> /dev/null | head -n 1)
    if [ -z "$file" ]; then
        echo '{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"session_id":"'"$session"'"}'
        echo "No conversation found with session ID: $session" >&2
        exit 1
    fi;;
esac
mkdir -p "$(dirname "$file")" && echo "$prompt" >> "$file"
n=$(cat .turns 2>/dev/null || echo 0); n=$((n+1)); echo $n > .turns
echo '{"type":"system","subtype":"init","session_id":"'"$session"'","tools":["Bash","Edit"],"model":"claude-sonnet-4-5"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"src/health.rs","old_string":"a","new_string":"b"}}]},"session_id":"'"$session"'"}'
case "$prompt" in *slow*) sleep 30;; *pause*) sleep 5;; esac
echo "$prompt" >> notes.txt
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"ok","is_error":false}]},"session_id":"'"$session"'"}'
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":40,"num_turns":2,"result":"Turn %s: %s","session_id":"%s","usage":{"input_tokens":100,"output_tokens":50},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":100,"outputTokens":50,"costUSD":0.001}}}\n' "$n" "$prompt" "$session"
"#;

/// `codex exec --json` as a conversation sees it (event shapes from
/// domain/agent/tests/fixtures/codex_*.jsonl): the thread it resumes (`exec … resume ID -`)
/// or a new one, a command, and the agent's message with the turn count. Its threads are
/// kept as Codex keeps them, below `~/.codex/sessions`; one its home lacks is not resumed.
const FAKE_CODEX: &str = r#"#!/bin/sh
prompt=$(cat)
echo "$*" >> "$CALLS"
thread="thread-$$"
case "$*" in *" resume "*)
    thread=$(echo "$*" | sed 's/.* resume \([^ ]*\) .*/\1/')
    if ! ls "$HOME"/.codex/sessions/*/*/*/rollout-*-"$thread.jsonl" > /dev/null 2>&1; then
        echo "Error: thread/resume failed: no rollout found for thread id $thread" >&2
        exit 1
    fi;;
esac
sessions="$HOME/.codex/sessions/2026/01/01"
mkdir -p "$sessions" && echo "$prompt" >> "$sessions/rollout-2026-01-01T00-00-00-$thread.jsonl"
n=$(cat .turns 2>/dev/null || echo 0); n=$((n+1)); echo $n > .turns
echo '{"type":"thread.started","thread_id":"'"$thread"'"}'
echo '{"type":"turn.started"}'
echo '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}'
echo '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc ls","aggregated_output":"src\n","exit_code":0,"status":"completed"}}'
echo '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Codex turn '"$n"': '"$prompt"'"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":20,"output_tokens":30}}'
"#;

/// A reviewer of the `command` executor: reads the notes the assistant left and says so.
const FAKE_REVIEWER: &str = r#"#!/bin/sh
echo "reviewed $(wc -l < notes.txt) notes"
echo '{"gatehouse_usage": {"model": "review-model", "input_tokens": 7, "output_tokens": 3}}'
"#;

on_both_backends!(
    a_three_turn_conversation_continues_one_cli_session,
    messages_queue_steer_interrupts_and_stop_and_status_answer,
    a_turn_killed_with_the_process_runs_once_more_resuming_its_session,
    on_discord_a_reply_to_the_bot_continues_the_conversation,
    an_idle_workspace_is_released_and_the_next_message_restores_it,
    deliver_opens_the_pull_request_from_chat_and_updates_it,
    an_sop_run_takes_the_workspace_and_gives_it_back,
    take_over_pauses_a_run_and_carries_on_from_its_workspace,
    a_codex_assistant_continues_its_thread,
    a_turn_of_the_real_claude_code_goes_through_the_gateway,
    a_turn_on_another_runner_resumes_the_session_its_home_left,
    a_codex_thread_follows_its_conversation_to_another_runner,
    a_home_past_its_limit_stays_on_its_runner_and_another_starts_a_new_session,
    a_tampered_home_is_refused_and_the_turn_starts_a_new_session,
    the_real_claude_code_resumes_its_session_on_another_runner,
);

/// Started from a conversation's thread: sees the turn count the conversation left, and
/// leaves one of its own.
const POLISH: &str = "name: polish\nnodes:\n  polish: { kind: script, run: 'cat .turns > $GATEHOUSE_ARTIFACTS/seen.txt; echo polished >> notes.txt; echo 5 > .turns', artifacts: [seen.txt] }\n";
/// Works, then waits for a person.
const LONG: &str = "name: long\nnodes:\n  work: { kind: script, run: 'echo 9 > .turns' }\n  review: { kind: gate, needs: [work], approvers: [bo] }\n";

/// Writes `script` as an executable `name` in `dir`.
fn install(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The roles: `assistant` (the stand-in Claude) and `reviewer` (a command); those `ask`
/// names say `askable = true`.
fn roles(data: &Path) -> BTreeMap<String, Role> {
    let bin = data.join("bin");
    install(&bin, "claude", FAKE_CLAUDE);
    install(&bin, "review", FAKE_REVIEWER);
    install(&bin, "codex", FAKE_CODEX);
    let env = BTreeMap::from([
        (
            "PATH".to_owned(),
            format!("{}:/usr/bin:/bin", bin.display()),
        ),
        (
            "CALLS".to_owned(),
            data.join("calls.log").display().to_string(),
        ),
    ]);
    let assistant = Role {
        model: Some("claude-sonnet-4-5".into()),
        env: env.clone(),
        ..Role::new(Executor::ClaudeCode)
    };
    let reviewer = Role {
        askable: true,
        command: vec!["review".into()],
        env: env.clone(),
        ..Role::new(Executor::Command)
    };
    // Roles that go wrong: a CLI the sandbox does not have, and one printing garbage.
    let ghost = Role {
        askable: true,
        command: vec!["no-such-cli".into()],
        env: env.clone(),
        ..Role::new(Executor::Command)
    };
    install(
        &bin.join("garbled"),
        "claude",
        "#!/bin/sh\necho 'not json'\necho '{half'\n",
    );
    let garbled = Role {
        askable: true,
        env: BTreeMap::from([(
            "PATH".to_owned(),
            format!("{}:/usr/bin:/bin", bin.join("garbled").display()),
        )]),
        ..Role::new(Executor::ClaudeCode)
    };
    let codex = Role {
        env,
        ..Role::new(Executor::Codex)
    };
    BTreeMap::from([
        ("codex".to_owned(), codex),
        ("assistant".to_owned(), assistant),
        ("reviewer".to_owned(), reviewer),
        ("ghost".to_owned(), ghost),
        ("garbled".to_owned(), garbled),
    ])
}

/// Gatehouse with the project, chat, the roles and `[assistant]`, on `db` and `data`.
async fn start_on(db: TestDb, data: tempfile::TempDir) -> Gatehouse {
    let mut assistant = AssistantSettings::new("assistant");
    assistant.rules.max_queue = 2;
    start_with(db, data, assistant).await
}

async fn start_with(
    db: TestDb,
    data: tempfile::TempDir,
    assistant: AssistantSettings,
) -> Gatehouse {
    let roles = roles(data.path());
    Gatehouse::builder_on(db, data)
        .sops(&[("polish", POLISH), ("long", LONG), ("review", chat::REVIEW)])
        .people(chat::people())
        .chat()
        .projects(PROJECTS)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| options.roles = roles)
        .assistant(assistant)
        .start()
        .await
}

/// Gatehouse as [`start_on`] starts it, its runner `runner` another machine's: its files
/// in a directory of its own under `data` (the blob store stays shared), its id its name,
/// and `configure` applied last.
async fn start_runner(
    db: TestDb,
    data: tempfile::TempDir,
    runner: &str,
    assistant: AssistantSettings,
    configure: impl FnOnce(&mut RunnerOptions) + 'static,
) -> Gatehouse {
    let roles = roles(data.path());
    let (dir, id) = (data.path().join(runner), runner.to_owned());
    Gatehouse::builder_on(db, data)
        .people(chat::people())
        .chat()
        .projects(PROJECTS)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = roles;
            options.data_dir = dir;
            options.id = id;
            configure(options);
        })
        .assistant(assistant)
        .start()
        .await
}

async fn start(backend: Backend) -> Gatehouse {
    start_on(TestDb::new(backend).await, tempfile::tempdir().unwrap()).await
}

/// The bot's messages in `thread`, oldest first.
fn bot_messages(gh: &Gatehouse, thread: &str) -> Vec<SlackMessage> {
    gh.slack
        .messages(CHANNEL)
        .into_iter()
        .filter(|m| m.user == BOT_USER && m.thread_ts.as_deref() == Some(thread))
        .collect()
}

/// Waits until the bot has said something in `thread` containing `text`; returns it.
async fn said(gh: &Gatehouse, thread: &str, text: &str) -> SlackMessage {
    for _ in 0..1500 {
        if let Some(m) = bot_messages(gh, thread)
            .into_iter()
            .find(|m| m.text.contains(text))
        {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the bot never said {text:?} in {thread}: {:#?}",
        bot_messages(gh, thread)
            .iter()
            .map(|m| &m.text)
            .collect::<Vec<_>>()
    );
}

/// How many of the bot's messages in `thread` contain `text`.
fn count(gh: &Gatehouse, thread: &str, text: &str) -> usize {
    bot_messages(gh, thread)
        .iter()
        .filter(|m| m.text.contains(text))
        .count()
}

/// A Slack thread of the project's channel, as its people and the bot see it.
struct Thread<'a> {
    gh: &'a Gatehouse,
    ts: String,
}

impl<'a> Thread<'a> {
    /// A mention at the top of the channel by ana, starting the thread.
    async fn start(gh: &'a Gatehouse, event: &str, text: &str) -> Self {
        let ts = gh.slack_mention(event, CHANNEL, ANA, text).await;
        Self { gh, ts }
    }

    /// A mention in the thread by `user`.
    async fn say_as(&self, event: &str, user: &str, text: &str) {
        self.gh
            .slack_mention_in(event, CHANNEL, Some(&self.ts), user, text)
            .await;
    }

    /// A mention in the thread by ana.
    async fn say(&self, event: &str, text: &str) {
        self.say_as(event, ANA, text).await;
    }

    /// Waits until the bot has said something here containing `text`.
    async fn said(&self, text: &str) -> SlackMessage {
        said(self.gh, &self.ts, text).await
    }

    /// How many of the bot's messages here contain `text`.
    fn count(&self, text: &str) -> usize {
        count(self.gh, &self.ts, text)
    }
}

fn calls(gh: &Gatehouse) -> Vec<String> {
    std::fs::read_to_string(gh.data.path().join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// GET `path` as ana.
async fn get(gh: &Gatehouse, path: &str) -> Value {
    let token = gh.stored_token("ana", &Scope::ALL, None).await;
    gh.api_as(&token).get(path).await.is(200)
}

/// The one conversation, in detail.
async fn conversation(gh: &Gatehouse) -> Value {
    let list = get(gh, "/conversations").await;
    let id = list[0]["id"].as_str().expect("a conversation").to_owned();
    get(gh, &format!("/conversations/{id}")).await
}

async fn a_three_turn_conversation_continues_one_cli_session(backend: Backend) {
    let gh = start(backend).await;
    let thread = Thread::start(&gh, "Ev1", "add a health endpoint").await;
    thread.said("Turn 1: add a health endpoint").await;
    // One progress message, edited to its end.
    thread.said("Done in").await;
    thread.say_as("Ev2", BO, "now add a test").await;
    thread.said("Turn 2: now add a test").await;
    thread.say("Ev3", "and document it").await;
    thread.said("Turn 3: and document it").await;
    // The workspace was kept (the count lives in it) and the session continued.
    let calls = calls(&gh);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(!calls[0].contains("--resume"), "{calls:?}");
    let session = calls[1]
        .split("--resume ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(session.starts_with("sess-"), "{calls:?}");
    assert!(
        calls[2].contains(&format!("--resume {session}")),
        "{calls:?}"
    );

    // Someone the project does not let converse is refused, and nothing runs.
    thread.say_as("Ev4", CY, "delete everything").await;
    thread.said("may not talk to the assistant").await;
    // So is someone Gatehouse does not know at all.
    thread
        .say_as("Ev4b", "U0NOBODY", "can you fix this for me")
        .await;
    thread.said("`U0NOBODY` is not one of them").await;
    // `ask` has another role answer, in the same workspace.
    thread.say("Ev5", "ask reviewer is it ready?").await;
    thread.said("reviewed 3 notes").await;
    // A CLI that is not there, or prints garbage, is answered with what went wrong.
    thread.say("Ev7", "ask ghost anything").await;
    thread
        .said("That turn failed: the sandbox has no `no-such-cli` command")
        .await;
    thread.say("Ev8", "ask garbled anything").await;
    thread
        .said("That turn failed: the CLI ended without a result; 2 lines")
        .await;
    // A redelivered event changes nothing.
    thread.say("Ev5", "ask reviewer is it ready?").await;

    // The egress the runner records of a turn's attempt comes back under that attempt.
    let before = conversation(&gh).await;
    let first_turn = &before["turns"][0];
    let refused = ConnectionRow {
        owner: ConnectionOwner::Turn {
            conversation_id: before["id"].as_str().unwrap().parse().unwrap(),
            seq: first_turn["seq"].as_i64().unwrap(),
        },
        attempt: first_turn["attempts"][0]["attempt"]
            .as_i64()
            .unwrap()
            .try_into()
            .unwrap(),
        host: "<i>pypi</i>.org".into(),
        port: 443,
        verdict: ConnectionVerdict::Refused,
        reason: Some("not in the egress allow-list".into()),
        bytes_up: 0,
        bytes_down: 0,
        started_at: chrono::Utc::now(),
        duration_ms: 1,
    };
    gh.db.store.record_connections(&[refused]).await.unwrap();

    let detail = conversation(&gh).await;
    assert_eq!(detail["project"], "api");
    assert_eq!(detail["repositories"], serde_json::json!(["acme/api"]));
    assert_eq!(detail["session_id"], session);
    let turns = detail["turns"].as_array().unwrap();
    let statuses: Vec<_> = turns
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "replied", "replied", "replied", "replied", "failed", "failed"
        ],
        "{detail:#}"
    );
    assert_eq!(
        (&turns[3]["kind"], &turns[3]["role"]),
        (&json!("ask"), &json!("reviewer"))
    );
    let first = &turns[0]["attempts"][0];
    assert_eq!(first["tools"][0]["tool"], "Edit");
    assert_eq!(first["connections"][0]["host"], "<i>pypi</i>.org");
    assert_eq!(first["connections"][0]["verdict"], "refused");
    assert_eq!(turns[1]["attempts"][0]["connections"], json!([]));
    assert_eq!(first["usage"]["output_tokens"], 50);
    assert!(first["cli_ms"].as_i64().unwrap() <= first["duration_ms"].as_i64().unwrap());
    assert_eq!(detail["usage"]["input_tokens"], 3 * 100 + 7);
    // The conversation is the thread's requirement's, and so is its usage.
    let requirement = get(
        &gh,
        &format!(
            "/requirements/{}",
            detail["requirement_id"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(requirement["conversations"][0]["id"], detail["id"]);
    assert_eq!(requirement["usage"]["output_tokens"], 3 * 50 + 3);
    // The console shows it: in its starter's inbox, on the requirement's page and its own.
    let id = detail["id"].as_str().unwrap();
    let mut browser = gh.signed_in(detail["started_by"].as_str().unwrap()).await;
    let inbox = browser.get("/").await.expect_status(200);
    assert!(
        inbox.contains(&format!("/conversations/{id}")),
        "{}",
        inbox.html
    );
    let requirement_page = browser
        .get(&format!(
            "/requirements/{}",
            detail["requirement_id"].as_str().unwrap()
        ))
        .await
        .expect_status(200);
    assert!(requirement_page.contains(&format!("/conversations/{id}")));
    let page = browser
        .get(&format!("/conversations/{id}"))
        .await
        .expect_status(200);
    for shown in [
        "Turn 1: add a health endpoint",
        "reviewed 3 notes",
        "asked reviewer",
        "Edit",
        "1 connection through the egress proxy, 1 refused",
        "&lt;i&gt;pypi&lt;/i&gt;.org",
    ] {
        assert!(
            page.contains(shown),
            "the conversation page lacks {shown}: {}",
            page.html
        );
    }
    // Every reply once.
    for n in 1..=3 {
        assert_eq!(thread.count(&format!("Turn {n}:")), 1);
    }
    assert_eq!(thread.count("reviewed 3 notes"), 1);

    // A channel of no project is told so; nothing is opened.
    let elsewhere = gh
        .slack_mention("Ev6", chat::APPROVALS, ANA, "fix the build")
        .await;
    gh.until("the refusal", || {
        gh.slack.messages(chat::APPROVALS).into_iter().find(|m| {
            m.thread_ts.as_deref() == Some(&elsewhere) && m.text.contains("belongs to no project")
        })
    })
    .await;
    // A channel of no project with an SOP for requests still starts it.
    let request = gh
        .slack_mention("Ev9", chat::REQUESTS, ANA, "the export is broken")
        .await;
    gh.until("the SOP started", || {
        gh.slack.messages(chat::REQUESTS).into_iter().find(|m| {
            m.thread_ts.as_deref() == Some(&request) && m.text.contains("started `review`")
        })
    })
    .await;
    let all = get(&gh, "/conversations").await;
    assert_eq!(all.as_array().unwrap().len(), 1, "{all:#}");
    gh.stop().await;
}

async fn messages_queue_steer_interrupts_and_stop_and_status_answer(backend: Backend) {
    let gh = start(backend).await;
    let thread = Thread::start(&gh, "Ev1", "a slow refactor").await;
    // Working: the progress message says so.
    thread.said("Working").await;
    thread.say("Ev2", "then rename it").await;
    thread.said("1 ahead").await;
    thread.say("Ev3", "status").await;
    thread.said("Working on turn 1 for ana").await;
    thread.say("Ev4", "steer use smaller steps").await;
    thread.said("Turn 2: use smaller steps").await;
    thread.said("Turn 3: then rename it").await;
    // The slow turn was stopped, not answered.
    assert_eq!(thread.count("Turn 1:"), 0);
    // Nothing runs now: `stop` and `steer` say so, and an empty message is answered.
    thread.say("Ev5", "stop").await;
    thread.said("Nothing is running").await;
    thread.say("Ev6", "steer faster").await;
    thread.said("send it as a message").await;
    let detail = conversation(&gh).await;
    let statuses: Vec<_> = detail["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["stopped", "replied", "replied"], "{detail:#}");
    assert_eq!(detail["turns"][2]["steer"], true, "{detail:#}");
    gh.stop().await;
}

async fn a_turn_killed_with_the_process_runs_once_more_resuming_its_session(backend: Backend) {
    let gh = start(backend).await;
    let thread = Thread::start(&gh, "Ev1", "pause, then answer").await;
    // The CLI has named its session: kill -9 while it runs.
    gh.until("the CLI to start", || {
        (!calls(&gh).is_empty()).then_some(())
    })
    .await;
    thread.said("Working").await;
    // Two more wait their turn; the restart keeps them, in order.
    thread.say("Ev2", "then this").await;
    thread.said("Queued, 1 ahead").await;
    thread.say("Ev3", "and this").await;
    thread.said("Queued, 2 ahead").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ts = thread.ts;
    let (db, data) = gh.crash();
    let gh = start_on(db, data).await;
    let thread = Thread { gh: &gh, ts };
    thread.said("restarted during this turn").await;
    thread.said("Turn 2: pause, then answer").await;
    thread.said("Turn 3: then this").await;
    thread.said("Turn 4: and this").await;
    let calls = calls(&gh);
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert!(!calls[0].contains("--resume"), "{calls:?}");
    assert!(calls[1].contains("--resume sess-"), "{calls:?}");
    // Nothing was posted twice.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(thread.count("Turn 2:"), 1);
    assert_eq!(thread.count("restarted during this turn"), 1);
    let detail = conversation(&gh).await;
    let attempts = detail["turns"][0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{detail:#}");
    assert_eq!(attempts[0]["status"], "interrupted");
    assert_eq!(attempts[1]["status"], "replied");
    gh.stop().await;
}

async fn on_discord_a_reply_to_the_bot_continues_the_conversation(backend: Backend) {
    let gh = start(backend).await;
    let sink = DiscordSink::new(gh.api.clone());
    let mention = |id: &str, text: &str, reply_to: Option<String>| gatehouse_discord::Mention {
        message_id: id.into(),
        channel_id: DISCORD_REQUESTS.into(),
        guild_id: Some("290926798626357999".into()),
        author: "4242".into(),
        text: text.into(),
        reply_to,
    };
    let posted = |text: &'static str| {
        let gh = &gh;
        async move {
            gh.until(text, || {
                gh.discord
                    .messages(DISCORD_REQUESTS)
                    .into_iter()
                    .find(|m| m.content.contains(text))
            })
            .await
        }
    };
    sink.mention(mention(
        "1300000000000000001",
        "add a health endpoint",
        None,
    ))
    .await;
    let reply = posted("Turn 1: add a health endpoint").await;
    assert_eq!(
        reply.message_reference.as_ref().unwrap()["message_id"],
        "1300000000000000001"
    );
    // Gatehouse knows its reply by the id Discord gave it once the notifier has recorded it.
    gh.until_recorded("discord", &reply.id).await;
    // A reply to the bot's reply is the same conversation, the same CLI session.
    sink.mention(mention(
        "1300000000000000002",
        "now add a test",
        Some(reply.id),
    ))
    .await;
    posted("Turn 2: now add a test").await;
    posted("Done in").await;
    let calls = calls(&gh);
    assert!(calls[1].contains("--resume sess-"), "{calls:?}");
    let all = get(&gh, "/conversations").await;
    assert_eq!(all.as_array().unwrap().len(), 1, "{all:#}");
    assert_eq!(all[0]["platform"], "discord");
    // A direct message works on the one project that lets its author converse.
    sink.mention(gatehouse_discord::Mention {
        guild_id: None,
        channel_id: "1400000000000000001".into(),
        ..mention("1300000000000000009", "a word in private", None)
    })
    .await;
    gh.until("the answer in private", || {
        gh.discord
            .messages("1400000000000000001")
            .into_iter()
            .find(|m| m.content.contains(": a word in private"))
    })
    .await;
    let all = get(&gh, "/conversations").await;
    assert_eq!(all[0]["project"], "api", "{all:#}");
    gh.stop().await;
}

async fn an_idle_workspace_is_released_and_the_next_message_restores_it(backend: Backend) {
    let mut assistant = AssistantSettings::new("assistant");
    assistant.rules.idle_timeout = Duration::from_secs(1);
    let data = tempfile::tempdir().unwrap();
    let gh = start_with(TestDb::new(backend).await, data, assistant).await;
    let thread = Thread::start(&gh, "Ev1", "start a branch").await;
    thread.said("Turn 1: start a branch").await;
    let id = get(&gh, "/conversations").await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let dir = gh.data.path().join("conversations").join(&id);
    for _ in 0..500 {
        if get(&gh, "/conversations").await[0]["activity"] == "released"
            && !dir.join("workspace").exists()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !dir.join("workspace").exists(),
        "the idle workspace is freed"
    );
    let checkpoint = gh
        .db
        .store
        .latest_checkpoint(&format!("conversation:{id}"))
        .await
        .unwrap();
    assert!(checkpoint.is_some(), "checkpointed first");
    // The next message restores it: the turn count kept in the workspace goes on.
    thread.say("Ev2", "go on").await;
    thread.said("Turn 2: go on").await;
    gh.stop().await;
}

async fn deliver_opens_the_pull_request_from_chat_and_updates_it(backend: Backend) {
    let gh = start(backend).await;
    let thread = Thread::start(&gh, "Ev1", "add a health endpoint").await;
    thread.said("Turn 1: add a health endpoint").await;
    thread.say("Ev2", "deliver draft").await;
    thread.said("acme/api#").await;
    let pulls = gh.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert!(pulls[0].draft, "{pulls:?}");
    let detail = conversation(&gh).await;
    assert_eq!(detail["pull_requests"][0]["repo"], "acme/api", "{detail:#}");
    assert_eq!(detail["turns"][1]["kind"], "deliver");
    // More work, delivered again: the same pull request, updated.
    thread.say("Ev3", "and a test").await;
    thread.said("Turn 2: and a test").await;
    thread.say("Ev4", "deliver").await;
    thread.said("Updated acme/api#").await;
    assert_eq!(gh.github.pulls().len(), 1);
    gh.stop().await;
}

async fn an_sop_run_takes_the_workspace_and_gives_it_back(backend: Backend) {
    let gh = start(backend).await;
    let thread = Thread::start(&gh, "Ev1", "draft it").await;
    thread.said("Turn 1: draft it").await;
    thread.say("Ev2", "run polish").await;
    thread.said("on this conversation's workspace").await;
    let run = gh.until_run(|r| r.sop == "polish").await;
    gh.wait_run(run, "succeeded").await;
    // The run started from the conversation's workspace...
    assert_eq!(gh.artifact(run, "polish", 1, "seen.txt").trim(), "1");
    // ...and the conversation goes on from the run's.
    thread.say("Ev3", "what changed?").await;
    thread.said("Turn 6: what changed?").await;
    let detail = conversation(&gh).await;
    let requirement = get(
        &gh,
        &format!(
            "/requirements/{}",
            detail["requirement_id"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(
        requirement["runs"][0]["id"],
        run.to_string(),
        "{requirement:#}"
    );
    gh.stop().await;
}

async fn take_over_pauses_a_run_and_carries_on_from_its_workspace(backend: Backend) {
    let gh = start(backend).await;
    let thread = Thread::start(&gh, "Ev1", "look around").await;
    thread.said("Turn 1: look around").await;
    thread.say("Ev2", "run long").await;
    let run = gh.until_run(|r| r.sop == "long").await;
    gh.wait_run(run, "waiting").await;
    // A run of another requirement cannot be taken over; this one can.
    let elsewhere = gh.request("long").await;
    gh.wait_run(elsewhere, "waiting").await;
    thread.say("Ev3", &format!("take over {elsewhere}")).await;
    thread.said("works on another requirement").await;
    thread.say("Ev4", &format!("take over {run}")).await;
    thread.said("Took over run").await;
    gh.wait_run(run, "paused").await;
    thread.say("Ev5", "finish it").await;
    thread.said("Turn 10: finish it").await;
    gh.stop().await;
}

async fn a_codex_assistant_continues_its_thread(backend: Backend) {
    let data = tempfile::tempdir().unwrap();
    let gh = start_with(
        TestDb::new(backend).await,
        data,
        AssistantSettings::new("codex"),
    )
    .await;
    let thread = Thread::start(&gh, "Ev1", "list the sources").await;
    thread.said("Codex turn 1: list the sources").await;
    thread.say("Ev2", "and count them").await;
    thread.said("Codex turn 2: and count them").await;
    let calls = calls(&gh);
    assert!(calls[0].starts_with("exec "), "{calls:?}");
    let session = conversation(&gh).await["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(session.starts_with("thread-"), "{session}");
    assert!(
        calls[1].contains(&format!("resume {session} -")),
        "{calls:?}"
    );
    let detail = conversation(&gh).await;
    let first = &detail["turns"][0]["attempts"][0];
    assert_eq!(first["tools"][0]["tool"], "command_execution", "{detail:#}");
    assert_eq!(first["usage"]["output_tokens"], 30);
    gh.stop().await;
}

/// A turn of the real Claude Code (tests/agent-clis/install.sh) whose role names a
/// provider: the CLI reaches the fake provider only through the runner's gateway, in
/// namespaces of its own, and its tool tries a host the role may not reach. The reply says
/// once which host was blocked; the turn's connections and the gateway's usage are
/// recorded against it.
async fn a_turn_of_the_real_claude_code_goes_through_the_gateway(backend: Backend) {
    use gatehouse_fake_providers::{FakeProvider, Tokens, Turn};
    let Some(clis) = installed::clis() else {
        return;
    };
    const KEY: &str = "sk-test-conversation-provider-key-41b7";
    let tokens = |input, output| Tokens {
        input,
        output,
        cache_read: 0,
        cache_write: 0,
        reasoning: 0,
    };
    let fake = FakeProvider::start(
        KEY,
        vec![
            Turn::tool(
                "Bash",
                json!({"command": "curl -s -o /dev/null https://pypi.org/simple/ || true", "description": "Look at PyPI"}),
            )
            .tokens(tokens(300, 20)),
            Turn::text("Looked around.").tokens(tokens(40, 6)),
        ],
    )
    .await;
    let data = tempfile::tempdir().unwrap();
    let bin = clis.claude.parent().unwrap().to_owned();
    let role = Role {
        provider: Some("model".into()),
        model: Some("claude-sonnet-4-5".into()),
        env: BTreeMap::from([("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))]),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = gatehouse_gateway::Provider {
        name: "model".into(),
        kind: gatehouse_gateway::ProviderKind::Anthropic,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: secrecy::SecretString::from(KEY),
    };
    let gh = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .people(chat::people())
        .chat()
        .projects(PROJECTS)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("assistant".to_owned(), role)]);
            options.providers = vec![provider];
            options.relay = Some(gatehouse_tests::relay_binary());
        })
        .assistant(AssistantSettings::new("assistant"))
        .start()
        .await;
    let thread = Thread::start(&gh, "Ev1", "look at the package index").await;
    let reply = thread.said("Looked around.").await;
    assert!(
        reply.text.contains("blocked pypi.org:443"),
        "the reply names the blocked host: {}",
        reply.text
    );
    let detail = conversation(&gh).await;
    let attempt = &detail["turns"][0]["attempts"][0];
    assert_eq!(attempt["usage"]["input_tokens"], 340, "{detail:#}");
    assert_eq!(attempt["usage"]["output_tokens"], 26, "{detail:#}");
    let connections = attempt["connections"].as_array().unwrap();
    assert!(
        connections
            .iter()
            .any(|c| c["host"] == "pypi.org" && c["verdict"] == "refused"),
        "{detail:#}"
    );
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.header("x-api-key") == Some(KEY)),
        "only the gateway's key reached the provider"
    );
    gh.stop().await;
}

/// The one conversation's id.
async fn conversation_id(gh: &Gatehouse) -> Uuid {
    conversation(gh).await["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// The home's snapshot in the blob store, read as JSON (the runner's manifest format).
async fn home_manifest(gh: &Gatehouse, digest: &str) -> Value {
    let blobs = LocalBlobs::new(gh.data.path().join("blobs"));
    let bytes = blobs
        .get_bytes(&digest.parse().unwrap(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Stops every service, as the end of a machine's runner would, and forgets runner
/// `runner`'s disk.
async fn retire(gh: Gatehouse, runner: &str) -> (TestDb, tempfile::TempDir) {
    let (db, data) = gh.halt().await;
    std::fs::remove_dir_all(data.path().join(runner)).unwrap();
    (db, data)
}

async fn a_turn_on_another_runner_resumes_the_session_its_home_left(backend: Backend) {
    let (db, data) = (TestDb::new(backend).await, tempfile::tempdir().unwrap());
    let assistant = || AssistantSettings::new("assistant");
    let gh = start_runner(db, data, "one", assistant(), |_| {}).await;
    let thread = Thread::start(&gh, "Ev1", "add a health endpoint").await;
    thread.said("Turn 1: add a health endpoint").await;
    let id = conversation_id(&gh).await;
    let saved = gh.db.store.latest_home(id).await.unwrap().expect("saved");
    assert_eq!(saved.runner, "one");
    // The snapshot is the CLI's state, nothing of the workspace.
    let manifest = home_manifest(&gh, saved.manifest.as_deref().unwrap()).await;
    let paths: Vec<&str> = manifest["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(
        paths.iter().any(|p| p.starts_with(".claude/projects/")),
        "{paths:?}"
    );
    assert!(
        !paths
            .iter()
            .any(|p| p.contains(".turns") || p.contains("notes.txt"))
    );

    // Runner one is gone, and its disk with it: two takes the next turn.
    let ts = thread.ts;
    let (db, data) = retire(gh, "one").await;
    let gh = start_runner(db, data, "two", assistant(), |_| {}).await;
    let thread = Thread { gh: &gh, ts };
    thread.say("Ev2", "now add a test").await;
    thread.said("Turn 2: now add a test").await;
    thread.said("Done in").await;
    let calls = calls(&gh);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let session = conversation(&gh).await["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        calls[1].contains(&format!("--resume {session}")),
        "{calls:?}"
    );
    assert_eq!(thread.count("started a new session"), 0);
    // The session file holds both turns, on two's disk.
    let kept = std::fs::read_dir(
        gh.data
            .path()
            .join(format!("two/conversations/{id}/home/.claude/projects")),
    )
    .unwrap()
    .map(|project| project.unwrap().path().join(format!("{session}.jsonl")))
    .find(|file| file.exists())
    .expect("the session's file");
    assert_eq!(
        std::fs::read_to_string(kept).unwrap(),
        "add a health endpoint\nnow add a test\n"
    );
    let saved = gh.db.store.latest_home(id).await.unwrap().expect("saved");
    assert_eq!(
        (saved.runner.as_str(), saved.taken_after.as_str()),
        ("two", "turn 2, attempt 1")
    );
    gh.stop().await;
}

async fn a_codex_thread_follows_its_conversation_to_another_runner(backend: Backend) {
    let (db, data) = (TestDb::new(backend).await, tempfile::tempdir().unwrap());
    let codex = || AssistantSettings::new("codex");
    let gh = start_runner(db, data, "one", codex(), |_| {}).await;
    let thread = Thread::start(&gh, "Ev1", "list the sources").await;
    thread.said("Codex turn 1: list the sources").await;
    let ts = thread.ts;
    let (db, data) = retire(gh, "one").await;
    let gh = start_runner(db, data, "two", codex(), |_| {}).await;
    let thread = Thread { gh: &gh, ts };
    thread.say("Ev2", "and count them").await;
    thread.said("Codex turn 2: and count them").await;
    let session = conversation(&gh).await["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let calls = calls(&gh);
    assert!(
        calls[1].contains(&format!("resume {session} -")),
        "{calls:?}"
    );
    assert_eq!(thread.count("started a new session"), 0);
    gh.stop().await;
}

async fn a_home_past_its_limit_stays_on_its_runner_and_another_starts_a_new_session(
    backend: Backend,
) {
    let (db, data) = (TestDb::new(backend).await, tempfile::tempdir().unwrap());
    let assistant = || AssistantSettings::new("assistant");
    // Less than any pack: no home is ever saved.
    let tiny = |options: &mut RunnerOptions| options.home_limit = 1024;
    let gh = start_runner(db, data, "one", assistant(), tiny).await;
    let thread = Thread::start(&gh, "Ev1", "add a health endpoint").await;
    thread.said("Turn 1: add a health endpoint").await;
    let id = conversation_id(&gh).await;
    let home = gh
        .db
        .store
        .latest_home(id)
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!((home.manifest, home.runner.as_str()), (None, "one"));
    // The runner that has it goes on with it.
    thread.say("Ev2", "now add a test").await;
    thread.said("Turn 2: now add a test").await;
    assert!(calls(&gh)[1].contains("--resume sess-"), "{:?}", calls(&gh));

    // Another runner has nothing to resume: a new session, said so, and the turn runs.
    let ts = thread.ts;
    let (db, data) = gh.halt().await;
    let gh = start_runner(db, data, "two", assistant(), |_| {}).await;
    let thread = Thread { gh: &gh, ts };
    thread.say("Ev3", "and document it").await;
    thread.said("Turn 3: and document it").await;
    let progress = thread
        .said("tokens · started a new session (the earlier one was not available)")
        .await;
    assert!(progress.text.starts_with("Done in"), "{}", progress.text);
    let calls = calls(&gh);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(!calls[2].contains("--resume"), "{calls:?}");
    let detail = conversation(&gh).await;
    assert_eq!(detail["turns"][2]["attempts"][0]["status"], "replied");
    // Under the default limit, two's home is saved.
    let home = gh
        .db
        .store
        .latest_home(id)
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!(home.runner, "two");
    assert!(home.manifest.is_some());
    gh.stop().await;
}

/// A change to a home's manifest, as JSON.
type Tamper = fn(&mut Value);

async fn a_tampered_home_is_refused_and_the_turn_starts_a_new_session(backend: Backend) {
    let (db, data) = (TestDb::new(backend).await, tempfile::tempdir().unwrap());
    let assistant = || AssistantSettings::new("assistant");
    let gh = start_runner(db, data, "one", assistant(), |_| {}).await;
    let thread = Thread::start(&gh, "Ev1", "add a health endpoint").await;
    thread.said("Turn 1: add a health endpoint").await;
    let id = conversation_id(&gh).await;
    let mut ts = thread.ts;
    let mut gh = gh;

    // Whoever can write the blob store forges the home: a link out of it, then a path
    // climbing out of it. Each next turn is on a runner of its own.
    let tampers: [(&str, Tamper); 2] = [
        ("two", |m| {
            m["entries"].as_array_mut().unwrap().push(json!({
                "path": ".claude/escape", "kind": "link", "target": "../../workspace",
                "mode": 511, "uid": 0, "gid": 0,
            }));
        }),
        ("three", |m| m["entries"][0]["path"] = json!("../outside")),
    ];
    for (n, (runner, tamper)) in tampers.into_iter().enumerate() {
        let saved = gh.db.store.latest_home(id).await.unwrap().expect("saved");
        let mut manifest = home_manifest(&gh, saved.manifest.as_deref().unwrap()).await;
        tamper(&mut manifest);
        let blobs = LocalBlobs::new(gh.data.path().join("blobs"));
        let forged = blobs
            .put_bytes(serde_json::to_vec(&manifest).unwrap().into())
            .await
            .unwrap();
        gh.db
            .store
            .record_home(&HomeRow {
                manifest: Some(forged.digest.as_str().to_owned()),
                ..saved
            })
            .await
            .unwrap();
        let (db, data) = gh.halt().await;
        gh = start_runner(db, data, runner, assistant(), |_| {}).await;
        let thread = Thread { gh: &gh, ts };
        let turn = n + 2;
        thread.say(&format!("Ev{turn}"), "go on").await;
        thread.said(&format!("Turn {turn}: go on")).await;
        thread
            .said("started a new session (the earlier one could not be restored)")
            .await;
        let calls = calls(&gh);
        assert!(!calls[n + 1].contains("--resume"), "{calls:?}");
        let dir = gh.data.path().join(format!("{runner}/conversations/{id}"));
        assert!(!dir.join("outside").exists());
        assert!(!dir.join("home/.claude/escape").is_symlink());
        // The turn's own home replaces the forged one.
        let saved = gh.db.store.latest_home(id).await.unwrap().expect("saved");
        assert_eq!(saved.runner, runner);
        assert_ne!(saved.manifest.as_deref(), Some(forged.digest.as_str()));
        ts = thread.ts;
    }
    gh.stop().await;
}

/// The real Claude Code (tests/agent-clis/install.sh) through the gateway to the fake
/// provider: turn 1 on runner one, which is then gone with its disk; turn 2 on runner two
/// resumes the session, so the provider's second request carries turn 1's exchange.
async fn the_real_claude_code_resumes_its_session_on_another_runner(backend: Backend) {
    use gatehouse_fake_providers::{FakeProvider, Turn};
    let Some(clis) = installed::clis() else {
        return;
    };
    const KEY: &str = "sk-test-conversation-provider-key-77c2";
    let fake = FakeProvider::start(
        KEY,
        vec![
            Turn::text("Noted: the number is 4711."),
            Turn::text("It was 4711."),
        ],
    )
    .await;
    let bin = clis.claude.parent().unwrap().to_owned();
    let url = fake.url().to_owned();
    let real = move |options: &mut RunnerOptions| {
        let role = Role {
            provider: Some("model".into()),
            model: Some("claude-sonnet-4-5".into()),
            env: BTreeMap::from([("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))]),
            ..Role::new(Executor::ClaudeCode)
        };
        options.roles = BTreeMap::from([("assistant".to_owned(), role)]);
        options.providers = vec![gatehouse_gateway::Provider {
            name: "model".into(),
            kind: gatehouse_gateway::ProviderKind::Anthropic,
            base_url: url::Url::parse(&url).unwrap(),
            key: secrecy::SecretString::from(KEY),
        }];
        options.relay = Some(gatehouse_tests::relay_binary());
    };
    let assistant = || AssistantSettings::new("assistant");
    let (db, data) = (TestDb::new(backend).await, tempfile::tempdir().unwrap());
    let gh = start_runner(db, data, "one", assistant(), real.clone()).await;
    let thread = Thread::start(&gh, "Ev1", "remember the number 4711").await;
    thread.said("Noted: the number is 4711.").await;
    let ts = thread.ts;
    let (db, data) = retire(gh, "one").await;
    let gh = start_runner(db, data, "two", assistant(), real).await;
    let thread = Thread { gh: &gh, ts };
    thread.say("Ev2", "which number was it?").await;
    thread.said("It was 4711.").await;
    assert_eq!(thread.count("started a new session"), 0);

    let second = fake
        .requests()
        .into_iter()
        .map(|r| r.body["messages"].to_string())
        .find(|messages| messages.contains("which number was it?"))
        .expect("a request of turn 2");
    for said in ["remember the number 4711", "Noted: the number is 4711."] {
        assert!(second.contains(said), "{said:?} is not in {second}");
    }
    gh.stop().await;
}
