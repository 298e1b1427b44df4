//! SOP files changed while Gatehouse runs: a reload offers the new version to new runs,
//! runs already started keep theirs, and a broken file is left out and shown with its
//! errors — in the API, to `gatehouse sop list` and on the console's SOP page.

use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scope};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends, person};
use serde_json::json;

on_both_backends!(an_edited_sop_is_a_new_version_for_new_runs_only);

const V1: &str = "name: ship\nnodes:\n  check: { kind: gate, approvers: [group:leads] }\n  after: { kind: script, needs: [check], run: 'echo version one' }\n";
const V2: &str = "name: ship\nnodes:\n  check: { kind: gate, approvers: [group:leads] }\n  after: { kind: script, needs: [check], run: 'echo version two' }\n";

async fn an_edited_sop_is_a_new_version_for_new_runs_only(backend: Backend) {
    let gh = Gatehouse::builder(backend)
        .sops(&[("ship", V1)])
        .people(vec![person("ana", &["leads"])])
        .start()
        .await;
    let admin = gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    let ana = gh.stored_token("ana", &Scope::ALL, None).await;
    let first = gh.request("ship").await;
    gh.node(first, "check", "waiting_approval", 1).await;
    let old = gh.db.store.run(first).await.unwrap().unwrap().sop_version;

    let dir = gh.data.path().join("sops");
    std::fs::write(dir.join("ship.yaml"), V2).unwrap();
    std::fs::write(
        dir.join("broken.yaml"),
        "name: broken\nnodes:\n  a: { kind: scrip }\n",
    )
    .unwrap();

    // Only administrators reload.
    gh.api_as(&ana)
        .post("/sops/reload", json!({}))
        .await
        .refused(403, "administrator");
    let reloaded = gh
        .api_as(&admin)
        .post("/sops/reload", json!({}))
        .await
        .is(200);
    assert_eq!(reloaded["changed"], json!(["ship"]), "{reloaded:#}");
    assert_eq!(reloaded["added"], json!([]), "{reloaded:#}");
    let invalid = &reloaded["invalid"][0];
    assert!(
        invalid["file"].as_str().unwrap().ends_with("broken.yaml"),
        "{reloaded:#}"
    );
    assert!(
        invalid["problems"][0]
            .as_str()
            .unwrap()
            .contains("broken.yaml:3:"),
        "the problem names its line: {reloaded:#}"
    );
    let listed = gh.api_as(&ana).get("/sops/invalid").await.is(200);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed:#}");
    let sops = gh.api_as(&ana).get("/sops").await.is(200);
    let ship = sops
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "ship")
        .unwrap();
    assert_ne!(ship["version"], json!(old), "{sops:#}");
    assert!(
        !sops
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "broken"),
        "a broken file starts nothing"
    );

    // A new run starts on the new version; the one waiting keeps the one it started with.
    let second = gh.request("ship").await;
    gh.node(second, "check", "waiting_approval", 1).await;
    let new = gh.db.store.run(second).await.unwrap().unwrap().sop_version;
    assert_eq!(json!(new), ship["version"]);
    for run in [first, second] {
        gh.api_as(&ana)
            .post(
                &format!("/runs/{run}/gates/check/decision"),
                json!({ "decision": "approve" }),
            )
            .await
            .is(202);
        gh.wait_run(run, "succeeded").await;
    }
    let mut said = Vec::new();
    for run in [first, second] {
        let logs = gh
            .api_as(&ana)
            .get(&format!("/runs/{run}/logs"))
            .await
            .is(200);
        said.push(logs[0]["line"].as_str().unwrap().to_owned());
    }
    assert_eq!(said, ["version one", "version two"]);
    assert_eq!(
        gh.db.store.run(first).await.unwrap().unwrap().sop_version,
        old
    );

    // The console's SOP page shows the file left out, with its error.
    let mut browser = gh.signed_in("ana").await;
    let page = browser.get("/sops").await.expect_status(200);
    assert!(page.contains("Left out: invalid files"), "{}", page.html);
    assert!(page.contains("broken.yaml:3:"), "{}", page.html);
}
