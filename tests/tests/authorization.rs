//! Authorization, end to end over HTTP: who may call which route with which token.
//!
//! Two halves. The route table walks every route of ingest's API router with tokens of
//! each scope set for three people (the bootstrap `admin`, `ana` a lead, `bo` in no
//! group) and holds every answer to `gatehouse_ingest::required_scope`, the one table the
//! token check reads, so the table, the router and this file cannot drift apart: a route
//! added to the router without a row here fails `every_route_of_the_api_router_has_a_row`.
//! The second half replays the attacks below as regressions; each says why it
//! failed on the code before tokens acted for people (commit 8c0948c), when a token acted
//! as whatever name it was created with and carried no scopes. (There, their setup, which
//! mints tokens `{"person": ...}`, is already refused; each comment says why the attack
//! itself would have gone through.)
//!
//! Everything runs on Postgres and on SQLite, each test on a database of its own, with
//! the scheduler and a runner going so runs and schedule fires really happen.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scope, required_scope};
use gatehouse_tests::{Backend, Gatehouse as Harness, on_both_backends, person};
use serde_json::{Value, json};
use uuid::Uuid;

#[path = "authorization/conversation_delivery.rs"]
mod conversation_delivery;
#[path = "authorization/project_actions.rs"]
mod project_actions;
#[path = "authorization/project_reads.rs"]
mod project_reads;

on_both_backends!(
    every_route_answers_each_scope_and_person_as_the_table_says,
    requests_without_a_valid_token_are_401_on_every_route,
    a_non_admin_cannot_mint_tokens_for_others,
    a_token_gives_no_more_than_its_creators_token,
    nobody_revokes_someone_elses_token,
    revoked_and_expired_tokens_are_refused,
    a_removed_persons_tokens_stop_working,
    the_requester_may_not_approve_their_own_gate,
    a_schedules_run_answers_to_whoever_triggered_it,
    starters_are_enforced_when_a_run_starts,
);

// ---------------------------------------------------------------------------------------
// The route table
// ---------------------------------------------------------------------------------------

/// What a route asks beyond the scope `required_scope` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beyond {
    /// Nothing: any token with the scope gets past authorization.
    Nothing,
    /// The handler also wants an administrator (an `admin` token of someone in `admins`).
    Administrator,
    /// Outside the token check altogether (the API's own description).
    Public,
}

/// One route of the API router and a concrete request to it. `{RUN}` is a finished run
/// with an artifact; `{COMBO}` names the person and scope set walking the table, so each
/// walker creates, pauses and deletes a schedule, a token and a person of its own.
struct Route {
    method: Method,
    template: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    beyond: Beyond,
}

/// Every route of `gatehouse_ingest::router`'s `/api/v1`, in the order a walker calls
/// them (a thing is created before it is paused, triggered or deleted).
fn routes() -> Vec<Route> {
    use Beyond::*;
    let route = |method: Method, template, path, body, beyond| Route {
        method,
        template,
        path,
        body,
        beyond,
    };
    vec![
        route(
            Method::POST,
            "/runs",
            "/runs",
            Some(r#"{"sop":"hold"}"#),
            Nothing,
        ),
        route(Method::GET, "/runs", "/runs", None, Nothing),
        route(Method::GET, "/runs/{id}", "/runs/{RUN}", None, Nothing),
        route(
            Method::GET,
            "/runs/{id}/logs",
            "/runs/{RUN}/logs",
            None,
            Nothing,
        ),
        route(
            Method::GET,
            "/runs/{id}/graph.svg",
            "/runs/{RUN}/graph.svg",
            None,
            Nothing,
        ),
        route(
            Method::GET,
            "/runs/{id}/artifacts/{node}/{attempt}/{*name}",
            "/runs/{RUN}/artifacts/work/1/out.txt",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/runs/{id}/cancel",
            "/runs/{RUN}/cancel",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/runs/{id}/pause",
            "/runs/{RUN}/pause",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/runs/{id}/resume",
            "/runs/{RUN}/resume",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/runs/{id}/retry",
            "/runs/{RUN}/retry",
            Some(r#"{"node":"nope"}"#),
            Nothing,
        ),
        route(Method::GET, "/gates", "/gates", None, Nothing),
        route(
            Method::POST,
            "/runs/{id}/gates/{node}/decision",
            "/runs/{RUN}/gates/nope/decision",
            Some(r#"{"decision":"approve"}"#),
            Nothing,
        ),
        route(Method::GET, "/questions", "/questions", None, Nothing),
        route(
            Method::GET,
            "/questions/{id}",
            "/questions/00000000-0000-7000-8000-000000000001",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/questions/{id}/answer",
            "/questions/00000000-0000-7000-8000-000000000001/answer",
            Some(r#"{"answer":"approve"}"#),
            Nothing,
        ),
        route(Method::GET, "/sops", "/sops", None, Nothing),
        route(Method::GET, "/sops/invalid", "/sops/invalid", None, Nothing),
        route(
            Method::POST,
            "/sops/reload",
            "/sops/reload",
            None,
            Administrator,
        ),
        route(
            Method::POST,
            "/schedules",
            "/schedules",
            Some(r#"{"name":"s-{COMBO}","cron":"0 0 1 1 *","sop":"hold"}"#),
            Nothing,
        ),
        route(Method::GET, "/schedules", "/schedules", None, Nothing),
        route(
            Method::GET,
            "/schedules/{name}",
            "/schedules/s-{COMBO}",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/schedules/{name}/pause",
            "/schedules/s-{COMBO}/pause",
            Some(r#"{"note":"walking the route table"}"#),
            Nothing,
        ),
        route(
            Method::POST,
            "/schedules/{name}/resume",
            "/schedules/s-{COMBO}/resume",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/schedules/{name}/trigger",
            "/schedules/s-{COMBO}/trigger",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/schedules/{name}/backfill",
            "/schedules/s-{COMBO}/backfill",
            Some(r#"{"from":"2020-02-01T00:00:00Z","to":"2020-02-02T00:00:00Z"}"#),
            Nothing,
        ),
        route(
            Method::DELETE,
            "/schedules/{name}",
            "/schedules/s-{COMBO}",
            None,
            Nothing,
        ),
        // A sign-in link for oneself.
        route(
            Method::POST,
            "/login-links",
            "/login-links",
            Some("{}"),
            Nothing,
        ),
        route(
            Method::POST,
            "/tokens",
            "/tokens",
            Some(r#"{"name":"t-{COMBO}"}"#),
            Nothing,
        ),
        route(Method::GET, "/tokens", "/tokens", None, Nothing),
        route(Method::GET, "/whoami", "/whoami", None, Nothing),
        route(
            Method::DELETE,
            "/tokens/{name}",
            "/tokens/t-{COMBO}",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/people",
            "/people",
            Some(r#"{"id":"p-{COMBO}","groups":["devs"]}"#),
            Administrator,
        ),
        route(Method::GET, "/people", "/people", None, Nothing),
        route(
            Method::DELETE,
            "/people/{id}",
            "/people/p-{COMBO}",
            None,
            Administrator,
        ),
        route(Method::GET, "/projects", "/projects", None, Nothing),
        route(Method::GET, "/requirements", "/requirements", None, Nothing),
        route(
            Method::GET,
            "/reports/usage",
            "/reports/usage",
            None,
            Nothing,
        ),
        // A run's id names no requirement: past authorization, the handler's 404.
        route(
            Method::GET,
            "/requirements/{id}",
            "/requirements/{RUN}",
            None,
            Nothing,
        ),
        route(
            Method::GET,
            "/conversations",
            "/conversations",
            None,
            Nothing,
        ),
        // A run's id names no conversation: past authorization, the handler's 404.
        route(
            Method::GET,
            "/conversations/{id}",
            "/conversations/{RUN}",
            None,
            Nothing,
        ),
        route(
            Method::POST,
            "/conversations/{id}/stop",
            "/conversations/{RUN}/stop",
            None,
            Nothing,
        ),
        route(Method::GET, "/deliveries", "/deliveries", None, Nothing),
        // No such delivery: past authorization, the handler's 404.
        route(
            Method::GET,
            "/deliveries/{id}",
            "/deliveries/github:d-{COMBO}",
            None,
            Nothing,
        ),
        route(Method::GET, "/openapi.json", "/openapi.json", None, Public),
    ]
}

/// The scope sets each person's tokens are tried with.
fn scope_sets() -> Vec<(&'static str, Vec<Scope>)> {
    vec![
        ("read", vec![Scope::Read]),
        ("run", vec![Scope::Run]),
        ("decide", vec![Scope::Decide]),
        ("rrd", vec![Scope::Read, Scope::Run, Scope::Decide]),
        ("all", Scope::ALL.to_vec()),
    ]
}

/// The people walking the table: the bootstrap administrator, a lead, someone in no group.
const WALKERS: [&str; 3] = [BOOTSTRAP_ADMIN, "ana", "bo"];

/// A route added to the router without a row here fails: the router's source is read at
/// build time, so the list cannot silently fall behind (nor keep a row the router lost).
#[test]
fn every_route_of_the_api_router_has_a_row() {
    let served = routes_in_api_router(include_str!("../../services/ingest/src/lib.rs"));
    assert!(
        served.len() >= 20,
        "the router's source no longer parses as expected: {served:?}"
    );
    let listed: BTreeSet<(String, String)> = routes()
        .iter()
        .map(|r| (r.method.to_string(), r.template.to_owned()))
        .collect();
    assert_eq!(listed.len(), routes().len(), "a route is listed twice");
    let missing: Vec<_> = served.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&served).collect();
    assert!(
        missing.is_empty(),
        "routes without a row in the authorization table: {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "rows for routes the router lacks: {stale:?}"
    );
    for route in routes() {
        assert!(
            fits(route.template, route.path),
            "{} {} is not a path of {}",
            route.method,
            route.path,
            route.template
        );
    }
}

/// Every route × person × scope set: never 401 for a valid token; 403 with the scope
/// message exactly when `required_scope` names a scope the token lacks; past the scope, a
/// 403 only where the handler wants an administrator and the caller is not one.
async fn every_route_answers_each_scope_and_person_as_the_table_says(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let run = gh.finished_run().await;
    let mut walks = Vec::new();
    for person in WALKERS {
        for (label, scopes) in scope_sets() {
            let token = gh.token(person, &scopes).await;
            let combo = format!("{person}-{label}");
            walks.push(walk(&gh.running, combo, person, scopes, token, run));
        }
    }
    let failures: Vec<String> = futures::future::join_all(walks)
        .await
        .into_iter()
        .flatten()
        .collect();
    assert!(
        failures.is_empty(),
        "{} answers disagree with the table:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The public route really is public.
    gh.anonymous().get("/openapi.json").await.is(200);
    gh.stop().await;
}

/// No token, a malformed header, an unknown, revoked or expired token, or one acting for
/// someone Gatehouse does not know: 401 on every route behind the token check.
async fn requests_without_a_valid_token_are_401_on_every_route(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let run = gh.finished_run().await;
    let revoked = gh.token("ana", &Scope::ALL).await;
    let revoked_name = gh.token_name(&revoked).await;
    assert!(gh.db.store.revoke_token(&revoked_name).await.unwrap());
    let expired = gh
        .token_expiring("ana", chrono::Utc::now() - chrono::Duration::seconds(1))
        .await;
    let ghost = gh.token("ghost", &Scope::ALL).await;
    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("no token", None, "missing bearer token"),
        (
            "another scheme",
            Some(format!("Basic {}", gh.admin)),
            "missing bearer token",
        ),
        (
            "an empty bearer",
            Some("Bearer ".into()),
            "missing bearer token",
        ),
        (
            "an unknown token",
            Some(format!("Bearer {}", gatehouse_ingest::new_token())),
            "unknown token",
        ),
        (
            "a revoked token",
            Some(format!("Bearer {revoked}")),
            "was revoked",
        ),
        (
            "an expired token",
            Some(format!("Bearer {expired}")),
            "has expired",
        ),
        (
            "a token for someone unknown",
            Some(format!("Bearer {ghost}")),
            "no longer one of the people known",
        ),
    ];
    let mut failures = Vec::new();
    for (what, authorization, words) in &cases {
        let client = gh.api_with(authorization.clone());
        for route in routes().iter().filter(|r| r.beyond != Beyond::Public) {
            let (path, body) = concrete(route, "anyone", run);
            let reply = client.send(route.method.clone(), &path, body).await;
            if reply.status != StatusCode::UNAUTHORIZED || !reply.error().contains(words) {
                failures.push(format!(
                    "{what}: {} answered {} {} (expected 401 saying `{words}`)",
                    reply.request, reply.status, reply.text
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Nothing was done on any of those requests' behalf.
    assert_eq!(
        gh.db.store.tokens(Some("anyone")).await.unwrap().len(),
        0,
        "no token was minted"
    );
    assert!(gh.db.store.schedule("s-anyone").await.unwrap().is_none());
    gh.stop().await;
}

// ---------------------------------------------------------------------------------------
// The attacks below
// ---------------------------------------------------------------------------------------

/// Only an administrator mints tokens for others. Before: `POST /tokens` took only a
/// `name`, and the token acted as whoever it named, so any token holder could mint
/// `{"name": "ana"}` and be ana; `{"person": ...}` was refused as malformed (422, naming
/// no one), so every 403 below and the 422 naming `mallory` failed there.
async fn a_non_admin_cannot_mint_tokens_for_others(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let (ana, bo) = (gh.mint("ana").await, gh.mint("bo").await);

    gh.api_as(&bo)
        .post("/tokens", json!({ "person": "ana" }))
        .await
        .refused(
            403,
            "only an administrator may create tokens for other people",
        );
    // A lead is no administrator either.
    gh.api_as(&ana)
        .post("/tokens", json!({ "person": "bo" }))
        .await
        .refused(403, "only an administrator");
    // A non-administrator is not told who exists: someone unknown is refused the same way.
    gh.api_as(&bo)
        .post("/tokens", json!({ "person": "mallory" }))
        .await
        .refused(403, "only an administrator");
    // An administrator is told the person is unknown, by name.
    gh.api_as(&gh.admin)
        .post("/tokens", json!({ "person": "mallory" }))
        .await
        .refused(422, "`mallory` is not one of the people known to Gatehouse");

    // A token's name is a label, not an identity, and a non-administrator names tokens
    // after themselves: no token of bo's may look like the admin's (or squat the names
    // another person's tokens would get). `bo-admin` acts for bo, sees only bo's tokens
    // and administers nothing.
    gh.api_as(&bo)
        .post("/tokens", json!({ "name": "admin" }))
        .await
        .refused(422, "is named `bo` or `bo-<something>`; `admin` is not");
    let named = gh
        .api_as(&bo)
        .post("/tokens", json!({ "name": "bo-admin" }))
        .await
        .is(201);
    assert_eq!(named["person"], "bo", "{named}");
    let as_admin = gh.api_as(str_of(&named["token"]));
    let theirs = as_admin.get("/tokens").await.is(200);
    assert!(
        people_of(&theirs).iter().all(|p| p == "bo"),
        "bo's token sees only bo's tokens: {theirs}"
    );
    as_admin
        .post("/people", json!({ "id": "eve", "groups": ["admins"] }))
        .await
        .refused(403, "lacks the `admin` scope");

    // ana holds exactly the token the administrator minted for her.
    let anas = gh.api_as(&gh.admin).get("/tokens?person=ana").await.is(200);
    let created_by: Vec<&str> = anas
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| str_of(&t["created_by"]))
        .collect();
    assert_eq!(created_by, ["admin"], "{anas}");
    gh.stop().await;
}

/// A token gives only scopes its creator's token has. Before: tokens had no scopes, and
/// `POST /tokens` without a `name` was malformed (422), so each 403 failed there, and a
/// token minted from a read-only one could start runs.
async fn a_token_gives_no_more_than_its_creators_token(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let read_only = gh
        .api_as(&gh.admin)
        .post("/tokens", json!({ "person": "ana", "scopes": ["read"] }))
        .await
        .is(201);
    let read_only = str_of(&read_only["token"]);

    for asked in [json!(["run"]), json!(["read", "run"]), json!(["decide"])] {
        gh.api_as(read_only)
            .post("/tokens", json!({ "scopes": asked }))
            .await
            .refused(403, "a token can only give scopes its creator's token has");
    }
    // Named no scopes, a new token gets the default ones its creator's token has: `read`.
    let minted = gh
        .api_as(read_only)
        .post("/tokens", json!({}))
        .await
        .is(201);
    assert_eq!(minted["scopes"], json!(["read"]), "{minted}");
    gh.api_as(str_of(&minted["token"]))
        .post("/runs", json!({ "sop": "hold" }))
        .await
        .refused(403, "lacks the `run` scope");

    // Nobody mints `admin` from a token without it, and only people in `admins` hold it.
    let ana = gh.mint("ana").await;
    gh.api_as(&ana)
        .post("/tokens", json!({ "scopes": ["admin"] }))
        .await
        .refused(403, "only give scopes");
    gh.api_as(&gh.admin)
        .post("/tokens", json!({ "person": "ana", "scopes": ["admin"] }))
        .await
        .refused(422, "only for people in group `admins`");
    gh.api_as(&ana)
        .post("/tokens", json!({ "scopes": [] }))
        .await
        .refused(422, "at least one scope");
    gh.stop().await;
}

/// A person revokes only their own tokens; someone else's is "not found" (nothing is
/// revoked, and the answer is the one for a name nobody has). Before: there was no
/// `DELETE /tokens/{name}` (404 for everyone), so ana revoking her own token failed.
async fn nobody_revokes_someone_elses_token(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let (ana, bo) = (gh.mint("ana").await, gh.mint("bo").await);
    let laptop = gh
        .api_as(&ana)
        .post("/tokens", json!({ "name": "ana-laptop" }))
        .await
        .is(201);
    let laptop = str_of(&laptop["token"]).to_owned();

    let theirs = gh
        .api_as(&bo)
        .delete("/tokens/ana-laptop")
        .await
        .refused(404, "no token named `ana-laptop`");
    let nobodys = gh
        .api_as(&bo)
        .delete("/tokens/no-such-token")
        .await
        .refused(404, "no token named");
    assert_eq!(
        theirs.replace("ana-laptop", "X"),
        nobodys.replace("no-such-token", "X"),
        "someone else's token looks like no token at all"
    );
    gh.api_as(&laptop).get("/runs").await.is(200);
    let listed = gh.api_as(&ana).get("/tokens").await.is(200);
    assert!(
        names_of(&listed).contains(&"ana-laptop".to_owned()),
        "{listed}"
    );

    // ana revokes her own; it stops working at once and is gone for good.
    assert_eq!(
        gh.api_as(&ana).delete("/tokens/ana-laptop").await.status,
        StatusCode::NO_CONTENT
    );
    gh.api_as(&laptop)
        .get("/runs")
        .await
        .refused(401, "was revoked");
    gh.api_as(&ana)
        .delete("/tokens/ana-laptop")
        .await
        .refused(404, "no token named");

    // An administrator revokes anyone's.
    let bos = gh.token_name(&bo).await;
    assert_eq!(
        gh.api_as(&gh.admin)
            .delete(&format!("/tokens/{bos}"))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    gh.api_as(&bo)
        .get("/runs")
        .await
        .refused(401, "was revoked");
    gh.stop().await;
}

/// Revoked and expired tokens are refused on every use, minting included. Before: tokens
/// never expired and could not be revoked, so both kept working.
async fn revoked_and_expired_tokens_are_refused(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let ana = gh.mint("ana").await;
    let brief = gh
        .api_as(&ana)
        .post(
            "/tokens",
            json!({ "name": "ana-brief", "expires_in": "2s" }),
        )
        .await
        .is(201);
    let expires_at: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(brief["expires_at"].clone()).expect("an expiry");
    let brief = str_of(&brief["token"]).to_owned();
    gh.api_as(&brief).get("/runs").await.is(200);
    let left = (expires_at - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(left + Duration::from_millis(100)).await;
    gh.api_as(&brief)
        .get("/runs")
        .await
        .refused(401, "token `ana-brief` has expired");
    gh.api_as(&brief)
        .post("/tokens", json!({ "name": "ana-renewed" }))
        .await
        .refused(401, "has expired");

    let gone = gh
        .api_as(&ana)
        .post("/tokens", json!({ "name": "ana-gone" }))
        .await
        .is(201);
    let gone = str_of(&gone["token"]).to_owned();
    assert_eq!(
        gh.api_as(&ana).delete("/tokens/ana-gone").await.status,
        StatusCode::NO_CONTENT
    );
    for reply in [
        gh.api_as(&gone).get("/runs").await,
        gh.api_as(&gone).post("/tokens", json!({})).await,
        gh.api_as(&gone).delete("/tokens/ana-gone").await,
    ] {
        reply.refused(401, "token `ana-gone` was revoked");
    }
    for nonsense in ["0s", "soon", "-1d"] {
        gh.api_as(&ana)
            .post("/tokens", json!({ "expires_in": nonsense }))
            .await
            .refused(422, "is not a duration");
    }
    gh.stop().await;
}

/// Removing a person revokes their tokens, re-adding them brings none back, and a token
/// whose person is gone is refused even if nobody revoked it. Before: there were no
/// people to remove (`/people` did not exist), so all of this failed.
async fn a_removed_persons_tokens_stop_working(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let as_admin = gh.api_as(&gh.admin);
    as_admin
        .post("/people", json!({ "id": "cy", "groups": ["leads"] }))
        .await
        .is(201);
    let cy = gh.mint("cy").await;
    gh.api_as(&cy).get("/people").await.is(200);

    // Only an administrator removes people, and configured people stay.
    gh.api_as(&cy)
        .delete("/people/cy")
        .await
        .refused(403, "lacks the `admin` scope");
    let cy_everything = gh.token("cy", &Scope::ALL).await;
    gh.api_as(&cy_everything)
        .delete("/people/cy")
        .await
        .refused(403, "only an administrator may remove people");
    as_admin
        .delete("/people/ana")
        .await
        .refused(409, "configured");

    assert_eq!(
        as_admin.delete("/people/cy").await.status,
        StatusCode::NO_CONTENT
    );
    gh.api_as(&cy)
        .get("/people")
        .await
        .refused(401, "was revoked");
    let left = as_admin.get("/tokens?person=cy").await.is(200);
    assert_eq!(left, json!([]), "cy's tokens went with them");
    as_admin
        .post("/people", json!({ "id": "cy" }))
        .await
        .is(201);
    gh.api_as(&cy)
        .get("/people")
        .await
        .refused(401, "was revoked");

    // A person gone from the store with their tokens still standing (as another replica
    // or an operator may leave things): the token check itself refuses them.
    let again = gh.mint("cy").await;
    assert!(gh.db.store.remove_person("cy").await.unwrap());
    gh.api_as(&again).get("/people").await.refused(
        401,
        "acts for `cy`, who is no longer one of the people known",
    );
    gh.stop().await;
}

/// The requester may not approve their own gate, whichever token they use. Before: a
/// token acted as the name it was created with, so ana minted one named `bo` (an
/// approver), and approving with it was bo approving: 202 where this wants 403.
async fn the_requester_may_not_approve_their_own_gate(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let ana = gh.mint("ana").await;
    // ana may not take the name bo's first token would get, and a second token of her
    // own is still hers.
    gh.api_as(&ana)
        .post("/tokens", json!({ "name": "bo" }))
        .await
        .refused(422, "`bo` is not");
    let as_bo = gh
        .api_as(&ana)
        .post("/tokens", json!({ "name": "ana-second" }))
        .await
        .is(201);
    assert_eq!(as_bo["person"], "ana");
    let bo = gh.mint("bo").await;
    let run = gh.start_run(&ana, "hold").await;
    gh.wait_status(run, "waiting").await;
    let run_path = format!("/runs/{run}");
    assert_eq!(
        gh.api_as(&ana).get(&run_path).await.is(200)["requested_by"],
        "ana"
    );

    let decide = format!("/runs/{run}/gates/review/decision");
    let approve = json!({ "decision": "approve" });
    gh.api_as(&ana)
        .post(&decide, approve.clone())
        .await
        .refused(403, "requester");
    gh.api_as(str_of(&as_bo["token"]))
        .post(&decide, approve.clone())
        .await
        .refused(403, "requester");

    gh.api_as(&bo).post(&decide, approve).await.is(202);
    gh.wait_status(run, "succeeded").await;
    let detail = gh.api_as(&ana).get(&run_path).await.is(200);
    let applied: Vec<&str> = detail["decisions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["outcome"] == "applied")
        .map(|d| str_of(&d["person"]))
        .collect();
    assert_eq!(applied, ["bo"], "{detail}");
    gh.stop().await;
}

/// A schedule's manual fire answers to whoever triggered it: ana's trigger makes ana the
/// run's requester, so she may not approve it while bo may; bo's trigger binds bo the
/// same way. Before: a schedule's runs were requested by the schedule itself (no
/// person), so ana approved the run she had triggered: 202 where this wants 403.
async fn a_schedules_run_answers_to_whoever_triggered_it(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let (ana, bo) = (gh.mint("ana").await, gh.mint("bo").await);
    let created = gh
        .api_as(&ana)
        .post(
            "/schedules",
            json!({ "name": "ana-yearly", "cron": "0 0 1 1 *", "sop": "hold" }),
        )
        .await
        .is(201);
    assert_eq!(created["owner"], "ana");

    let run = gh.trigger(&ana, "ana-yearly", "ana").await;
    let decide = format!("/runs/{run}/gates/review/decision");
    let approve = json!({ "decision": "approve" });
    gh.api_as(&ana)
        .post(&decide, approve.clone())
        .await
        .refused(403, "requester");
    gh.api_as(&bo).post(&decide, approve.clone()).await.is(202);
    gh.wait_status(run, "succeeded").await;

    let run = gh.trigger(&bo, "ana-yearly", "bo").await;
    let decide = format!("/runs/{run}/gates/review/decision");
    gh.api_as(&bo)
        .post(&decide, approve.clone())
        .await
        .refused(403, "requester");
    // Nor does the schedule's owner approve by proxy when someone else triggers it.
    gh.api_as(&ana)
        .post(&decide, approve.clone())
        .await
        .refused(403, "owner of the schedule");
    gh.stop().await;
}

/// An SOP's `starters` decide who starts it, through the API and through a schedule
/// (whose runs answer to its creator). Before: `starters` were parsed but the API never
/// checked them, so bo's start was 202 where this wants 403.
async fn starters_are_enforced_when_a_run_starts(backend: Backend) {
    let gh = Gatehouse::start(backend).await;
    let (ana, bo) = (gh.mint("ana").await, gh.mint("bo").await);
    let refused = gh
        .api_as(&bo)
        .post("/runs", json!({ "sop": "leads-only" }))
        .await
        .refused(403, "bo may not start `leads-only`");
    assert!(
        refused.contains("group:leads"),
        "names the starters: {refused}"
    );
    gh.api_as(&bo)
        .post(
            "/schedules",
            json!({ "name": "bo-yearly", "cron": "0 0 1 1 *", "sop": "leads-only" }),
        )
        .await
        .refused(403, "bo may not start `leads-only`");
    assert!(gh.db.store.schedule("bo-yearly").await.unwrap().is_none());

    let run = gh.start_run(&ana, "leads-only").await;
    assert_eq!(
        gh.wait_status(run, "waiting").await.requested_by.as_deref(),
        Some("ana")
    );
    // Nor through someone else's schedule: firing it by hand is starting its SOP.
    gh.api_as(&ana)
        .post(
            "/schedules",
            json!({ "name": "ana-leads", "cron": "0 0 1 1 *", "sop": "leads-only" }),
        )
        .await
        .is(201);
    gh.api_as(&bo)
        .post("/schedules/ana-leads/trigger", json!({}))
        .await
        .refused(403, "bo may not start `leads-only`");
    gh.api_as(&bo)
        .post(
            "/schedules/ana-leads/backfill",
            json!({ "from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z" }),
        )
        .await
        .refused(403, "bo may not start `leads-only`");
    assert!(
        gh.db.store.fires("ana-leads", 10).await.unwrap().is_empty(),
        "nothing was fired"
    );
    gh.stop().await;
}

// ---------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------

/// A gate anyone with `run` may start; leads and bo approve.
const HOLD: &str = "name: hold\nnodes:\n  review: { kind: gate, approvers: [group:leads, bo] }\n";
/// Only leads start it; bo approves.
const LEADS_ONLY: &str = "name: leads-only\nstarters: [group:leads]\nnodes:\n  review: { kind: gate, approvers: [bo] }\n";
/// One script writing one artifact, for the routes that read a finished run.
const QUICK: &str = "name: quick\nnodes:\n  work:\n    kind: script\n    run: echo done > \"$GATEHOUSE_ARTIFACTS/out.txt\"\n    artifacts: [out.txt]\n";

/// Ingest's router on loopback over a fresh database, with the scheduler, the relay and a
/// runner going, `[[people]]` ana (a lead) and bo (no group), and the bootstrap
/// administrator's token as `gatehouse up` writes it (every scope).
struct Gatehouse {
    admin: String,
    running: Harness,
}

/// The harness's verbs and fields (`db`, `url`) on the suite's own.
impl std::ops::Deref for Gatehouse {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.running
    }
}

impl Gatehouse {
    async fn start(backend: Backend) -> Self {
        let running = Harness::builder(backend)
            .sops(&[("hold", HOLD), ("leads-only", LEADS_ONLY), ("quick", QUICK)])
            .people(vec![person("ana", &["leads"]), person("bo", &[])])
            .lease(Duration::from_secs(5))
            .start()
            .await;
        let mut gh = Self {
            admin: String::new(),
            running,
        };
        gh.admin = gh.token(BOOTSTRAP_ADMIN, &Scope::ALL).await;
        gh
    }

    /// A token for `person` with `scopes`, written to the store as the command line does
    /// (the API would refuse `admin` to someone outside `admins`; the token check must
    /// refuse them anyway).
    async fn token(&self, person: &str, scopes: &[Scope]) -> String {
        self.running.stored_token(person, scopes, None).await
    }

    /// An every-scope token for `person` that expires at `at`.
    async fn token_expiring(&self, person: &str, at: chrono::DateTime<chrono::Utc>) -> String {
        self.running
            .stored_token(person, &Scope::ALL, Some(at))
            .await
    }

    /// A token the administrator mints for `person` through the API (default scopes:
    /// read, run, decide).
    async fn mint(&self, person: &str) -> String {
        let created = self
            .api_as(&self.admin)
            .post("/tokens", json!({ "person": person }))
            .await
            .is(201);
        str_of(&created["token"]).to_owned()
    }

    /// The stored name of a token.
    async fn token_name(&self, secret: &str) -> String {
        let hash = gatehouse_ingest::hash_token(secret);
        self.db
            .store
            .token_by_hash(&hash)
            .await
            .expect("the store")
            .expect("a stored token")
            .name
    }

    /// Starts a run of `sop` with `token`; its id.
    async fn start_run(&self, token: &str, sop: &str) -> Uuid {
        let accepted = self
            .api_as(token)
            .post("/runs", json!({ "sop": sop }))
            .await
            .is(202);
        str_of(&accepted["run_id"]).parse().expect("a run id")
    }

    /// A succeeded run of `quick`, with its artifact recorded.
    async fn finished_run(&self) -> Uuid {
        let run = self.start_run(&self.admin, "quick").await;
        self.wait_status(run, "succeeded").await;
        run
    }

    /// Triggers `schedule` with `token`; the run the fire started, once it waits at its
    /// gate, after checking that it answers to `person`.
    async fn trigger(&self, token: &str, schedule: &str, person: &str) -> Uuid {
        let fire = self
            .api_as(token)
            .post(&format!("/schedules/{schedule}/trigger"), json!({}))
            .await
            .is(202);
        assert_eq!(
            (fire["outcome"].as_str(), fire["requested_by"].as_str()),
            (Some("started"), Some(person)),
            "{fire}"
        );
        let run: Uuid = str_of(&fire["run_id"]).parse().expect("a run id");
        let row = self.wait_status(run, "waiting").await;
        assert_eq!(row.requested_by.as_deref(), Some(person), "{row:#?}");
        run
    }

    /// Waits (up to 10 s) until the run has `status`.
    async fn wait_status(&self, run: Uuid, status: &str) -> gatehouse_store::RunRow {
        for _ in 0..500 {
            if let Some(row) = self.db.store.run(run).await.expect("the store")
                && row.status == status
            {
                return row;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "run {run} is not {status}: {:#?}",
            self.db.store.run(run).await
        );
    }

    async fn stop(self) {
        self.running.stop().await;
    }
}

/// Walks the route table as `person` with a token of `scopes`; what disagreed.
async fn walk(
    gh: &Harness,
    combo: String,
    person: &str,
    scopes: Vec<Scope>,
    token: String,
    run: Uuid,
) -> Vec<String> {
    let client = gh.api_as(&token);
    let administrator = person == BOOTSTRAP_ADMIN && scopes.contains(&Scope::Admin);
    let mut failures = Vec::new();
    for route in routes().iter().filter(|r| r.beyond != Beyond::Public) {
        let (path, body) = concrete(route, &combo, run);
        let reply = client.send(route.method.clone(), &path, body).await;
        let needed = required_scope(&route.method, route.template);
        let refusal = if !scopes.contains(&needed) {
            Some(format!("lacks the `{needed}` scope"))
        } else if route.beyond == Beyond::Administrator && !administrator {
            Some("only an administrator".to_owned())
        } else {
            None
        };
        let wrong = match &refusal {
            Some(words) => reply.status != StatusCode::FORBIDDEN || !reply.error().contains(words),
            // Past authorization: any answer but 401/403, from a handler (not the router's
            // bare 404/405), and no server error hiding what the handler would say.
            None => {
                matches!(reply.status.as_u16(), 401 | 403 | 405)
                    || reply.status.is_server_error()
                    || (reply.status == StatusCode::NOT_FOUND && reply.error().is_empty())
            }
        };
        if wrong {
            failures.push(format!(
                "{person} with {scopes:?}: {} answered {} {} (expected {})",
                reply.request,
                reply.status,
                reply.text,
                refusal.map_or("no 401 or 403".to_owned(), |w| format!("403 saying `{w}`"))
            ));
        }
    }
    failures
}

/// A row's path and body for one walker.
fn concrete(route: &Route, combo: &str, run: Uuid) -> (String, Option<Value>) {
    let fill = |text: &str| {
        text.replace("{RUN}", &run.to_string())
            .replace("{COMBO}", combo)
    };
    let body = route
        .body
        .map(|b| serde_json::from_str(&fill(b)).expect("a row's body is JSON"));
    (fill(route.path), body)
}

/// The (method, path template) pairs of the `api` router in ingest's `lib.rs`: every
/// `.route("…", get(…).post(…))` between `let api = Router::new()` and its `;`.
fn routes_in_api_router(source: &str) -> BTreeSet<(String, String)> {
    let start = source
        .find("let api = Router::new()")
        .expect("ingest's router builds `let api = Router::new()`");
    let end = start + source[start..].find(';').expect("the statement ends");
    let mut section = &source[start..end];
    let mut found = BTreeSet::new();
    while let Some(at) = section.find(".route(") {
        let args = &section[at + ".route(".len()..];
        let mut depth = 1;
        let close = args
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map(|(i, _)| i)
            .expect("the call closes");
        let mut parts = args[..close].splitn(3, '"');
        let (_, path, handlers) = (parts.next(), parts.next(), parts.next());
        let (path, handlers) = (path.expect("a path literal"), handlers.expect("handlers"));
        for method in ["get", "post", "put", "patch", "delete"] {
            let called = handlers.match_indices(&format!("{method}(")).any(|(i, _)| {
                handlers[..i]
                    .chars()
                    .last()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
            });
            if called {
                found.insert((method.to_uppercase(), path.to_owned()));
            }
        }
        section = &args[close..];
    }
    found
}

/// Whether `path` is a path of `template` (placeholders with anything in them, `{*rest}`
/// with the rest).
fn fits(template: &str, path: &str) -> bool {
    let (mut t, mut p) = (template.split('/'), path.split('/'));
    loop {
        match (t.next(), p.next()) {
            (None, None) => return true,
            (Some(s), Some(_)) if s.starts_with("{*") => return true,
            (Some(s), Some(q)) if s.starts_with('{') || s == q => {}
            _ => return false,
        }
    }
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn people_of(tokens: &Value) -> Vec<String> {
    field_of(tokens, "person")
}

fn names_of(tokens: &Value) -> Vec<String> {
    field_of(tokens, "name")
}

fn field_of(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|item| str_of(&item[field]).to_owned())
        .collect()
}
