//! Signed requests replayed later: a Discord interaction carries its signature forever, so
//! only its timestamp tells a click made now from one captured an hour ago. (GitHub's
//! comment commands replayed under a new delivery id: tests/github.rs.)

use gatehouse_tests::gatehouse::chat::{self, *};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use serde_json::{Value, json};

on_both_backends!(a_correctly_signed_discord_interaction_from_another_time_is_refused);

/// Posts `body` signed with the application's key at `timestamp`.
async fn post_signed_at(hub: &Gatehouse, body: &Value, timestamp: i64) -> u16 {
    let body = serde_json::to_vec(body).unwrap();
    let timestamp = timestamp.to_string();
    hub.http
        .post(format!("{}/webhooks/discord/interactions", hub.url))
        .header("Content-Type", "application/json")
        .header(
            "X-Signature-Ed25519",
            gatehouse_discord::sign_interaction(&hub.key, &timestamp, &body),
        )
        .header("X-Signature-Timestamp", timestamp)
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn a_correctly_signed_discord_interaction_from_another_time_is_refused(backend: Backend) {
    let hub = chat::builder(backend).start().await;
    let click = hub.discord_click("4242", "click_one", &[]);
    let stored = || async { hub.db.store.pending_deliveries(100).await.unwrap().len() };
    let before = stored().await;
    // Six minutes ago and six minutes ahead: refused although the signature is good.
    assert_eq!(post_signed_at(&hub, &click, now() - 360).await, 401);
    assert_eq!(post_signed_at(&hub, &click, now() + 360).await, 401);
    assert_eq!(stored().await, before, "nothing is stored");
    // Within the window it is taken (an unknown control: answered, nothing decided).
    assert_eq!(post_signed_at(&hub, &click, now() - 240).await, 200);
    let ping = json!({ "type": 1, "id": "1", "application_id": "1", "token": "t", "version": 1 });
    assert_eq!(post_signed_at(&hub, &ping, now()).await, 200);
    hub.stop().await;
}
