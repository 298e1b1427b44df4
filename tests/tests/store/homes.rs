//! Conversations' homes: one latest row per conversation, replaced by the next turn's, a
//! home that was not saved kept as such (no manifest) with the runner that has it.

use chrono::{SubsecRound, Utc};
use gatehouse_store::HomeRow;
use gatehouse_tests::{Backend, TestDb, on_both_backends};
use uuid::Uuid;

on_both_backends!(a_conversations_latest_home_replaces_the_one_before);

async fn a_conversations_latest_home_replaces_the_one_before(backend: Backend) {
    let db = TestDb::new(backend).await;
    let store = &db.store;
    let (conversation, other) = (Uuid::now_v7(), Uuid::now_v7());
    assert_eq!(store.latest_home(conversation).await.unwrap(), None);

    let saved = HomeRow {
        conversation_id: conversation,
        manifest: Some("a".repeat(64)),
        runner: "one".into(),
        taken_after: "turn 1, attempt 1".into(),
        taken_at: Utc::now().trunc_subsecs(3),
    };
    store.record_home(&saved).await.unwrap();
    assert_eq!(
        store.latest_home(conversation).await.unwrap(),
        Some(saved.clone())
    );

    // Too large to save: only runner two's disk has it now.
    let unsaved = HomeRow {
        manifest: None,
        runner: "two".into(),
        taken_after: "turn 2, attempt 1".into(),
        ..saved.clone()
    };
    store.record_home(&unsaved).await.unwrap();
    assert_eq!(
        store.latest_home(conversation).await.unwrap(),
        Some(unsaved)
    );
    assert_eq!(store.latest_home(other).await.unwrap(), None);
    db.cleanup().await;
}
