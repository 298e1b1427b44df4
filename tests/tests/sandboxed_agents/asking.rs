//! kill -9 of the runner while the real Claude Code waits in `request_approval` on an
//! SOP's agent node: the node's next attempt asks the same thing and adopts the question,
//! the answer a person gives reaches it, and nobody is asked twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::ProviderKind;
use gatehouse_ingest::Scope;
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_store::QuestionStatus;
use gatehouse_tests::{Backend, Gatehouse, TestDb, person, relay_binary};
use serde_json::json;

use crate::{REAL_KEY, installed, model_provider, request};

gatehouse_tests::on_both_backends!(a_question_outlives_its_runner_and_is_asked_once);

const ASK: &str = r#"
name: ask
nodes:
  code: { kind: agent, role: coder, prompt: "Drop the legacy_users table." }
"#;

const QUESTION: &str = "May I drop the legacy_users table?";

async fn a_question_outlives_its_runner_and_is_asked_once(backend: Backend) {
    let Some(clis) = installed::clis() else {
        return;
    };
    let fake = FakeProvider::start(REAL_KEY, Vec::new()).await;
    fake.answer_side_requests_with_text();
    // Whichever attempt reads the prompt asks; an answer ends the work.
    fake.answer_when(
        "Drop the legacy_users table.",
        Turn::tool(
            "mcp__gatehouse__request_approval",
            json!({"question": QUESTION}),
        ),
    );
    fake.answer_when("approved by", Turn::text("Dropped it, as approved."));
    let bin = clis.claude.parent().unwrap().to_owned();
    let role = Role {
        provider: Some("model".into()),
        model: Some("claude-sonnet-4-5".into()),
        env: BTreeMap::from([("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))]),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = model_provider(&fake, ProviderKind::Anthropic);
    let configure = move |options: &mut gatehouse_runner::RunnerOptions| {
        options.roles = BTreeMap::from([("coder".to_owned(), role.clone())]);
        options.providers = vec![provider.clone()];
        options.relay = Some(relay_binary());
    };
    let start = |db, data| {
        Gatehouse::builder_on(db, data)
            .sop("ask", ASK)
            .people(vec![person("ana", &["leads"])])
            .sandbox(Arc::new(ProcessSandbox::default()))
            .lease(Duration::from_secs(2))
            .runner(configure.clone())
            .start()
    };
    let first = start(TestDb::new(backend).await, tempfile::tempdir().unwrap()).await;
    let run = request(&first, "ask").await;
    let asked = eventually("the agent's question", || async {
        first.db.store.open_questions(10).await.ok()?.pop()
    })
    .await;
    assert_eq!(asked.question, QUESTION);
    assert_eq!(asked.attempt, 1);
    let (db, data) = first.crash();

    let second = start(db, data).await;
    let token = second
        .stored_token("ana", &[Scope::Read, Scope::Decide], None)
        .await;
    // The next attempt asks again and adopts the question, the one it was.
    eventually("the question adopted by the next attempt", || async {
        let question = second.db.store.question(asked.id).await.ok()??;
        (question.attempt >= 2).then_some(())
    })
    .await;
    second
        .api_as(&token)
        .post(
            &format!("/questions/{}/answer", asked.id),
            json!({"answer": "approve", "comment": "backed up first"}),
        )
        .await
        .is(202);
    let finished = second.wait_run(run, "succeeded").await;

    let questions = second.db.store.run_questions(run).await.unwrap();
    assert_eq!(questions.len(), 1, "asked once: {questions:?} {finished:#}");
    assert_eq!(questions[0].status, QuestionStatus::Approved);
    assert!(
        fake.requests().iter().any(|r| r
            .body
            .to_string()
            .contains("approved by ana: backed up first")),
        "the answer reached the attempt that ran again"
    );
    second.stop().await;
}

/// Waits up to two minutes for `f` to give something.
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..1200 {
        if let Some(value) = f().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}
