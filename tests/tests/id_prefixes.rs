//! Ids people can type: the API takes a whole id or its first 4 or more hex digits
//! wherever it takes an id, answers a prefix that names several runs with the
//! candidates (409), one that names none with 404 and one that is no id with 400, and
//! a prefix only ever matches what the caller may read. Runs started in the same minute
//! share their first 8 hex digits (UUIDv7), which is why a fixed 8-digit short id was
//! ambiguous. Before: every id in a path was `Path<Uuid>`, and a prefix was a 400
//! "UUID parsing failed".

use gatehouse_ingest::Scope;
use gatehouse_tests::{Backend, Gatehouse, on_both_backends, person};
use serde_json::{Value, json};
use uuid::Uuid;

on_both_backends!(
    prefixes_and_ambiguity,
    a_prefix_never_matches_what_the_caller_may_not_read,
);

const HOLD: &str = "name: hold\nnodes:\n  review: { kind: gate, approvers: [bo] }\n";

const PROJECTS: &str = r#"
[[projects]]
name = "secret"
run = ["ana"]
converse = ["ana"]
approve = ["ana"]
read = ["ana"]
"#;

async fn started(backend: Backend) -> Gatehouse {
    Gatehouse::builder(backend)
        .sops(&[("hold", HOLD)])
        .people(vec![person("ana", &[]), person("bo", &[])])
        .projects(PROJECTS)
        .start()
        .await
}

async fn start(gh: &Gatehouse, token: &str, body: Value) -> Uuid {
    let accepted = gh.api_as(token).post("/runs", body).await.is(202);
    accepted["run_id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .expect("a run id")
}

/// The hex digits of `id`, without dashes.
fn digits(id: Uuid) -> String {
    id.simple().to_string()
}

/// The start of `id`'s hyphenated form holding `n` hex digits.
fn hyphenated(id: Uuid, n: usize) -> String {
    let text = id.to_string();
    let mut count = 0;
    let end = text
        .char_indices()
        .find(|(_, c)| {
            count += usize::from(*c != '-');
            count > n
        })
        .map_or(text.len(), |(i, _)| i);
    text[..end].to_owned()
}

/// How many leading hex digits `a` and `b` share.
fn shared(a: Uuid, b: Uuid) -> usize {
    digits(a)
        .bytes()
        .zip(digits(b).bytes())
        .take_while(|(x, y)| x == y)
        .count()
}

fn error(answer: &Value) -> &str {
    answer["error"].as_str().unwrap_or_default()
}

async fn prefixes_and_ambiguity(backend: Backend) {
    let gh = started(backend).await;
    let ana = gh.stored_token("ana", &Scope::ALL[..3], None).await;
    let api = gh.api_as(&ana);
    let first = start(&gh, &ana, json!({ "sop": "hold" })).await;
    let second = start(&gh, &ana, json!({ "sop": "hold" })).await;
    // Started within the same minute, they share the start of their timestamp.
    let common = shared(first, second);
    assert!(common >= 4, "{first} and {second}");

    // One more digit than they share tells each apart, dashes or not, in any case.
    let unique = |id: Uuid| digits(id)[..common + 1].to_owned();
    for id in [first, second] {
        let shown = api.get(&format!("/runs/{}", unique(id))).await.is(200);
        assert_eq!(shown["id"], json!(id.to_string()));
        let upper = unique(id).to_uppercase();
        let shown = api.get(&format!("/runs/{upper}")).await.is(200);
        assert_eq!(shown["id"], json!(id.to_string()));
    }
    // As the hyphenated id starts, dashes kept.
    let dashed = hyphenated(first, common + 1);
    let shown = api.get(&format!("/runs/{dashed}")).await.is(200);
    assert_eq!(shown["id"], json!(first.to_string()));

    // What they share names both: 409 with each, its SOP and its status.
    let both = &digits(first)[..common];
    let answer = api.get(&format!("/runs/{both}")).await.is(409);
    let candidates: Vec<&str> = answer["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    for id in [first, second] {
        assert!(candidates.contains(&id.to_string().as_str()), "{answer}");
        assert!(error(&answer).contains(&id.to_string()), "{answer}");
    }
    assert!(
        answer["candidates"][0]["what"]
            .as_str()
            .is_some_and(|w| w.starts_with("hold · ")),
        "{answer}"
    );
    // Commands take prefixes too, and an ambiguous one changes nothing.
    api.post(&format!("/runs/{both}/cancel"), json!({}))
        .await
        .is(409);
    gh.node(first, "review", "waiting_approval", 1).await;
    let bo = gh.stored_token("bo", &Scope::ALL[..3], None).await;
    gh.api_as(&bo)
        .post(
            &format!("/runs/{}/gates/review/decision", unique(first)),
            json!({ "decision": "approve" }),
        )
        .await
        .is(202);
    gh.wait_run(first, "succeeded").await;
    api.post(&format!("/runs/{}/cancel", unique(second)), json!({}))
        .await
        .is(202);
    gh.wait_run(second, "cancelled").await;

    // No run starts with `ffff` yet (ids start with their creation time).
    let answer = api.get("/runs/ffff").await.is(404);
    assert_eq!(error(&answer), "no run matches `ffff`");
    let answer = api.get("/runs/019").await.is(400);
    assert!(error(&answer).contains("at least 4 hex digits"), "{answer}");
    let answer = api.get("/runs/run-12").await.is(400);
    assert!(error(&answer).contains("hex digits"), "{answer}");
    let answer = api.get("/requirements/ffff").await.is(404);
    assert_eq!(error(&answer), "no requirement matches `ffff`");
    gh.stop().await;
}

async fn a_prefix_never_matches_what_the_caller_may_not_read(backend: Backend) {
    let gh = started(backend).await;
    let ana = gh.stored_token("ana", &Scope::ALL[..3], None).await;
    let bo = gh.stored_token("bo", &Scope::ALL[..3], None).await;
    let hidden = start(&gh, &ana, json!({ "sop": "hold", "project": "secret" })).await;
    let own = start(&gh, &bo, json!({ "sop": "hold" })).await;
    let common = shared(hidden, own);
    assert!(common >= 4, "{hidden} and {own}");
    let both = &digits(own)[..common];

    // ana reads both: the shared prefix is ambiguous for her.
    gh.api_as(&ana).get(&format!("/runs/{both}")).await.is(409);
    // bo reads only his own: the same prefix is his run, and the candidates never
    // name the other.
    let shown = gh.api_as(&bo).get(&format!("/runs/{both}")).await.is(200);
    assert_eq!(shown["id"], json!(own.to_string()));
    // The hidden run's own prefix and its whole id are no run to him.
    let theirs = &digits(hidden)[..common + 1];
    let answer = gh.api_as(&bo).get(&format!("/runs/{theirs}")).await.is(404);
    assert_eq!(error(&answer), format!("no run matches `{theirs}`"));
    let answer = gh
        .api_as(&bo)
        .post(&format!("/runs/{hidden}/cancel"), json!({}))
        .await
        .is(404);
    assert!(!error(&answer).contains("secret"), "{answer}");
    // Requirements too: the hidden run's is the only one, which ana finds by a prefix
    // and bo does not.
    let row = gh.db.store.run(hidden).await.unwrap().unwrap();
    let requirement = row.requirement_id.expect("a run on a project has one");
    let prefix = &digits(requirement)[..8];
    let shown = gh
        .api_as(&ana)
        .get(&format!("/requirements/{prefix}"))
        .await
        .is(200);
    assert_eq!(shown["requirement"]["id"], json!(requirement.to_string()));
    gh.api_as(&bo)
        .get(&format!("/requirements/{prefix}"))
        .await
        .is(404);
    gh.stop().await;
}
