//! Agents' questions in Slack and Discord end to end: a question stored and announced the
//! way the runner's `request_approval` does it (`question.asked` in the same commit), its
//! card posted by the notifier to the stateful fakes, and signed clicks and dialogs (the
//! real payload shapes) answering it through ingest's one checked path. And on GitHub: the
//! run's status comment lists the question while it waits, and its answer after.

use std::time::Duration;

use gatehouse_events::{Envelope, Event, QuestionAsked, QuestionKind, QuestionOwner};
use gatehouse_ingest::{Person, Scope, Trigger};
use gatehouse_store::{
    ConnectionOwner, NewConversation, NewQuestion, QuestionRow, QuestionStatus, RunRow,
};
use gatehouse_tests::fake_slack::{self, SlackMessage};
use gatehouse_tests::gatehouse::chat::{self, *};
use gatehouse_tests::gatehouse::github::REPO;
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use serde_json::{Value, json};
use uuid::Uuid;

on_both_backends!(
    a_question_in_slack_is_answered_once_by_someone_allowed,
    deny_in_slack_and_discord_tells_the_agent_why,
    the_status_comment_lists_questions_asked_and_answered,
    a_conversations_question_goes_to_its_thread,
);

/// The requests' project: only leads (ana, bo) may answer its agents.
const PROJECT: &str = r#"
[[projects]]
name = "shop"
repositories = [{ repo = "acme/api" }]
approve = ["group:leads"]
"#;

async fn hub(backend: Backend) -> Gatehouse {
    chat::builder(backend).projects(PROJECT).start().await
}

/// A run of `review` requested in a thread of the requests channel; its root ts.
async fn run_in_thread(hub: &Gatehouse) -> (RunRow, String) {
    let root = hub
        .slack_mention(
            &format!("Ev{}", Uuid::new_v4().simple()),
            REQUESTS,
            CY,
            "the export button is broken",
        )
        .await;
    (hub.run_with_status("waiting").await, root)
}

/// Stores `question` as asked by the run's `draft` node and announces it in the same
/// commit, as the runner's MCP server does; `announce` more times repeats the event (a
/// producer that retried).
async fn ask(hub: &Gatehouse, run: Uuid, question: &str, announce: usize) -> QuestionRow {
    ask_at(hub, run, "draft", Some("shop"), question, announce).await
}

/// [`ask`] by `node` of a run of `project`.
async fn ask_at(
    hub: &Gatehouse,
    run: Uuid,
    node: &str,
    project: Option<&str>,
    question: &str,
    announce: usize,
) -> QuestionRow {
    let owner = ConnectionOwner::Node {
        run_id: run,
        node: node.into(),
    };
    let mut tx = hub.db.store.begin().await.unwrap();
    let row = tx
        .ask_question(&NewQuestion {
            owner: &owner,
            attempt: 1,
            project,
            kind: gatehouse_store::QuestionKind::Approval,
            question,
            evidence: Some("rows in users: 0\n<!here>"),
            digest: &format!("{question}-digest"),
            asked_at: chrono::Utc::now(),
            expires_at: None,
        })
        .await
        .unwrap()
        .row()
        .clone();
    for _ in 0..announce {
        let event = Event::QuestionAsked(QuestionAsked {
            question_id: row.id,
            owner: QuestionOwner::Node {
                run_id: run,
                node: node.into(),
            },
            attempt: 1,
            kind: QuestionKind::Approval,
            question: question.to_owned(),
            evidence: row.evidence.clone(),
        });
        tx.append_outbox(&Envelope::new("runner", &event, None).unwrap())
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    row
}

/// The bot's question cards in `channel`.
fn question_cards(hub: &Gatehouse, channel: &str) -> Vec<SlackMessage> {
    hub.slack
        .messages(channel)
        .into_iter()
        .filter(|m| m.user == fake_slack::BOT_USER && m.text.starts_with("The agent asks"))
        .collect()
}

/// The `gq:VERB:` control in a message.
fn gq(value: &Value, verb: &str) -> String {
    let text = value.to_string();
    let start = text
        .find(&format!("gq:{verb}:"))
        .unwrap_or_else(|| panic!("no gq:{verb} control in {text}"));
    text[start..start + format!("gq:{verb}:").len() + 36].to_owned()
}

async fn question(hub: &Gatehouse, id: Uuid) -> QuestionRow {
    hub.db.store.question(id).await.unwrap().unwrap()
}

/// The question once answered (within ten seconds).
async fn answered(hub: &Gatehouse, id: Uuid) -> QuestionRow {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let q = question(hub, id).await;
            if !q.status.is_open() {
                return q;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the question answered within ten seconds")
}

async fn a_question_in_slack_is_answered_once_by_someone_allowed(backend: Backend) {
    let hub = hub(backend).await;
    let (run, root) = run_in_thread(&hub).await;
    // Announced twice: still one card per place.
    let asked = ask(&hub, run.id, "May I drop the <!channel> users table?", 2).await;

    let in_thread = hub
        .until("the card in the request's thread", || {
            question_cards(&hub, REQUESTS)
                .into_iter()
                .find(|m| m.thread_ts.as_deref() == Some(root.as_str()))
        })
        .await;
    let card = hub
        .until("the card in the approvals channel", || {
            question_cards(&hub, APPROVALS).pop()
        })
        .await;
    let shown = card.blocks.to_string();
    // The agent's words are shown as plain text: Slack parses no mention in them.
    let section = card
        .blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "section")
        .unwrap();
    assert_eq!(
        section["text"],
        json!({ "type": "plain_text", "text": "May I drop the <!channel> users table?", "emoji": false })
    );
    assert!(shown.contains("rows in users: 0"), "{shown}");
    assert!(
        shown.contains(&format!(
            "https://gatehouse.test/runs/{}#node-draft",
            run.id
        )),
        "{shown}"
    );
    assert!(
        shown.contains("the export button is broken"),
        "the requirement: {shown}"
    );
    let approve = gq(&card.blocks, "approve");
    assert_eq!(approve, format!("gq:approve:{}", asked.id));
    assert_eq!(gq(&in_thread.blocks, "approve"), approve);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(question_cards(&hub, APPROVALS).len(), 1);
    assert_eq!(question_cards(&hub, REQUESTS).len(), 1);

    // cy is known but not a lead: refused, only cy is told, nothing changes.
    hub.slack_click(CY, APPROVALS, &approve).await;
    let refused = hub
        .until("cy's refusal", || {
            hub.slack.ephemerals().into_iter().find(|e| e.user == CY)
        })
        .await;
    assert!(refused.text.contains("may not decide"), "{}", refused.text);
    assert!(refused.text.contains("shop"), "{}", refused.text);
    // Someone Gatehouse does not know.
    hub.slack_click(EVE, APPROVALS, &approve).await;
    let stranger = hub
        .until("the stranger's refusal", || {
            hub.slack.ephemerals().into_iter().find(|e| e.user == EVE)
        })
        .await;
    assert!(
        stranger.text.contains("not one of the people"),
        "{}",
        stranger.text
    );
    assert!(question(&hub, asked.id).await.status.is_open());

    // ana approves; Slack redelivers the same click: answered once.
    let click = hub.slack_click_body(ANA, APPROVALS, &approve);
    for _ in 0..2 {
        let (status, _) = hub
            .slack_post("/webhooks/slack/interactions", &click, now(), None)
            .await;
        assert_eq!(status, 200);
    }
    let answered = answered(&hub, asked.id).await;
    assert_eq!(answered.status, QuestionStatus::Approved);
    assert_eq!(answered.decided_by.as_deref(), Some("ana"));
    assert_eq!(answered.channel.as_deref(), Some("slack"));
    // Both cards show the answer, their buttons gone.
    for (channel, ts) in [(APPROVALS, &card.ts), (REQUESTS, &in_thread.ts)] {
        hub.until("the card settled", || {
            question_cards(&hub, channel).into_iter().find(|m| {
                &m.ts == ts
                    && m.blocks.to_string().contains("Approved by ana")
                    && !m.blocks.to_string().contains("gq:")
            })
        })
        .await;
    }

    // bo comes second: told who answered; his Deny opens no dialog either.
    hub.slack_click(BO, APPROVALS, &approve).await;
    hub.slack_click(BO, APPROVALS, &gq(&in_thread.blocks, "deny"))
        .await;
    let told = hub
        .until("bo's two answers", || {
            let told: Vec<_> = hub
                .slack
                .ephemerals()
                .into_iter()
                .filter(|e| e.user == BO)
                .collect();
            (told.len() == 2).then_some(told)
        })
        .await;
    for e in &told {
        assert!(e.text.contains("already approved by ana"), "{}", e.text);
    }
    assert!(
        hub.slack.views().is_empty(),
        "no dialog for an answered question"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = question(&hub, asked.id).await;
    assert_eq!(after, answered, "nothing changed");
    assert_eq!(question_cards(&hub, APPROVALS).len(), 1);
    hub.stop().await;
}

async fn deny_in_slack_and_discord_tells_the_agent_why(backend: Backend) {
    let hub = hub(backend).await;
    let (run, _) = run_in_thread(&hub).await;

    // Slack: Deny opens the dialog; its reason is what the agent is told.
    let first = ask(&hub, run.id, "May I force-push to main?", 1).await;
    let card = hub
        .until("the Slack card", || question_cards(&hub, APPROVALS).pop())
        .await;
    hub.slack_click(ANA, APPROVALS, &gq(&card.blocks, "deny"))
        .await;
    let view = hub
        .until("the Deny dialog", || hub.slack.views().pop())
        .await;
    assert_eq!(view["callback_id"], format!("gq:deny:{}", first.id));
    assert!(
        question(&hub, first.id).await.status.is_open(),
        "opening decides nothing"
    );
    hub.slack_submit(ANA, &view, "", "open a pull request instead")
        .await;
    hub.until("the Slack card settled", || {
        question_cards(&hub, APPROVALS)
            .into_iter()
            .find(|m| m.ts == card.ts && m.blocks.to_string().contains("Denied by ana"))
    })
    .await;
    let denied = question(&hub, first.id).await;
    assert_eq!(denied.status, QuestionStatus::Denied);
    assert_eq!(
        denied.comment.as_deref(),
        Some("open a pull request instead")
    );

    // Discord: the same, with an empty reason, which is allowed.
    let second = ask(&hub, run.id, "May I delete the staging bucket?", 1).await;
    let discord_card = hub
        .until("the Discord card", || {
            hub.discord
                .messages(DISCORD_APPROVALS)
                .into_iter()
                .find(|m| {
                    serde_json::to_string(&m.embeds)
                        .unwrap()
                        .contains("staging bucket")
                })
        })
        .await;
    let components = Value::Array(discord_card.components.clone());
    assert_eq!(components[0]["components"][0]["label"], "Approve");
    let (status, dialog) = hub
        .discord_post(&hub.discord_click("4343", &gq(&components, "deny"), &[]))
        .await;
    assert_eq!((status, dialog["type"].clone()), (200, json!(9)));
    let custom_id = dialog["data"]["custom_id"].as_str().unwrap().to_owned();
    assert_eq!(custom_id, format!("gq:deny:{}", second.id));
    let (status, answer) = hub
        .discord_post(&hub.discord_submit("4343", &custom_id, ""))
        .await;
    assert_eq!((status, answer), (200, json!({ "type": 6 })));
    hub.until("the Discord card settled", || {
        hub.discord.message(&discord_card.id).filter(|m| {
            m.components.is_empty()
                && serde_json::to_string(&m.embeds)
                    .unwrap()
                    .contains("Denied by bo")
        })
    })
    .await;
    let denied = question(&hub, second.id).await;
    assert_eq!(
        (
            denied.status,
            denied.decided_by.as_deref(),
            denied.comment.as_deref()
        ),
        (QuestionStatus::Denied, Some("bo"), None)
    );

    // A late Approve on the Discord card: deferred, then refused to the clicker only.
    let late = hub.discord_click("4242", &gq(&components, "approve"), &[]);
    let token = late["token"].as_str().unwrap().to_owned();
    assert_eq!(hub.discord_post(&late).await, (200, json!({ "type": 6 })));
    let followup = hub
        .until("the late click's answer", || {
            hub.discord
                .followups()
                .into_iter()
                .find(|f| f.token == token)
        })
        .await;
    assert_eq!(followup.flags, 64);
    assert!(
        followup.content.contains("already denied by bo"),
        "{}",
        followup.content
    );
    // And a late Deny says so at once, without a dialog.
    let (_, refused) = hub
        .discord_post(&hub.discord_click("4242", &gq(&components, "deny"), &[]))
        .await;
    assert_eq!(refused["type"], 4);
    assert!(
        refused["data"]["content"]
            .as_str()
            .unwrap()
            .contains("already denied by bo"),
        "{refused}"
    );
    assert_eq!(question(&hub, second.id).await, denied);
    hub.stop().await;
}

async fn the_status_comment_lists_questions_asked_and_answered(backend: Backend) {
    const HOLD: &str = "name: hold\nparams: { repo: {}, issue: {} }\nnodes:\n  review: { kind: gate, approvers: [group:leads] }\n";
    let hub = Gatehouse::builder(backend)
        .sops(&[("hold", HOLD)])
        .people(vec![Person {
            id: "ana".into(),
            github: Some("Codertocat".into()),
            slack: None,
            discord: None,
            groups: vec!["leads".into()],
        }])
        .github(vec![
            Trigger::new("bug", "hold", &["Codertocat/*".into()], false, false).unwrap(),
        ])
        .start()
        .await;
    let mut labeled: Value =
        serde_json::from_str(include_str!("../fixtures/github/issues.labeled.json")).unwrap();
    labeled["label"]["name"] = json!("bug");
    hub.deliver_github("issues", "d-label", &labeled).await;
    let run = hub.runs(1, "waiting", 1).await[0].id;
    hub.comments(1, 1, |c| c.contains("waiting_approval")).await;

    // The agent's words may try to mention or link: escaped on GitHub.
    let asked = ask_at(
        &hub,
        run,
        "review",
        None,
        "May I ping @octocat about [this](https://x)?",
        1,
    )
    .await;
    let waiting = hub
        .comments(1, 1, |c| c.contains("is waiting for a person"))
        .await;
    assert!(
        waiting[0].contains(&format!(
            "Agent **review** is waiting for a person: “May I ping \\@octocat about \\[this\\]\\(https://x\\)?” — answer on its card in chat or in the console (question `{}`).",
            asked.id
        )),
        "{}",
        waiting[0]
    );

    let token = hub
        .stored_token("ana", &[Scope::Read, Scope::Decide], None)
        .await;
    hub.api_as(&token)
        .post(
            &format!("/questions/{}/answer", asked.id),
            json!({ "answer": "approve", "comment": "go ahead" }),
        )
        .await
        .is(202);
    let answered = hub
        .comments(1, 1, |c| c.contains("Questions answered:"))
        .await;
    assert!(
        answered[0].contains("- **review** asked “May I ping \\@octocat about \\[this\\]\\(https://x\\)?” — approved by ana"),
        "{}",
        answered[0]
    );
    assert!(
        !answered[0].contains("is waiting for a person"),
        "{}",
        answered[0]
    );
    assert_eq!(
        hub.github.comments(REPO, 1).len(),
        1,
        "one status comment, edited"
    );
    hub.stop().await;
}

async fn a_conversations_question_goes_to_its_thread(backend: Backend) {
    let hub = hub(backend).await;
    let (run, root) = run_in_thread(&hub).await;
    // The thread's conversation, as ingest opens it for the assistant.
    let conversation = Uuid::now_v7();
    let mut tx = hub.db.store.begin().await.unwrap();
    tx.open_conversation(&NewConversation {
        id: conversation,
        requirement_id: run.requirement_id.unwrap(),
        project: "shop",
        platform: "slack",
        channel: REQUESTS,
        thread: &root,
        started_by: "cy",
        workspace: "{}",
        state: "{}",
    })
    .await
    .unwrap();
    let owner = ConnectionOwner::Turn {
        conversation_id: conversation,
        seq: 3,
    };
    let asked = tx
        .ask_question(&NewQuestion {
            owner: &owner,
            attempt: 1,
            project: Some("shop"),
            kind: gatehouse_store::QuestionKind::Permission,
            question: "agent wants to run `git push --force origin main`",
            evidence: None,
            digest: "push",
            asked_at: chrono::Utc::now(),
            expires_at: None,
        })
        .await
        .unwrap()
        .row()
        .clone();
    let event = Event::QuestionAsked(QuestionAsked {
        question_id: asked.id,
        owner: QuestionOwner::Turn {
            conversation_id: conversation,
            seq: 3,
        },
        attempt: 1,
        kind: QuestionKind::Permission,
        question: asked.question.clone(),
        evidence: None,
    });
    tx.append_outbox(&Envelope::new("runner", &event, None).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let tool_cards = |channel: &str| -> Vec<SlackMessage> {
        hub.slack
            .messages(channel)
            .into_iter()
            .filter(|m| m.text.starts_with("The agent wants to run a tool"))
            .collect()
    };
    let card = hub
        .until("the card in the conversation's thread", || {
            tool_cards(REQUESTS)
                .into_iter()
                .find(|m| m.thread_ts.as_deref() == Some(root.as_str()))
        })
        .await;
    let shown = card.blocks.to_string();
    assert!(shown.contains("Allow once"), "{shown}");
    assert!(
        shown.contains(&format!(
            "<https://gatehouse.test/conversations/{conversation}|Conversation {conversation}, turn 3>"
        )),
        "{shown}"
    );
    hub.until("the card in the approvals channel", || {
        tool_cards(APPROVALS).pop()
    })
    .await;

    hub.slack_click(BO, REQUESTS, &gq(&card.blocks, "approve"))
        .await;
    let allowed = answered(&hub, asked.id).await;
    assert_eq!(
        (allowed.status, allowed.decided_by.as_deref()),
        (QuestionStatus::Approved, Some("bo"))
    );
    for channel in [REQUESTS, APPROVALS] {
        hub.until("the card settled", || {
            tool_cards(channel).into_iter().find(|m| {
                m.blocks.to_string().contains("Approved by bo")
                    && !m.blocks.to_string().contains("gq:")
            })
        })
        .await;
    }
    hub.stop().await;
}
