//! Conversations end to end against the fake Slack: a mention in a project's channel is a
//! turn of the assistant role, run by the real runner in the conversation's kept
//! workspace, continuing one CLI session across turns; messages during a turn queue,
//! `steer` interrupts, `stop` and `status` answer; another role answers `ask`; a turn
//! killed with the process runs once more after the restart, resuming its session, and
//! nothing is posted twice. The CLIs are stand-ins speaking Claude Code's stream-json and
//! a `command` executor's plain output.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_discord::GatewaySink;
use gatehouse_ingest::DiscordSink;
use gatehouse_ingest::Scope;
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_scheduler::AssistantSettings;
use gatehouse_tests::fake_slack::{BOT_USER, SlackMessage};
use gatehouse_tests::gatehouse::chat::{self, ANA, BO, CY, DISCORD_REQUESTS};
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};
use serde_json::Value;

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
/// saying `pause` 3 s. Every call is logged to `$CALLS`.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
prompt=$(cat)
echo "$*" >> "$CALLS"
session="sess-$$"
case "$*" in *--resume*) session=$(echo "$*" | sed 's/.*--resume \([^ ]*\).*/\1/');; esac
n=$(cat .turns 2>/dev/null || echo 0); n=$((n+1)); echo $n > .turns
echo '{"type":"system","subtype":"init","session_id":"'"$session"'","tools":["Bash","Edit"],"model":"claude-sonnet-4-5"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"src/health.rs","old_string":"a","new_string":"b"}}]},"session_id":"'"$session"'"}'
case "$prompt" in *slow*) sleep 30;; *pause*) sleep 3;; esac
echo "$prompt" >> notes.txt
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"ok","is_error":false}]},"session_id":"'"$session"'"}'
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":40,"num_turns":2,"result":"Turn %s: %s","session_id":"%s","usage":{"input_tokens":100,"output_tokens":50},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":100,"outputTokens":50,"costUSD":0.001}}}\n' "$n" "$prompt" "$session"
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
);

/// Writes `script` as an executable `name` in `dir`.
fn install(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The roles: `assistant` (the stand-in Claude) and `reviewer` (a command).
fn roles(data: &Path) -> BTreeMap<String, Role> {
    let bin = data.join("bin");
    install(&bin, "claude", FAKE_CLAUDE);
    install(&bin, "review", FAKE_REVIEWER);
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
        command: vec!["review".into()],
        env,
        ..Role::new(Executor::Command)
    };
    BTreeMap::from([
        ("assistant".to_owned(), assistant),
        ("reviewer".to_owned(), reviewer),
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
        .people(chat::people())
        .chat()
        .projects(PROJECTS)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| options.roles = roles)
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
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "add a health endpoint")
        .await;
    said(&gh, &thread, "Turn 1: add a health endpoint").await;
    // One progress message, edited to its end.
    said(&gh, &thread, "Done in").await;
    gh.slack_mention_in("Ev2", CHANNEL, Some(&thread), BO, "now add a test")
        .await;
    said(&gh, &thread, "Turn 2: now add a test").await;
    gh.slack_mention_in("Ev3", CHANNEL, Some(&thread), ANA, "and document it")
        .await;
    said(&gh, &thread, "Turn 3: and document it").await;
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
    gh.slack_mention_in("Ev4", CHANNEL, Some(&thread), CY, "delete everything")
        .await;
    said(&gh, &thread, "may not talk to the assistant").await;
    // `ask` has another role answer, in the same workspace.
    gh.slack_mention_in(
        "Ev5",
        CHANNEL,
        Some(&thread),
        ANA,
        "ask reviewer is it ready?",
    )
    .await;
    said(&gh, &thread, "reviewed 3 notes").await;
    // A redelivered event changes nothing.
    gh.slack_mention_in(
        "Ev5",
        CHANNEL,
        Some(&thread),
        ANA,
        "ask reviewer is it ready?",
    )
    .await;

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
        ["replied", "replied", "replied", "replied"],
        "{detail:#}"
    );
    assert_eq!(turns[3]["ask"], "reviewer");
    let first = &turns[0]["attempts"][0];
    assert_eq!(first["tools"][0]["tool"], "Edit");
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
    // Every reply once.
    for n in 1..=3 {
        assert_eq!(count(&gh, &thread, &format!("Turn {n}:")), 1);
    }
    assert_eq!(count(&gh, &thread, "reviewed 3 notes"), 1);

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
    let all = get(&gh, "/conversations").await;
    assert_eq!(all.as_array().unwrap().len(), 1, "{all:#}");
    gh.stop().await;
}

async fn messages_queue_steer_interrupts_and_stop_and_status_answer(backend: Backend) {
    let gh = start(backend).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "a slow refactor")
        .await;
    // Working: the progress message says so.
    said(&gh, &thread, "Working").await;
    let mention = |id: &'static str, text: &'static str| {
        let (gh, thread) = (&gh, thread.clone());
        async move {
            gh.slack_mention_in(id, CHANNEL, Some(&thread), ANA, text)
                .await
        }
    };
    mention("Ev2", "then rename it").await;
    said(&gh, &thread, "1 ahead").await;
    mention("Ev3", "status").await;
    said(&gh, &thread, "Working on turn 1 for ana").await;
    mention("Ev4", "steer use smaller steps").await;
    said(&gh, &thread, "Turn 2: use smaller steps").await;
    said(&gh, &thread, "Turn 3: then rename it").await;
    // The slow turn was stopped, not answered.
    assert_eq!(count(&gh, &thread, "Turn 1:"), 0);
    // Nothing runs now: `stop` and `steer` say so, and an empty message is answered.
    mention("Ev5", "stop").await;
    said(&gh, &thread, "Nothing is running").await;
    mention("Ev6", "steer faster").await;
    said(&gh, &thread, "send it as a message").await;
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
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "pause, then answer")
        .await;
    // The CLI has named its session: kill -9 while it runs.
    gh.until("the CLI to start", || {
        (!calls(&gh).is_empty()).then_some(())
    })
    .await;
    said(&gh, &thread, "Working").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (db, data) = gh.crash();
    let gh = start_on(db, data).await;
    said(&gh, &thread, "restarted during this turn").await;
    said(&gh, &thread, "Turn 2: pause, then answer").await;
    let calls = calls(&gh);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(!calls[0].contains("--resume"), "{calls:?}");
    assert!(calls[1].contains("--resume sess-"), "{calls:?}");
    // Nothing was posted twice.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(count(&gh, &thread, "Turn 2:"), 1);
    assert_eq!(count(&gh, &thread, "restarted during this turn"), 1);
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
    gh.stop().await;
}

async fn an_idle_workspace_is_released_and_the_next_message_restores_it(backend: Backend) {
    let mut assistant = AssistantSettings::new("assistant");
    assistant.rules.idle_timeout = Duration::from_secs(1);
    let data = tempfile::tempdir().unwrap();
    let gh = start_with(TestDb::new(backend).await, data, assistant).await;
    let thread = gh
        .slack_mention("Ev1", CHANNEL, ANA, "start a branch")
        .await;
    said(&gh, &thread, "Turn 1: start a branch").await;
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
    assert!(dir.join("checkpoint.tar").exists(), "after a checkpoint");
    // The next message restores it: the turn count kept in the workspace goes on.
    gh.slack_mention_in("Ev2", CHANNEL, Some(&thread), ANA, "go on")
        .await;
    said(&gh, &thread, "Turn 2: go on").await;
    gh.stop().await;
}
