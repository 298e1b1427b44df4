//! `@gatehouse login` end to end: the mention goes through ingest, the notifier mints the
//! link as it posts the direct message to the fake Slack or Discord, and the link from that
//! message signs a browser in to the console, once. The database never holds the secret.

use std::time::Duration;

use gatehouse_discord::GatewaySink;
use gatehouse_ingest::DiscordSink;
use gatehouse_tests::fake_discord::FakeDiscord;
use gatehouse_tests::fake_slack::{self, SlackMessage};
use gatehouse_tests::gatehouse::PUBLIC_URL;
use gatehouse_tests::gatehouse::chat::{self, ANA, DISCORD_REQUESTS, EVE};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};

on_both_backends!(
    a_slack_login_sends_a_link_by_direct_message_that_signs_in_once,
    a_discord_login_opens_a_direct_message_channel,
    strangers_get_no_link,
    without_a_public_url_no_link_is_sent,
);

/// A channel of no project and no SOP.
const OPS: &str = "C0OPS";

/// The bot's answer in the thread `root` of `channel`, once posted.
async fn answer_in(hub: &Gatehouse, channel: &str, root: &str) -> SlackMessage {
    hub.until("the answer in the thread", || {
        hub.slack
            .messages(channel)
            .into_iter()
            .find(|m| m.user == fake_slack::BOT_USER && m.thread_ts.as_deref() == Some(root))
    })
    .await
}

/// The secret of the one sign-in link in `text`.
fn secret_in(text: &str) -> String {
    let (_, rest) = text
        .split_once(&format!("{PUBLIC_URL}/login/"))
        .unwrap_or_else(|| panic!("no sign-in link in {text:?}"));
    rest.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Signs a browser in with `secret` and checks it became `person`; the link is then used.
async fn signs_in_once(hub: &Gatehouse, secret: &str, person: &str) {
    let link = format!("/login/{secret}");
    let mut browser = hub.browser();
    browser.sign_in(&link).await.expect_status(303);
    let inbox = browser.get("/").await.expect_status(200);
    assert!(
        inbox.contains(&format!("Signed in as <strong>{person}</strong>")),
        "{}",
        inbox.html
    );
    hub.browser().get(&link).await.expect_status(410);
}

/// The stored chat message `key` says what to send, never the link itself.
async fn stored_without_secret(hub: &Gatehouse, key: &str, secret: &str) {
    let row = hub
        .db
        .store
        .chat_message(key)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no chat message {key}"));
    assert!(
        row.body.contains(r#""kind":"login_link""#) && row.body.contains(r#""person":"ana""#),
        "{}",
        row.body
    );
    assert!(
        !row.body.contains("/login/") && !row.body.contains(secret),
        "{}",
        row.body
    );
    assert!(
        hub.db.store.login_link(secret).await.unwrap().is_none(),
        "links are stored by hash only"
    );
    let hash = gatehouse_ingest::hash_token(secret);
    let link = hub
        .db
        .store
        .login_link(&hash)
        .await
        .unwrap()
        .expect("minted");
    assert_eq!(
        (link.person.as_str(), link.scopes.as_str()),
        ("ana", "read,run,decide")
    );
}

async fn a_slack_login_sends_a_link_by_direct_message_that_signs_in_once(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    let root = hub.slack_mention("Ev-login", OPS, ANA, "login").await;
    // Slack delivers the same event again: nothing is sent twice.
    hub.slack_mention("Ev-login", OPS, ANA, "login").await;
    let answer = answer_in(&hub, OPS, &root).await;
    assert_eq!(
        answer.text, "I sent you a sign-in link by direct message.",
        "{answer:?}"
    );
    // The direct message: posted to ana's user id, which Slack reads as her direct
    // messages with the app.
    let dm = hub
        .until("the direct message", || hub.slack.messages(ANA).pop())
        .await;
    assert_eq!(dm.user, fake_slack::BOT_USER);
    assert_eq!(dm.thread_ts, None);
    assert!(
        dm.text
            .starts_with("Your sign-in link for Gatehouse (works once, for 15 minutes): "),
        "{}",
        dm.text
    );
    let secret = secret_in(&dm.text);
    assert!(secret.starts_with("gh_"), "{secret}");
    stored_without_secret(&hub, "login:slack:Ev-login", &secret).await;
    signs_in_once(&hub, &secret, "ana").await;

    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hub.slack.messages(ANA).len(), 1, "one direct message");
    assert_eq!(
        hub.slack
            .messages(OPS)
            .iter()
            .filter(|m| m.user == fake_slack::BOT_USER)
            .count(),
        1,
        "one answer"
    );
    hub.stop().await;
}

async fn a_discord_login_opens_a_direct_message_channel(backend: Backend) {
    let discord = FakeDiscord::start().await;
    // Opening the channel fails once: the notifier tries again later.
    discord.fail_next("POST /users/@me/channels", 503);
    let hub = chat::builder(backend).discord(discord).start().await;
    let sink = DiscordSink::new(hub.api.clone());
    let mention = gatehouse_discord::Mention {
        message_id: "1300000000000000077".into(),
        channel_id: DISCORD_REQUESTS.into(),
        guild_id: Some("290926798626357999".into()),
        author: "4242".into(),
        text: "login".into(),
        reply_to: None,
    };
    sink.mention(mention.clone()).await;
    // The gateway replays a message after a resume: stored once.
    sink.mention(mention).await;
    let reply = hub
        .until("the reply", || {
            hub.discord
                .messages(DISCORD_REQUESTS)
                .into_iter()
                .find(|m| m.content.contains("direct message"))
        })
        .await;
    assert_eq!(
        reply.message_reference.as_ref().unwrap()["message_id"],
        "1300000000000000077"
    );
    let channel = hub
        .until("the direct-message channel", || {
            hub.discord.dm_channel("4242")
        })
        .await;
    let dm = hub
        .until("the direct message", || {
            hub.discord.messages(&channel).pop()
        })
        .await;
    assert_eq!(dm.message_reference, None);
    let secret = secret_in(&dm.content);
    stored_without_secret(&hub, "login:discord:message:1300000000000000077", &secret).await;
    signs_in_once(&hub, &secret, "ana").await;

    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        hub.discord.messages(&channel).len(),
        1,
        "one direct message"
    );
    let opened: Vec<_> = hub
        .discord
        .calls()
        .into_iter()
        .filter(|(call, _)| call == "POST /users/@me/channels")
        .collect();
    assert_eq!(opened.len(), 2, "refused once, then opened: {opened:?}");
    assert_eq!(opened[1].1["recipient_id"], "4242");
    hub.stop().await;
}

async fn strangers_get_no_link(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    let root = hub.slack_mention("Ev-eve", OPS, EVE, "login").await;
    let answer = answer_in(&hub, OPS, &root).await;
    assert!(
        answer
            .text
            .contains("is not one of the people known to Gatehouse"),
        "{}",
        answer.text
    );
    // Extra words are refused like any command's.
    let root = hub.slack_mention("Ev-extra", OPS, ANA, "login now").await;
    let answer = answer_in(&hub, OPS, &root).await;
    assert!(
        answer.text.contains("login: unexpected `now`"),
        "{}",
        answer.text
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hub.slack.messages(EVE).is_empty());
    assert!(hub.slack.messages(ANA).is_empty());
    for key in ["login:slack:Ev-eve", "login:slack:Ev-extra"] {
        assert!(hub.db.store.chat_message(key).await.unwrap().is_none());
    }
    hub.stop().await;
}

async fn without_a_public_url_no_link_is_sent(backend: Backend) {
    let hub = chat::builder(backend).no_public_url().start().await;
    let root = hub.slack_mention("Ev-login", OPS, ANA, "login").await;
    let answer = answer_in(&hub, OPS, &root).await;
    assert!(
        answer.text.contains("`server.public_url`") && answer.text.contains("`gatehouse login`"),
        "{}",
        answer.text
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hub.slack.messages(ANA).is_empty());
    assert!(
        hub.db
            .store
            .chat_message("login:slack:Ev-login")
            .await
            .unwrap()
            .is_none()
    );
    hub.stop().await;
}
