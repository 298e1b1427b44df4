//! Reads follow the project `read` right, over the API, in the console and in chat's
//! `runs`: someone in none of a project's lists does not see its runs, gates,
//! requirements, conversations, schedules or its share of reports, and a run,
//! requirement, conversation or schedule of it answers 404 to them, as one that does not
//! exist; its people, its `read` list and administrators see everything; work of no
//! project stays readable by all. Before: every read was global, so bo read all of
//! `secret`'s work and every 404 below was 200.

use std::collections::BTreeSet;

use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scope};
use gatehouse_tests::gatehouse::console::Browser;
use gatehouse_tests::{Backend, Gatehouse, on_both_backends, person};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{HOLD, QUICK, str_of};

on_both_backends!(
    the_api_shows_a_project_only_to_those_who_may_read_it,
    the_console_shows_a_project_only_to_those_who_may_read_it,
    runs_in_chat_lists_only_what_the_asker_may_read,
);

/// `secret` names ana's group for every right and cy only for reading; bo is in none.
const PROJECTS: &str = r#"
[[projects]]
name = "secret"
run = ["group:devs"]
converse = ["group:devs"]
approve = ["group:devs"]
read = ["group:devs", "cy"]
"#;

/// What `secret` holds, and a run of no project.
struct World {
    gh: Gatehouse,
    /// Finished, with an artifact and output.
    run: Uuid,
    /// Waiting at its gate.
    held: Uuid,
    requirement: Uuid,
    conversation: Uuid,
    /// bo's run of no project.
    open: Uuid,
}

async fn world(backend: Backend) -> World {
    let gh = Gatehouse::builder(backend)
        .sops(&[("hold", HOLD), ("quick", QUICK)])
        .people(vec![
            person("ana", &["devs"]),
            person("bo", &[]),
            person("cy", &[]),
        ])
        .projects(PROJECTS)
        .start()
        .await;
    let ana = gh.stored_token("ana", &Scope::ALL[..3], None).await;
    let bo = gh.stored_token("bo", &Scope::ALL[..3], None).await;
    let start = |token: String, body: Value| {
        let gh = &gh;
        async move {
            let accepted = gh.api_as(&token).post("/runs", body).await.is(202);
            str_of(&accepted["run_id"])
                .parse::<Uuid>()
                .expect("a run id")
        }
    };
    let run = start(ana.clone(), json!({ "sop": "quick", "project": "secret" })).await;
    let held = start(ana.clone(), json!({ "sop": "hold", "project": "secret" })).await;
    let open = start(bo.clone(), json!({ "sop": "quick" })).await;
    gh.wait_run(run, "succeeded").await;
    gh.wait_run(open, "succeeded").await;
    gh.node(held, "review", "waiting_approval", 1).await;
    gh.api_as(&ana)
        .post(
            "/schedules",
            json!({ "name": "secret-yearly", "cron": "0 0 1 1 *", "sop": "quick", "project": "secret" }),
        )
        .await
        .is(201);
    let row = gh.db.store.run(run).await.unwrap().unwrap();
    let requirement = row
        .requirement_id
        .expect("a run on a project has a requirement");
    let conversation = Uuid::now_v7();
    let mut tx = gh.db.store.begin().await.unwrap();
    tx.open_conversation(&gatehouse_store::NewConversation {
        id: conversation,
        requirement_id: requirement,
        project: "secret",
        platform: "slack",
        channel: "C0SECRET",
        thread: "1.0001",
        started_by: "ana",
        workspace: r#"{"project":"secret","repositories":[],"settings":{}}"#,
        state: r#"{"turns":[],"queue":[],"session_id":null,"workspace":{"state":"none"},"last_seq":0,"idle_timer":0,"last_run":null,"revision":0}"#,
    })
    .await
    .unwrap();
    tx.commit().await.unwrap();
    World {
        gh,
        run,
        held,
        requirement,
        conversation,
        open,
    }
}

/// The ids (or names) in a list answer.
fn listed(list: &Value, field: &str) -> BTreeSet<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|item| str_of(&item[field]).to_owned())
        .collect()
}

async fn the_api_shows_a_project_only_to_those_who_may_read_it(backend: Backend) {
    let w = world(backend).await;
    let gh = &w.gh;
    // bo is in no list of `secret`; ana is in all of them, cy only in `read`; the
    // administrator reads everything.
    for (who, reads) in [
        ("bo", false),
        ("ana", true),
        ("cy", true),
        (BOOTSTRAP_ADMIN, true),
    ] {
        let scopes: &[Scope] = if who == BOOTSTRAP_ADMIN {
            &Scope::ALL
        } else {
            &[Scope::Read]
        };
        let token = gh.stored_token(who, scopes, None).await;
        let api = gh.api_as(&token);
        let seen = |list: &Value, field: &str, id: &str| listed(list, field).contains(id);

        let projects = api.get("/projects").await.is(200);
        assert_eq!(
            seen(&projects, "name", "secret"),
            reads,
            "{who}: {projects}"
        );
        let runs = api.get("/runs").await.is(200);
        assert_eq!(
            seen(&runs, "id", &w.run.to_string()),
            reads,
            "{who}: {runs}"
        );
        assert!(
            seen(&runs, "id", &w.open.to_string()),
            "{who}: no project, read by all"
        );
        let gates = api.get("/gates").await.is(200);
        assert_eq!(
            seen(&gates, "run_id", &w.held.to_string()),
            reads,
            "{who}: {gates}"
        );
        let requirements = api.get("/requirements").await.is(200);
        assert_eq!(
            seen(&requirements, "id", &w.requirement.to_string()),
            reads,
            "{who}: {requirements}"
        );
        let conversations = api.get("/conversations").await.is(200);
        assert_eq!(
            seen(&conversations, "id", &w.conversation.to_string()),
            reads,
            "{who}: {conversations}"
        );
        let schedules = api.get("/schedules").await.is(200);
        assert_eq!(
            seen(&schedules, "name", "secret-yearly"),
            reads,
            "{who}: {schedules}"
        );
        let report = api.get("/reports/usage?by=project").await.is(200);
        assert_eq!(
            seen(&report["groups"], "key", "secret"),
            reads,
            "{who}: {report}"
        );

        let run = w.run;
        let details = [
            (format!("/runs/{run}"), "no run"),
            (format!("/runs/{run}/logs"), "no run"),
            (format!("/runs/{run}/graph.svg"), "no run"),
            (format!("/runs/{run}/artifacts/work/1/out.txt"), "no run"),
            (format!("/requirements/{}", w.requirement), "no requirement"),
            (
                format!("/conversations/{}", w.conversation),
                "no conversation",
            ),
            (
                "/schedules/secret-yearly".to_owned(),
                "no schedule named `secret-yearly`",
            ),
        ];
        for (path, missing) in details {
            let reply = api.get(&path).await;
            if reads {
                reply.is(200);
            } else {
                reply.refused(404, missing);
            }
        }
        api.get(&format!("/runs/{}", w.open)).await.is(200);
    }
    w.gh.stop().await;
}

async fn the_console_shows_a_project_only_to_those_who_may_read_it(backend: Backend) {
    let w = world(backend).await;
    let gh = &w.gh;
    let run = w.run;
    for (who, reads) in [("bo", false), ("ana", true), (BOOTSTRAP_ADMIN, true)] {
        // A console session never has `admin`: the administrator reads as one of `admins`.
        let mut browser: Browser = gh.signed_in(who).await;
        let page = browser.get("/runs").await.expect_status(200);
        assert_eq!(
            page.contains(&format!("/runs/{run}")),
            reads,
            "{who}: {}",
            page.html
        );
        assert!(
            page.contains(&format!("/runs/{}", w.open)),
            "{who}: {}",
            page.html
        );
        let inbox = browser.get("/").await.expect_status(200);
        assert_eq!(
            inbox.contains("gate waits for other people") || inbox.contains(&w.held.to_string()),
            reads,
            "{who}: the held gate is counted or shown only to readers: {}",
            inbox.html
        );
        let page = browser.get("/requirements").await.expect_status(200);
        assert_eq!(
            page.contains(&format!("/requirements/{}", w.requirement)),
            reads,
            "{who}: {}",
            page.html
        );
        let page = browser.get("/schedules").await.expect_status(200);
        assert_eq!(
            page.contains("secret-yearly"),
            reads,
            "{who}: {}",
            page.html
        );
        let csv = browser
            .get("/reports.csv?by=project")
            .await
            .expect_status(200);
        assert_eq!(csv.contains(",secret,"), reads, "{who}: {}", csv.html);

        for path in [
            format!("/runs/{run}"),
            format!("/runs/{run}/graph.svg"),
            format!("/runs/{run}/logs"),
            format!("/runs/{run}/events"),
            format!("/runs/{run}/artifacts/work/1/out.txt"),
            format!("/runs/{run}/download/work/1/out.txt"),
            format!("/requirements/{}", w.requirement),
            format!("/conversations/{}", w.conversation),
            "/schedules/secret-yearly".to_owned(),
        ] {
            let page = browser.get(&path).await;
            let expected = if reads { 200 } else { 404 };
            assert_eq!(
                page.status.as_u16(),
                expected,
                "{who}: {path} answered {}: {}",
                page.status,
                page.html
            );
        }
    }
    w.gh.stop().await;
}

/// `secret` for ana alone; cy, on chat too, is in none of its lists.
const ANA_ONLY: &str = r#"
[[projects]]
name = "secret"
run = ["ana"]
converse = ["ana"]
approve = ["ana"]
"#;

/// `runs` in chat lists the active runs of the projects the asker may read. Before: every
/// active run, so cy was shown ana's run of `secret`.
async fn runs_in_chat_lists_only_what_the_asker_may_read(backend: Backend) {
    use gatehouse_tests::fake_slack::BOT_USER;
    use gatehouse_tests::gatehouse::chat::{self, ANA, CY, REQUESTS};

    let gh = chat::builder(backend).projects(ANA_ONLY).start().await;
    let ana = gh.stored_token("ana", &Scope::ALL[..3], None).await;
    let accepted = gh
        .api_as(&ana)
        .post("/runs", json!({ "sop": "review", "project": "secret" }))
        .await
        .is(202);
    let run = str_of(&accepted["run_id"]).to_owned();
    gh.wait_run(run.parse().unwrap(), "waiting").await;
    for (who, user, reads) in [("cy", CY, false), ("ana", ANA, true)] {
        let asked = gh
            .slack_mention(&format!("Ev-runs-{who}"), REQUESTS, user, "runs")
            .await;
        let answer = gh
            .until("the answer to `runs`", || {
                gh.slack
                    .messages(REQUESTS)
                    .into_iter()
                    .find(|m| m.user == BOT_USER && m.thread_ts.as_deref() == Some(&asked))
            })
            .await;
        assert_eq!(answer.text.contains(&run), reads, "{who}: {}", answer.text);
    }
    gh.stop().await;
}
