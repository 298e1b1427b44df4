//! `request_approval`: waiting for a person, adopting a question after a lost attempt,
//! and expiring one nobody answers.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_store::QuestionStatus;
use serde_json::json;

use super::*;

#[tokio::test]
async fn an_approval_waits_for_a_person_and_a_rerun_adopts_the_answer() {
    let bench = Arc::new(Bench::new().await);
    let first = bench.attempt(1, Duration::from_secs(30));
    let token = first.token().to_owned();
    let asking = bench.calling(
        &token,
        "request_approval",
        json!({"question": "May I drop the legacy_users table?", "evidence": "nothing reads it"}),
    );
    let question = bench.open_question().await;
    assert_eq!(question.question, "May I drop the legacy_users table?");
    assert_eq!(question.evidence.as_deref(), Some("nothing reads it"));
    assert_eq!(question.project.as_deref(), Some("api"));
    assert!(!asking.is_finished(), "the call waits for the answer");
    bench
        .answer(
            question.id,
            QuestionStatus::Denied,
            "keep it until the migration ships",
        )
        .await;
    let (failed, said) = asking.await.expect("call");
    assert!(failed);
    assert_eq!(said, "denied by ada: keep it until the migration ships");
    assert!(bench.notes.lock().expect("notes")[0].contains("waiting for a person"));

    // The node runs again (its runner was killed, say) and asks the same thing: the
    // answer is the one given, and nobody is asked twice.
    drop(first);
    let second = bench.attempt(2, Duration::from_secs(30));
    let (failed, said) = bench
        .call(
            second.token(),
            "request_approval",
            json!({"question": "May I drop the legacy_users table?", "evidence": "nothing reads it"}),
        )
        .await;
    assert!(failed);
    assert_eq!(said, "denied by ada: keep it until the migration ships");
    assert_eq!(
        bench
            .store
            .run_questions(bench.run)
            .await
            .expect("questions")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_question_left_open_by_a_lost_attempt_is_adopted_by_the_next() {
    let bench = Arc::new(Bench::new().await);
    let first = bench.attempt(1, Duration::from_secs(30));
    let token = first.token().to_owned();
    let lost = bench.calling(
        &token,
        "request_approval",
        json!({"question": "Deploy to prod?"}),
    );
    let question = bench.open_question().await;
    // The attempt is lost while it waits.
    lost.abort();
    drop(first);
    let second = bench.attempt(2, Duration::from_secs(30));
    let token = second.token().to_owned();
    let asking = bench.calling(
        &token,
        "request_approval",
        json!({"question": "Deploy to prod?"}),
    );
    for _ in 0..100 {
        let now = bench
            .store
            .question(question.id)
            .await
            .expect("read")
            .expect("row");
        if now.attempt == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bench
        .answer(question.id, QuestionStatus::Approved, "")
        .await;
    let (failed, said) = asking.await.expect("call");
    assert!(!failed, "{said}");
    assert_eq!(said, "approved by ada");
    let questions = bench
        .store
        .run_questions(bench.run)
        .await
        .expect("questions");
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].attempt, 2);
}

#[tokio::test]
async fn a_question_nobody_answers_expires_and_says_so() {
    let bench = Bench::new().await;
    let ticket = bench.attempt(1, Duration::from_millis(300));
    let (failed, said) = bench
        .call(
            ticket.token(),
            "request_approval",
            json!({"question": "Anyone there?"}),
        )
        .await;
    assert!(failed);
    assert!(said.contains("nobody answered in time"), "{said}");
    let questions = bench
        .store
        .run_questions(bench.run)
        .await
        .expect("questions");
    assert_eq!(questions[0].status, QuestionStatus::Expired);
    let (failed, said) = bench
        .call(
            ticket.token(),
            "request_approval",
            json!({"question": "  "}),
        )
        .await;
    assert!(failed && said.contains("empty"), "{said}");
}
