//! Slack and Discord end to end: signed requests (the real payloads from bolt-python and
//! Discord's docs, re-addressed) over HTTP on loopback into ingest, decided by the real
//! scheduler on a real database, with cards and replies posted by the notifier to stateful
//! fakes of Slack's Web API and Discord's REST API.

use std::time::Duration;

use ed25519_dalek::SigningKey;
use gatehouse_discord::GatewaySink;
use gatehouse_ingest::DiscordSink;
use gatehouse_store::RunRow;
use gatehouse_tests::fake_discord::FakeDiscord;
use gatehouse_tests::fake_slack::{self, FakeSlack, Fault, SlackMessage};
use gatehouse_tests::gatehouse::chat::{self, *};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use serde_json::{Value, json};
use uuid::Uuid;

on_both_backends!(
    a_slack_request_becomes_a_run_whose_card_decides_it,
    bad_slack_and_discord_requests_change_nothing,
    double_clicks_decide_once_and_old_cards_are_refused,
    unknown_people_requesters_and_non_approvers_are_refused,
    min_approvals_collects_distinct_people,
    discord_buttons_and_dialogs_decide_gates,
    a_card_posted_before_a_failure_is_not_posted_twice,
    a_restart_between_posting_and_storing_the_id_posts_nothing_twice,
    commands_in_chat_name_runs_and_gates_anywhere,
);

async fn a_slack_request_becomes_a_run_whose_card_decides_it(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    // Slack checks the endpoint first.
    let challenge = json!({ "token": "t", "challenge": "3eZbrw1aB", "type": "url_verification" });
    let (status, answer) = hub
        .slack_post(
            "/webhooks/slack/events",
            challenge.to_string().as_bytes(),
            now(),
            None,
        )
        .await;
    assert_eq!(
        (status, answer.as_str()),
        (200, r#"{"challenge":"3eZbrw1aB"}"#)
    );

    let root = hub
        .slack_mention(
            "Ev1",
            REQUESTS,
            BO,
            "please fix the flaky login test\nit times out on CI",
        )
        .await;
    // Slack retries an event it thinks was not answered: same event id, stored once.
    let mut retry: Value = serde_json::from_str(include_str!(
        "../fixtures/slack/event_callback.app_mention.json"
    ))
    .unwrap();
    retry["event_id"] = json!("Ev1");
    retry["event"]["channel"] = json!(REQUESTS);
    retry["event"]["user"] = json!(BO);
    retry["event"]["ts"] = json!(root);
    retry["event"]["text"] = json!("<@U0GATEHOUSE> please fix the flaky login test");
    let (status, _) = hub
        .slack_post(
            "/webhooks/slack/events",
            retry.to_string().as_bytes(),
            now(),
            None,
        )
        .await;
    assert_eq!(status, 200);

    let run = hub.run_with_status("waiting").await;
    let requirement = hub
        .db
        .store
        .requirement(run.requirement_id.unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(requirement.source_key, format!("slack:{REQUESTS}:{root}"));
    assert_eq!(requirement.title, "please fix the flaky login test");
    assert_eq!(requirement.requested_by, "bo");

    // One card in the approvals channel, one in the request's thread.
    let card = hub
        .until("the approvals card", || hub.slack_cards(APPROVALS).pop())
        .await;
    let in_thread = hub
        .until("the card in the thread", || {
            hub.slack_cards(REQUESTS)
                .into_iter()
                .find(|m| m.thread_ts.as_deref() == Some(root.as_str()))
        })
        .await;
    let approve = control(&card.blocks, "approve");
    assert_eq!(approve, format!("gh:approve:{}:1:check", run.id));
    // The card links to the gate on the run's console page.
    let page = format!("https://gatehouse.test/runs/{}#node-check", run.id);
    assert!(card.blocks.to_string().contains(&page), "{}", card.blocks);
    assert_eq!(controls(&in_thread.blocks), controls(&card.blocks));
    let shown = card.blocks.to_string();
    assert!(shown.contains("draft/notes.md"), "{shown}");
    assert!(
        shown.contains(&format!("draft of {}", run.id)),
        "excerpt: {shown}"
    );
    assert!(shown.contains("group:leads"), "who may decide: {shown}");
    assert!(shown.contains("please fix the flaky login test"), "{shown}");
    // The request got one answer in its thread, and the run's progress one message.
    let replies = hub
        .until("the reply", || {
            let replies: Vec<_> = hub
                .slack
                .messages(REQUESTS)
                .into_iter()
                .filter(|m| {
                    m.user == fake_slack::BOT_USER && m.text.contains("Noted as a requirement")
                })
                .collect();
            (!replies.is_empty()).then_some(replies)
        })
        .await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].thread_ts.as_deref(), Some(root.as_str()));
    assert!(
        replies[0].text.contains(&run.id.to_string()),
        "{}",
        replies[0].text
    );

    // A host the egress proxy refused the run's sandbox: the progress names it once.
    let refused = gatehouse_store::ConnectionRow {
        owner: gatehouse_store::ConnectionOwner::Node {
            run_id: run.id,
            node: "draft".into(),
        },
        attempt: 1,
        host: "pypi.org".into(),
        port: 443,
        verdict: gatehouse_store::ConnectionVerdict::Refused,
        reason: Some("not in the egress allow-list".into()),
        bytes_up: 0,
        bytes_down: 0,
        started_at: chrono::Utc::now(),
        duration_ms: 1,
    };
    hub.db
        .store
        .record_connections(&[refused.clone(), refused])
        .await
        .unwrap();

    assert_eq!(hub.slack_click(ANA, APPROVALS, &approve).await, 200);
    hub.run_with_status("succeeded").await;
    assert_eq!(
        hub.applied(run.id).await,
        vec![("approve".into(), "ana".into())]
    );
    // Every card of the gate shows who decided, and no buttons.
    for channel in [APPROVALS, REQUESTS] {
        hub.until("decided cards", || {
            hub.slack_cards(channel)
                .into_iter()
                .all(|c| {
                    controls(&c.blocks).is_empty()
                        && c.blocks.to_string().contains("Approved by ana")
                })
                .then_some(())
        })
        .await;
    }
    let progress = hub
        .until("progress that says succeeded", || {
            let progress: Vec<_> = hub
                .slack
                .messages(REQUESTS)
                .into_iter()
                .filter(|m| m.text.starts_with("Run ") && m.user == fake_slack::BOT_USER)
                .collect();
            progress
                .iter()
                .all(|m| m.text.ends_with("succeeded"))
                .then_some(progress)
        })
        .await;
    assert_eq!(
        progress.len(),
        1,
        "one progress message, edited: {progress:?}"
    );
    assert!(progress[0].updates >= 1);
    assert_eq!(progress[0].thread_ts.as_deref(), Some(root.as_str()));
    let lines = progress[0].blocks.to_string();
    assert_eq!(
        lines
            .matches("blocked pypi.org:443 — add it to the profile's egress")
            .count(),
        1,
        "{lines}"
    );
    // No more than that: one card per place, one reply, one progress message.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        hub.slack.calls_of("chat.postMessage").len(),
        4,
        "{:?}",
        hub.slack.calls()
    );
    hub.stop().await;
}

async fn bad_slack_and_discord_requests_change_nothing(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    let event = serde_json::to_vec(&json!({
        "type": "event_callback", "event_id": "Ev-bad", "team_id": "T1",
        "event": { "type": "app_mention", "user": BO, "channel": REQUESTS, "ts": "1.000001",
                   "text": "<@U0GATEHOUSE> run review" },
    }))
    .unwrap();
    let forged = gatehouse_slack::sign_request(b"not the secret", now(), &event);
    let (status, answer) = hub
        .slack_post("/webhooks/slack/events", &event, now(), Some(forged))
        .await;
    assert_eq!(status, 401, "{answer}");
    let stale = now() - 301;
    let (status, answer) = hub
        .slack_post("/webhooks/slack/events", &event, stale, None)
        .await;
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("possible replay"), "{answer}");
    let (status, _) = hub
        .slack_post("/webhooks/slack/events", b"{not json", now(), None)
        .await;
    assert_eq!(status, 400);
    let (status, _) = hub
        .slack_post("/webhooks/slack/interactions", b"nothing=here", now(), None)
        .await;
    assert_eq!(status, 400);
    let huge = vec![b'a'; 128 * 1024];
    let (status, _) = hub
        .slack_post("/webhooks/slack/events", &huge, now(), None)
        .await;
    assert_eq!(status, 413);
    // A button Gatehouse never made: answered only to the clicker, and not stored.
    let click = hub.slack_click_body(BO, APPROVALS, "deploy_now");
    let (status, _) = hub
        .slack_post("/webhooks/slack/interactions", &click, now(), None)
        .await;
    assert_eq!(status, 200);
    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&click).unwrap();
    let payload: Value = serde_json::from_str(&fields[0].1).unwrap();
    let click_id = format!("interaction:{}", payload["trigger_id"].as_str().unwrap());
    let ephemeral = hub
        .until("the ephemeral answer", || hub.slack.ephemerals().pop())
        .await;
    assert_eq!(ephemeral.user, BO);
    assert!(
        ephemeral.text.contains("not one Gatehouse knows"),
        "{}",
        ephemeral.text
    );

    // Discord: PING → PONG, a forged signature is 401, a body that is not an interaction 400.
    let ping: Value = serde_json::from_str(include_str!(
        "../fixtures/discord/interaction.ping.discord-interactions-js.json"
    ))
    .unwrap();
    assert_eq!(hub.discord_post(&ping).await, (200, json!({ "type": 1 })));
    let body = ping.to_string();
    let other = SigningKey::generate(&mut rand::rngs::OsRng);
    let response = hub
        .http
        .post(format!("{}/webhooks/discord/interactions", hub.url))
        .header(
            "X-Signature-Ed25519",
            gatehouse_discord::sign_interaction(&other, "1", body.as_bytes()),
        )
        .header("X-Signature-Timestamp", "1")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let (status, _) = hub.discord_post(&json!({ "hello": "world" })).await;
    assert_eq!(status, 400);
    let unknown = hub.discord_click("4242", "click_one", &[]);
    let (status, answer) = hub.discord_post(&unknown).await;
    assert_eq!(status, 200);
    assert_eq!(answer["type"], 4);
    assert_eq!(answer["data"]["flags"], 64);

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hub.db.store.runs(None, &[], 10).await.unwrap().is_empty());
    let discord_id = format!("interaction:{}", unknown["id"].as_str().unwrap());
    for (source, id) in [
        ("slack", "Ev-bad"),
        ("slack", click_id.as_str()),
        ("discord", discord_id.as_str()),
    ] {
        let stored = hub.db.store.delivery(source, id).await.unwrap();
        assert!(stored.is_none(), "{source} {id} was stored: {stored:?}");
    }
    hub.stop().await;
}

/// Starts `review` from the requests channel and waits for its card.
async fn review_waiting(hub: &Gatehouse) -> (RunRow, SlackMessage) {
    hub.slack_mention(
        &format!("Ev{}", Uuid::new_v4().simple()),
        REQUESTS,
        CY,
        "run review",
    )
    .await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the card", || hub.slack_cards(APPROVALS).pop())
        .await;
    (run, card)
}

async fn double_clicks_decide_once_and_old_cards_are_refused(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    let (run, card) = review_waiting(&hub).await;
    // Send back: the click opens a dialog listing the targets, its submission decides.
    let send_back = control(&card.blocks, "send-back");
    hub.slack_click(ANA, APPROVALS, &send_back).await;
    let view = hub.until("the dialog", || hub.slack.views().pop()).await;
    assert!(view.to_string().contains("draft"), "{view}");
    hub.slack_submit(ANA, &view, "draft", "tighten the wording")
        .await;
    hub.node(run.id, "check", "waiting_approval", 2).await;
    assert_eq!(
        hub.applied(run.id).await,
        vec![("send_back".into(), "ana".into())]
    );
    let second = hub
        .until("the card of attempt 2", || {
            hub.slack_cards(APPROVALS)
                .into_iter()
                .find(|c| controls(&c.blocks).iter().any(|id| id.contains(":2:check")))
        })
        .await;
    // The first card now says what happened to attempt 1 and has no buttons.
    hub.until("the first card settled", || {
        hub.slack_cards(APPROVALS)
            .into_iter()
            .find(|c| c.ts == card.ts && c.blocks.to_string().contains("Sent back to draft by ana"))
    })
    .await;

    // A click on the old card: refused, only the clicker is told.
    hub.slack_click(BO, APPROVALS, &control(&card.blocks, "approve"))
        .await;
    let refused = hub
        .until("the stale-card answer", || {
            hub.slack.ephemerals().into_iter().find(|e| e.user == BO)
        })
        .await;
    assert!(refused.text.contains("attempt 1"), "{}", refused.text);

    // Two people click at once: one decision; the other is told who made it.
    let approve = control(&second.blocks, "approve");
    let (a, b) = tokio::join!(
        hub.slack_click(ANA, APPROVALS, &approve),
        hub.slack_click(BO, APPROVALS, &approve)
    );
    assert_eq!((a, b), (200, 200));
    hub.run_with_status("succeeded").await;
    let applied = hub.applied(run.id).await;
    assert_eq!(applied.len(), 2, "{applied:?}");
    let winner = applied[1].1.clone();
    let loser = if winner == "ana" { BO } else { ANA };
    let told = hub
        .until("the loser's answer", || {
            hub.slack
                .ephemerals()
                .into_iter()
                .find(|e| e.user == loser && e.text.contains("already approved"))
        })
        .await;
    assert!(told.text.contains(&format!("by {winner}")), "{}", told.text);
    // A double click by the same person does nothing more.
    hub.slack_click(ANA, APPROVALS, &approve).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hub.applied(run.id).await.len(), 2);
    hub.stop().await;
}

async fn unknown_people_requesters_and_non_approvers_are_refused(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    // Someone not in [[people]] asks for work: a polite no, nothing created.
    hub.slack_mention("Ev-eve", REQUESTS, EVE, "please delete the prod database")
        .await;
    let no = hub
        .until("the answer to a stranger", || {
            hub.slack
                .messages(REQUESTS)
                .into_iter()
                .find(|m| m.user == fake_slack::BOT_USER)
        })
        .await;
    assert!(no.text.contains("Sorry"), "{}", no.text);
    assert!(hub.db.store.runs(None, &[], 10).await.unwrap().is_empty());

    // bo asks (and is a lead); the gate forbids the requester from approving.
    hub.slack_mention("Ev-bo", REQUESTS, BO, "run review").await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the card", || hub.slack_cards(APPROVALS).pop())
        .await;
    let approve = control(&card.blocks, "approve");
    for (user, why) in [
        (EVE, "not one of the people configured"),
        (BO, "requester"),
        (CY, "may not decide"),
    ] {
        hub.slack_click(user, APPROVALS, &approve).await;
        let answer = hub
            .until("the refusal", || {
                hub.slack.ephemerals().into_iter().find(|e| e.user == user)
            })
            .await;
        assert!(answer.text.contains(why), "{user}: {}", answer.text);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(hub.applied(run.id).await.is_empty());
    assert_eq!(
        hub.db.store.run(run.id).await.unwrap().unwrap().status,
        "waiting"
    );
    hub.stop().await;
}

async fn min_approvals_collects_distinct_people(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    hub.slack_mention("Ev-pair", APPROVALS, CY, "run pair")
        .await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the card", || hub.slack_cards(APPROVALS).pop())
        .await;
    let approve = control(&card.blocks, "approve");
    hub.slack_click(ANA, APPROVALS, &approve).await;
    hub.until("one approval on the card", || {
        hub.slack_cards(APPROVALS).into_iter().find(|c| {
            c.blocks
                .to_string()
                .contains("1 of 2 approvals so far: ana")
        })
    })
    .await;
    hub.slack_click(ANA, APPROVALS, &approve).await;
    let again = hub
        .until("the answer to a second approval", || {
            hub.slack.ephemerals().into_iter().find(|e| e.user == ANA)
        })
        .await;
    assert!(
        again.text.contains("ana has already approved"),
        "{}",
        again.text
    );
    assert_eq!(
        hub.db.store.run(run.id).await.unwrap().unwrap().status,
        "waiting"
    );
    hub.slack_click(BO, APPROVALS, &approve).await;
    hub.run_with_status("succeeded").await;
    hub.until("the outcome with both approvers", || {
        hub.slack_cards(APPROVALS)
            .into_iter()
            .find(|c| c.blocks.to_string().contains("Approved by ana, bo"))
    })
    .await;
    hub.stop().await;
}

async fn discord_buttons_and_dialogs_decide_gates(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    let sink = DiscordSink::new(hub.api.clone());
    let mention = |id: &str, text: &str| gatehouse_discord::Mention {
        message_id: id.into(),
        channel_id: DISCORD_REQUESTS.into(),
        guild_id: Some("290926798626357999".into()),
        author: "4444".into(),
        text: text.into(),
        reply_to: None,
    };
    sink.mention(mention(
        "1300000000000000001",
        "the export button is broken",
    ))
    .await;
    // The gateway may replay a message after a resume: stored once.
    sink.mention(mention(
        "1300000000000000001",
        "the export button is broken",
    ))
    .await;
    let run = hub.run_with_status("waiting").await;
    let card = hub
        .until("the Discord card", || {
            hub.discord
                .messages(DISCORD_APPROVALS)
                .into_iter()
                .find(|m| !m.components.is_empty())
        })
        .await;
    let components = Value::Array(card.components.clone());
    let reply = hub
        .until("the reply", || {
            hub.discord
                .messages(DISCORD_REQUESTS)
                .into_iter()
                .find(|m| m.content.contains("Noted as a requirement"))
        })
        .await;
    assert_eq!(
        reply.message_reference.as_ref().unwrap()["message_id"],
        "1300000000000000001"
    );

    // Send back: choosing a target opens a dialog; its submission decides.
    let (status, dialog) = hub
        .discord_post(&hub.discord_click("4242", &control(&components, "send-back"), &["draft"]))
        .await;
    assert_eq!((status, dialog["type"].clone()), (200, json!(9)));
    let custom_id = dialog["data"]["custom_id"].as_str().unwrap().to_owned();
    let (status, answer) = hub
        .discord_post(&hub.discord_submit("4242", &custom_id, "split the commit"))
        .await;
    assert_eq!((status, answer), (200, json!({ "type": 6 })));
    hub.node(run.id, "check", "waiting_approval", 2).await;
    let comment = hub.db.store.decisions(run.id).await.unwrap()[0]
        .comment
        .clone();
    assert_eq!(comment.as_deref(), Some("split the commit"));

    // The old card's buttons are gone; the new card's reject asks for confirmation first.
    hub.until("the first card settled", || {
        hub.discord
            .message(&card.id)
            .filter(|m| m.components.is_empty() && m.edits > 0)
    })
    .await;
    let second = hub
        .until("the card of attempt 2", || {
            hub.discord
                .messages(DISCORD_APPROVALS)
                .into_iter()
                .find(|m| {
                    controls(&Value::Array(m.components.clone()))
                        .iter()
                        .any(|c| c.contains(":2:check"))
                })
        })
        .await;
    let reject = control(&Value::Array(second.components.clone()), "reject");
    // A click on the old card: deferred, then refused only to the clicker.
    let stale = hub.discord_click("4343", &control(&components, "approve"), &[]);
    let token = stale["token"].as_str().unwrap().to_owned();
    assert_eq!(hub.discord_post(&stale).await, (200, json!({ "type": 6 })));
    let followup = hub
        .until("the stale-card answer", || {
            hub.discord
                .followups()
                .into_iter()
                .find(|f| f.token == token)
        })
        .await;
    assert_eq!(followup.flags, 64);
    assert!(
        followup.content.contains("attempt 1"),
        "{}",
        followup.content
    );

    let (_, confirm) = hub
        .discord_post(&hub.discord_click("4343", &reject, &[]))
        .await;
    assert_eq!(confirm["type"], 9);
    assert_eq!(
        hub.db.store.run(run.id).await.unwrap().unwrap().status,
        "waiting"
    );
    let confirm_id = confirm["data"]["custom_id"].as_str().unwrap().to_owned();
    hub.discord_post(&hub.discord_submit("4343", &confirm_id, "not needed after all"))
        .await;
    hub.run_with_status("failed").await;
    hub.until("the second card settled", || {
        hub.discord.message(&second.id).filter(|m| {
            m.components.is_empty()
                && serde_json::to_string(&m.embeds)
                    .unwrap()
                    .contains("Rejected by bo")
        })
    })
    .await;
    hub.stop().await;
}

async fn a_card_posted_before_a_failure_is_not_posted_twice(backend: Backend) {
    let slack = FakeSlack::start().await;
    let discord = FakeDiscord::start().await;
    // Both platforms store the card, then fail the request: the caller cannot tell it
    // worked, as after a crash between "posted" and "id stored".
    slack.fail_next("chat.postMessage", Fault::StoreThenStatus(500));
    slack.fail_next("chat.postMessage", Fault::RateLimited { retry_after: 1 });
    discord.store_then_fail_creates(1);
    let hub = chat::builder(backend)
        .slack(slack)
        .discord(discord)
        .start()
        .await;
    let (run, _) = review_waiting(&hub).await;
    let approve = format!("gh:approve:{}:1:check", run.id);
    hub.until("the Discord card", || {
        hub.discord
            .messages(DISCORD_APPROVALS)
            .into_iter()
            .find(|m| controls(&Value::Array(m.components.clone())).contains(&approve))
    })
    .await;
    hub.slack_click(ANA, APPROVALS, &approve).await;
    hub.run_with_status("succeeded").await;
    hub.until("the settled cards", || {
        let slack_done = hub
            .slack_cards(APPROVALS)
            .iter()
            .all(|c| controls(&c.blocks).is_empty());
        let discord_done = hub
            .discord
            .messages(DISCORD_APPROVALS)
            .iter()
            .all(|m| m.components.is_empty());
        (slack_done && discord_done).then_some(())
    })
    .await;
    assert_eq!(
        hub.slack_cards(APPROVALS).len(),
        1,
        "{:?}",
        hub.slack.calls()
    );
    assert_eq!(hub.discord.messages(DISCORD_APPROVALS).len(), 1);
    hub.stop().await;
}

async fn a_restart_between_posting_and_storing_the_id_posts_nothing_twice(backend: Backend) {
    let db = gatehouse_tests::TestDb::new(backend).await;
    let slack = FakeSlack::start().await;
    let discord = FakeDiscord::start().await;
    let slack_client =
        gatehouse_slack::SlackClient::new(&slack.api_url(), fake_slack::BOT_TOKEN.into()).unwrap();
    let discord_client = gatehouse_discord::DiscordClient::new(
        &discord.api_url(),
        FakeDiscord::TOKEN.into(),
        FakeDiscord::APPLICATION_ID,
    )
    .unwrap();
    // What a poster killed mid-post leaves: the chats show the messages, while the
    // database knows posting was tried but not the messages' ids.
    let text = "posted before the crash";
    let slack_ts = slack_client
        .post_message(
            APPROVALS,
            None,
            &gatehouse_slack::text_message(text),
            "reply:slack:k1",
        )
        .await
        .unwrap();
    let discord_id = discord_client
        .create_message(
            DISCORD_APPROVALS,
            None,
            &gatehouse_discord::text_message(text),
            "reply:discord:k2",
        )
        .await
        .unwrap();
    let body = serde_json::to_string(&gatehouse_chat::Body::text(text)).unwrap();
    let rows = [
        ("reply:slack:k1", "slack", APPROVALS),
        ("reply:discord:k2", "discord", DISCORD_APPROVALS),
    ];
    let mut tx = db.store.begin().await.unwrap();
    for (key, platform, channel) in rows {
        tx.want_chat_message(&gatehouse_store::WantChat {
            key,
            platform,
            channel,
            thread: None,
            recipient: None,
            run_id: None,
            body: &body,
        })
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    for (key, _, _) in rows {
        db.store.chat_first_try(key).await.unwrap();
    }

    // The notifier starts again.
    let stop = tokio_util::sync::CancellationToken::new();
    let bus: std::sync::Arc<dyn gatehouse_bus::Bus> =
        std::sync::Arc::new(gatehouse_bus::InProcessBus::new(db.store.clone()));
    let outputs = gatehouse_notifier::ChatOutputs {
        slack: Some(gatehouse_notifier::SlackOutput {
            client: slack_client,
            approvals_channel: None,
        }),
        discord: Some(gatehouse_notifier::DiscordOutput {
            client: discord_client,
            approvals_channel: None,
        }),
    };
    let notifier = gatehouse_fleet::Fleet::builder(db.store.clone(), bus)
        .notifier(gatehouse_notifier::Notifier::new(db.store.clone(), None).with_chat(outputs))
        .spawn(stop.clone());
    for (key, expected) in [
        ("reply:slack:k1", &slack_ts),
        ("reply:discord:k2", &discord_id),
    ] {
        let mut row = None;
        for _ in 0..500 {
            row = db.store.chat_message(key).await.unwrap();
            if row.as_ref().is_some_and(|r| !r.dirty) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let row = row.unwrap();
        assert!(!row.dirty, "{key} was never posted");
        assert_eq!(row.message_id.as_ref(), Some(expected), "{key}");
    }
    assert_eq!(slack.messages(APPROVALS).len(), 1, "{:?}", slack.calls());
    assert_eq!(
        discord.messages(DISCORD_APPROVALS).len(),
        1,
        "{:?}",
        discord.calls()
    );
    notifier.stop().await;
    db.cleanup().await;
}

async fn commands_in_chat_name_runs_and_gates_anywhere(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    let (run, _) = review_waiting(&hub).await;
    let answer = |root: String| {
        let hub = &hub;
        move || {
            hub.slack.messages("C0OPS").into_iter().find(|m| {
                m.user == fake_slack::BOT_USER && m.thread_ts.as_deref() == Some(root.as_str())
            })
        }
    };
    // Another channel than the run's: commands name what they act on.
    let root = hub
        .slack_mention("Ev-status", "C0OPS", CY, &format!("status {}", run.id))
        .await;
    let status = hub.until("the status answer", answer(root)).await;
    assert!(
        status.text.contains(&format!(
            "gate `{}/check` (attempt 1) waits for group:leads",
            run.id
        )),
        "{}",
        status.text
    );
    let root = hub.slack_mention("Ev-typo", "C0OPS", CY, "stauts").await;
    let typo = hub.until("the answer to a typo", answer(root)).await;
    assert!(typo.text.contains("unknown command"), "{}", typo.text);
    assert!(
        typo.text.contains("send-back NODE"),
        "help follows: {}",
        typo.text
    );
    let root = hub
        .slack_mention(
            "Ev-approve",
            "C0OPS",
            ANA,
            &format!("approve {}/check fine by me", run.id),
        )
        .await;
    let done = hub.until("the answer to approve", answer(root)).await;
    assert!(done.text.contains("decided"), "{}", done.text);
    hub.run_with_status("succeeded").await;
    let decisions = hub.db.store.decisions(run.id).await.unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].comment.as_deref(), Some("fine by me"));
    assert_eq!(decisions[0].channel, "slack");
    hub.stop().await;
}
