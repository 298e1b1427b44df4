//! Agents' questions to people, end to end over HTTP: a question as the runner stores it
//! (`request_approval`), listed and answered through the API and the console's inbox by
//! whoever may decide the project's gates, once; everyone else is refused and nothing
//! changes. On Postgres and on SQLite.

use gatehouse_ingest::Scope;
use gatehouse_store::{ConnectionOwner, NewQuestion, QuestionKind, QuestionStatus};
use gatehouse_tests::gatehouse::chat;
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use serde_json::json;
use uuid::Uuid;

on_both_backends!(
    a_question_is_answered_once_by_someone_who_may,
    the_inbox_shows_a_question_and_answers_it,
    a_question_of_an_ended_run_waits_no_more,
);

/// `api`: leads approve its gates, and so answer its agents.
const PROJECTS: &str = r#"
[[projects]]
name = "api"
approve = ["group:leads"]
"#;

async fn hub(backend: Backend) -> Gatehouse {
    chat::builder(backend).projects(PROJECTS).start().await
}

async fn token(gh: &Gatehouse, person: &str) -> String {
    gh.stored_token(person, &[Scope::Read, Scope::Run, Scope::Decide], None)
        .await
}

/// A question the node `code` of a run of project `api` asks, as the runner stores it.
async fn asked(gh: &Gatehouse, text: &str) -> Uuid {
    asked_in(gh, Uuid::now_v7(), text).await
}

/// The same, asked in run `run`.
async fn asked_in(gh: &Gatehouse, run: Uuid, text: &str) -> Uuid {
    let owner = ConnectionOwner::Node {
        run_id: run,
        node: "code".to_owned(),
    };
    let mut tx = gh.db.store.begin().await.expect("tx");
    let asked = tx
        .ask_question(&NewQuestion {
            owner: &owner,
            attempt: 1,
            project: Some("api"),
            kind: QuestionKind::Approval,
            question: text,
            evidence: Some("<script>alert(1)</script> DROP TABLE legacy_users;"),
            digest: text,
            asked_at: chrono::Utc::now(),
            expires_at: None,
        })
        .await
        .expect("asked");
    tx.commit().await.expect("commit");
    asked.row().id
}

async fn a_question_is_answered_once_by_someone_who_may(backend: Backend) {
    let gh = hub(backend).await;
    let (ana, cy) = (token(&gh, "ana").await, token(&gh, "cy").await);
    let id = asked(&gh, "May I drop the legacy_users table?").await;

    let open = gh.api_as(&ana).get("/questions").await.is(200);
    assert_eq!(open.as_array().expect("list").len(), 1, "{open}");
    assert_eq!(open[0]["question"], "May I drop the legacy_users table?");
    assert_eq!(open[0]["node"], "code");

    let answer = format!("/questions/{id}/answer");
    // cy is no lead: the project's approvers answer its agents.
    gh.api_as(&cy)
        .post(&answer, json!({"answer": "approve"}))
        .await
        .refused(403, "");
    // A read-only token cannot answer at all.
    let reader = gh.stored_token("ana", &[Scope::Read], None).await;
    gh.api_as(&reader)
        .post(&answer, json!({"answer": "approve"}))
        .await
        .refused(403, "decide");
    // Nonsense is refused before anything is looked at.
    gh.api_as(&ana)
        .post(&answer, json!({"answer": "maybe"}))
        .await
        .refused(422, "");
    gh.api_as(&ana)
        .post(
            &format!("/questions/{}/answer", Uuid::now_v7()),
            json!({"answer": "deny"}),
        )
        .await
        .refused(404, "no question");
    let stored = gh.db.store.question(id).await.expect("read").expect("row");
    assert_eq!(stored.status, QuestionStatus::Open);

    gh.api_as(&ana)
        .post(
            &answer,
            json!({"answer": "deny", "comment": "keep it until v4"}),
        )
        .await
        .is(202);
    // The second answer is told who answered first.
    gh.api_as(&ana)
        .post(&answer, json!({"answer": "approve"}))
        .await
        .refused(409, "already denied by ana");
    let shown = gh
        .api_as(&ana)
        .get(&format!("/questions/{id}"))
        .await
        .is(200);
    assert_eq!(shown["status"], "denied");
    assert_eq!(shown["decided_by"], "ana");
    assert_eq!(shown["channel"], "api");
    assert_eq!(shown["comment"], "keep it until v4");
    assert_eq!(
        gh.api_as(&ana).get("/questions").await.is(200),
        json!([]),
        "an answered question waits no more"
    );
    gh.stop().await;
}

async fn the_inbox_shows_a_question_and_answers_it(backend: Backend) {
    let gh = hub(backend).await;
    let id = asked(&gh, "Deploy <b>now</b>?").await;
    let mut cy = gh.signed_in("cy").await;
    let page = cy.get("/").await.expect_status(200);
    assert!(
        page.html.contains("1 more agent waits"),
        "cy may not answer: the question is counted, not shown"
    );
    let mut ana = gh.signed_in("ana").await;
    let page = ana.get("/").await.expect_status(200);
    assert!(page.html.contains("An agent asks"), "{}", page.html);
    // The agent's text is shown as text.
    assert!(page.html.contains("Deploy &lt;b&gt;now&lt;/b&gt;?"));
    assert!(page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.html.contains("<script>alert(1)"));
    let page = ana
        .submit(
            "/",
            &format!("/questions/{id}/answer"),
            &[("answer", "approve"), ("comment", "go"), ("next", "/")],
        )
        .await;
    assert!(
        page.status.is_redirection(),
        "{} {}",
        page.status,
        page.html
    );
    let stored = gh.db.store.question(id).await.expect("read").expect("row");
    assert_eq!(stored.status, QuestionStatus::Approved);
    assert_eq!(stored.decided_by.as_deref(), Some("ana"));
    // The console is the API in another encoding, and says so.
    assert_eq!(stored.channel.as_deref(), Some("api"));
    let page = ana.get("/").await.expect_status(200);
    assert!(!page.html.contains("An agent asks"));
    gh.stop().await;
}

async fn a_question_of_an_ended_run_waits_no_more(backend: Backend) {
    let gh = hub(backend).await;
    let ana = token(&gh, "ana").await;
    let run = gh
        .api_as(&ana)
        .post("/runs", json!({"sop": "pair"}))
        .await
        .is(202)["run_id"]
        .as_str()
        .and_then(|id| id.parse::<Uuid>().ok())
        .expect("a run id");
    gh.wait_run(run, "waiting").await;
    let id = asked_in(&gh, run, "Shall I go on?").await;
    assert_eq!(
        gh.api_as(&ana).get("/questions").await.is(200)[0]["id"],
        id.to_string()
    );
    gh.api_as(&ana)
        .post(&format!("/runs/{run}/cancel"), json!({}))
        .await
        .is(202);
    gh.wait_run(run, "cancelled").await;
    assert_eq!(gh.api_as(&ana).get("/questions").await.is(200), json!([]));
    gh.api_as(&ana)
        .post(
            &format!("/questions/{id}/answer"),
            json!({"answer": "approve"}),
        )
        .await
        .refused(409, "no longer waits");
    gh.stop().await;
}
