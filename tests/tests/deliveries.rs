//! "Why did nothing happen?": every delivery listed with what became of it, through
//! `GET /api/v1/deliveries[/{id}]` and the console's `/deliveries` pages — a label no
//! trigger names, a repository in no project, a payload that lacks a field, one that
//! starts a run — and who may see them: administrators every one with its payload,
//! project readers those of their projects without payloads.

use gatehouse_ingest::{BOOTSTRAP_ADMIN, Person, Scope, Trigger};
use gatehouse_tests::gatehouse::github::{REPO, reported_fixture as fixture};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use serde_json::{Value, json};

const QUICK: &str = "name: quick\nnodes:\n  work: { kind: script, run: \"true\" }\n";

/// `shop` lists acme/api and lets only ana read it; [`REPO`] is configured for GitHub but
/// in no project.
const PROJECTS: &str = r#"
[[projects]]
name = "shop"
repositories = [{ repo = "acme/api" }]
sops = ["quick"]
read = ["ana"]
"#;

on_both_backends!(every_delivery_is_listed_with_what_became_of_it);

async fn hub(backend: Backend) -> Gatehouse {
    let person = |id: &str, login: &str| Person {
        id: id.into(),
        github: Some(login.into()),
        slack: None,
        discord: None,
        groups: Vec::new(),
    };
    let go = Trigger::new(
        "go",
        "quick",
        &["acme/api".into(), "Codertocat/*".into()],
        false,
        false,
    );
    Gatehouse::builder(backend)
        .sops(&[("quick", QUICK)])
        .people(vec![
            person("ana", "Codertocat"),
            person("bob", "bob-gh"),
            person("tri", "triager"),
        ])
        .projects(PROJECTS)
        .github(vec![go.unwrap()])
        .start()
        .await
}

/// The real `issues.labeled` payload for `repo`, labelled `label` by the triager.
fn labeled(repo: &str, label: &str) -> Value {
    let mut payload = fixture("issues.labeled");
    payload["label"]["name"] = json!(label);
    payload["sender"]["login"] = json!("triager");
    payload["repository"]["full_name"] = json!(repo);
    payload
}

async fn every_delivery_is_listed_with_what_became_of_it(backend: Backend) {
    let hub = hub(backend).await;
    let mut malformed = labeled("acme/api", "go");
    malformed["issue"]
        .as_object_mut()
        .unwrap()
        .remove("updated_at");
    // Oldest first; each processed before the next arrives, so the order is theirs.
    let deliveries = [
        ("d-start", labeled("acme/api", "go")),
        ("d-no-trigger", labeled("acme/api", "wontfix")),
        ("d-no-project", labeled(REPO, "go")),
        ("d-malformed", malformed),
        ("d-unknown", labeled("else/where", "go")),
    ];
    for (id, payload) in &deliveries {
        hub.deliver_github("issues", id, payload).await;
        hub.note(id).await;
    }
    let run = hub.until_run(|r| r.sop == "quick").await;

    let admin = hub.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    let admin = hub.api_as(&admin);
    let all = admin.get("/deliveries").await.is(200);
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["delivery_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "d-unknown",
            "d-malformed",
            "d-no-project",
            "d-no-trigger",
            "d-start"
        ],
        "newest first"
    );
    let by_id = |id: &str| {
        all.as_array()
            .unwrap()
            .iter()
            .find(|d| d["delivery_id"] == id)
            .unwrap()
            .clone()
    };
    let started = by_id("d-start");
    assert_eq!(started["status"], "processed");
    assert_eq!(started["event"], "issues.labeled");
    assert_eq!(started["project"], "shop");
    assert_eq!(
        started["runs"],
        json!([run]),
        "the run it started is linked"
    );
    assert_eq!(started["outcome"], format!("started `quick` as run {run}"));
    let no_trigger = by_id("d-no-trigger");
    assert_eq!(no_trigger["status"], "ignored");
    assert_eq!(
        no_trigger["outcome"],
        "label `wontfix` starts nothing: no trigger names it for acme/api"
    );
    let no_project = by_id("d-no-project");
    assert_eq!(no_project["project"], Value::Null);
    let outcome = no_project["outcome"].as_str().unwrap();
    assert!(
        outcome.starts_with("`quick` not started: ") && outcome.contains(REPO),
        "{outcome}"
    );
    assert_eq!(
        by_id("d-malformed")["outcome"],
        "payload not understood, so nothing was done: missing field `updated_at`"
    );
    let unknown = by_id("d-unknown")["outcome"].as_str().unwrap().to_owned();
    assert!(
        unknown.starts_with("repository `else/where` is not configured"),
        "{unknown}"
    );

    // Filters, and the next page.
    let ignored = admin.get("/deliveries?outcome=ignored").await.is(200);
    let ignored: Vec<&str> = ignored
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["delivery_id"].as_str().unwrap())
        .collect();
    assert_eq!(ignored, ["d-unknown", "d-malformed", "d-no-trigger"]);
    assert_eq!(
        admin.get("/deliveries?source=slack").await.is(200),
        json!([])
    );
    assert_eq!(
        admin.get("/deliveries?outcome=pending").await.is(200),
        json!([])
    );
    let first = admin.get("/deliveries?limit=2").await.is(200);
    assert_eq!(first.as_array().unwrap().len(), 2);
    let before = first[1]["received_at"].as_str().unwrap();
    let rest = admin
        .get(&format!(
            "/deliveries?before={}",
            before.replace('+', "%2B")
        ))
        .await
        .is(200);
    assert_eq!(rest[0]["delivery_id"], "d-no-project");
    assert_eq!(rest.as_array().unwrap().len(), 3);
    admin
        .get("/deliveries?source=gitlab")
        .await
        .refused(422, "`gitlab` is none of github, slack, discord");
    admin
        .get("/deliveries?outcome=lost")
        .await
        .refused(422, "`lost` is none of");

    // One, with its payload, by its full id or the sender's alone.
    let shown = admin.get("/deliveries/github:d-start").await.is(200);
    assert_eq!(shown["delivery"]["runs"], json!([run]));
    let payload = shown["payload"].as_str().unwrap();
    assert!(payload.contains("\"full_name\": \"acme/api\""), "{payload}");
    let same = admin.get("/deliveries/d-start").await.is(200);
    assert_eq!(same["delivery"]["id"], "github:d-start");
    admin
        .get("/deliveries/github:d-never")
        .await
        .refused(404, "no delivery github:d-never");

    // ana reads shop: its deliveries, without payloads, and none concerning no project.
    let ana = hub.stored_token("ana", &[Scope::Read], None).await;
    let ana = hub.api_as(&ana);
    let seen = ana.get("/deliveries").await.is(200);
    let seen: Vec<&str> = seen
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["delivery_id"].as_str().unwrap())
        .collect();
    assert_eq!(seen, ["d-malformed", "d-no-trigger", "d-start"]);
    let shown = ana.get("/deliveries/github:d-start").await.is(200);
    assert_eq!(shown["payload"], Value::Null);
    assert!(
        shown["payload_withheld"]
            .as_str()
            .unwrap()
            .contains("administrators")
    );
    ana.get("/deliveries/github:d-unknown")
        .await
        .refused(403, "only administrators");
    // bob may not read shop: nothing, and shop's deliveries are not confirmed to exist.
    let bob = hub.stored_token("bob", &[Scope::Read], None).await;
    let bob = hub.api_as(&bob);
    assert_eq!(bob.get("/deliveries").await.is(200), json!([]));
    bob.get("/deliveries/github:d-start")
        .await
        .refused(404, "no delivery");
    // A token without `read` reads no deliveries.
    let runner = hub.stored_token("ana", &[Scope::Run], None).await;
    hub.api_as(&runner)
        .get("/deliveries")
        .await
        .refused(403, "lacks the `read` scope");

    // The console: ana's list and a delivery's page; bob has no link to the page.
    let mut browser = hub.signed_in("ana").await;
    let page = browser
        .get("/deliveries?outcome=ignored")
        .await
        .expect_status(200);
    assert!(
        page.contains("href=\"/deliveries\""),
        "the navigation links it"
    );
    assert!(
        page.contains("label `wontfix` starts nothing"),
        "{}",
        page.html
    );
    assert!(!page.contains("d-start"), "only ignored ones are listed");
    let page = browser
        .get("/deliveries/github%3Ad-start")
        .await
        .expect_status(200);
    assert!(
        page.contains(&format!("href=\"/runs/{run}\"")),
        "{}",
        page.html
    );
    assert!(page.contains("administrators only"), "{}", page.html);
    browser
        .get("/deliveries/github%3Ad-unknown")
        .await
        .expect_status(403);
    let mut admin_browser = hub.signed_in(BOOTSTRAP_ADMIN).await;
    let page = admin_browser
        .get("/deliveries/github%3Ad-unknown")
        .await
        .expect_status(200);
    assert!(
        page.contains("else/where"),
        "the payload is shown: {}",
        page.html
    );
    let mut bob_browser = hub.signed_in("bob").await;
    let page = bob_browser.get("/runs").await.expect_status(200);
    assert!(
        !page.contains("href=\"/deliveries\""),
        "bob sees no deliveries"
    );
    hub.stop().await;
}
