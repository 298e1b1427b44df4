//! Projects end to end: runs bound to a project's repositories from the API, chat and a
//! schedule, checked out in one workspace and delivered as one pull request per changed
//! repository, each linking the others; the requirement delivered once all are merged;
//! approvals bound to the workspace they saw; and every refusal of a bad request.

use gatehouse_fake_forge::git::git;
use gatehouse_fake_forge::github::Pull;
use gatehouse_ingest::{Person, Scope, Trigger};
use gatehouse_tests::gatehouse::GatehouseBuilder;
use gatehouse_tests::gatehouse::chat::{self, CY};
use gatehouse_tests::gatehouse::github::{REPO, fixture};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use serde_json::{Value, json};
use uuid::Uuid;

const PROJECTS: &str = r#"
[[projects]]
name = "shop"
repositories = [{ repo = "acme/api" },
                { repo = "acme/web" },
                { repo = "acme/shared", mode = "read-only" }]
channels = ["slack:C0SHOP"]
sops = ["change", "tamper", "ask", "resilient"]
test_command = "make test"
approve = ["group:leads"]

[[projects]]
name = "tools"
repositories = [{ repo = "acme/tools" }]
run = ["ana"]
"#;

/// Changes both writable repositories and the read-only one.
const CHANGE: &str = "name: change\nnodes:\n  work: { kind: script, run: 'echo \"$GATEHOUSE_PROJECT_TEST_COMMAND\" > api/TESTED.md; echo web > web/WEB.md; echo nope > shared/SHARED.md' }\n  review: { kind: gate, needs: [work], approvers: [group:leads] }\n  deliver: { kind: deliver, needs: [review] }\n";
/// Changes the workspace after its gate approved it.
const TAMPER: &str = "name: tamper\nnodes:\n  work: { kind: script, run: 'echo ok > api/OK.md' }\n  review: { kind: gate, needs: [work], approvers: [group:leads] }\n  sneak: { kind: script, needs: [review], run: 'echo sneaky > api/SNEAKY.md' }\n  deliver: { kind: deliver, needs: [sneak] }\n";
/// `change`, whose delivery is tried again when its attempt is lost.
const RESILIENT: &str = "name: resilient\nnodes:\n  work: { kind: script, run: 'echo api > api/API.md; echo web > web/WEB.md' }\n  review: { kind: gate, needs: [work], approvers: [group:leads] }\n  deliver: { kind: deliver, needs: [review], retry: { max: 2 } }\n";
const ELSEWHERE: &str = "name: elsewhere\nnodes:\n  work: { kind: script, run: 'true' }\n";
/// A gate dee may decide, so the project's `approve` list is what refuses dee.
const ASK: &str = "name: ask\nnodes:\n  review: { kind: gate, approvers: [dee, group:leads] }\n";

async fn hub(backend: Backend) -> Gatehouse {
    configured(chat::builder(backend)).start().await
}

/// The projects, their SOPs and people, the chats and GitHub on `builder`.
fn configured(builder: GatehouseBuilder) -> GatehouseBuilder {
    let mut people = chat::people();
    people.push(Person {
        id: "dee".into(),
        github: Some("dee-gh".into()),
        slack: None,
        discord: None,
        groups: Vec::new(),
    });
    builder
        .sops(&[
            ("change", CHANGE),
            ("tamper", TAMPER),
            ("elsewhere", ELSEWHERE),
            ("ask", ASK),
            ("resilient", RESILIENT),
        ])
        .people(people)
        .projects(PROJECTS)
        .github(vec![
            Trigger::new("elsewhere", "elsewhere", &[REPO.into()], false, false).unwrap(),
            Trigger::new("tools", "elsewhere", &["acme/tools".into()], false, false).unwrap(),
        ])
}

on_both_backends!(
    a_run_from_the_api_delivers_a_linked_pull_request_per_changed_repository,
    runs_from_chat_and_a_schedule_work_on_the_project,
    the_requirement_is_delivered_when_every_pull_request_is_merged,
    deliver_refuses_work_changed_after_its_approval,
    a_pull_request_github_opened_before_failing_is_not_opened_twice,
    a_delivery_killed_mid_way_is_finished_by_its_next_attempt_without_duplicates,
    bad_projects_and_repositories_are_refused_and_change_nothing,
);

/// A bare repository of the fake GitHub.
fn bare(hub: &Gatehouse, repo: &str) -> std::path::PathBuf {
    hub.data.path().join(format!("git/{repo}.git"))
}

fn branches(hub: &Gatehouse, repo: &str) -> Vec<String> {
    git(&bare(hub, repo), &["branch", "--format=%(refname:short)"])
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn token(hub: &Gatehouse, person: &str) -> String {
    hub.stored_token(person, &Scope::ALL, None).await
}

/// Approves the run's `review` gate as ana (a lead) through the API, once it waits.
async fn approve(hub: &Gatehouse, run: Uuid) {
    hub.node(run, "review", "waiting_approval", 1).await;
    let ana = token(hub, "ana").await;
    hub.api_as(&ana)
        .post(
            &format!("/runs/{run}/gates/review/decision"),
            json!({ "decision": "approve" }),
        )
        .await
        .is(202);
}

/// Approves `run`, waits for its delivery, and checks what a run of `change` delivers:
/// one pull request in each writable repository, each naming the other, and nothing pushed
/// to the read-only one. Returns the two pull requests (acme/api's first).
async fn delivered_change(hub: &Gatehouse, run: Uuid) -> Vec<Pull> {
    approve(hub, run).await;
    let state = hub
        .wait(run, "the run to end", |r, _| {
            ["succeeded", "failed", "cancelled"].contains(&r.status.as_str())
        })
        .await;
    let row = hub.db.store.run(run).await.unwrap().unwrap();
    assert_eq!(row.status, "succeeded", "{state:#}");
    let recorded = recorded_pulls(hub, run).await;
    let repos: Vec<&str> = recorded.iter().map(|(repo, _)| repo.as_str()).collect();
    assert_eq!(
        repos,
        ["acme/api", "acme/web"],
        "one pull request per changed writable repository"
    );
    let all = hub.github.pulls();
    let pull = |repo: &str| {
        let number = recorded.iter().find(|(r, _)| r == repo).unwrap().1;
        all.iter()
            .find(|p| p.repo == repo && p.number == number)
            .unwrap()
            .clone()
    };
    let (api, web) = (pull("acme/api"), pull("acme/web"));
    assert!(
        api.body.contains(&format!("acme/web#{}", web.number)),
        "{}",
        api.body
    );
    assert!(
        web.body.contains(&format!("acme/api#{}", api.number)),
        "{}",
        web.body
    );
    assert_eq!(
        git(
            &bare(hub, "acme/api"),
            &["show", &format!("{}:TESTED.md", api.head)]
        ),
        "make test\n",
        "the project's settings reach the script"
    );
    assert_eq!(
        branches(hub, "acme/shared"),
        ["main"],
        "read-only: never pushed"
    );
    vec![api, web]
}

/// `(repo, number)` of the pull requests recorded for the run's requirement.
async fn recorded_pulls(hub: &Gatehouse, run: Uuid) -> Vec<(String, u64)> {
    let row = hub.db.store.run(run).await.unwrap().unwrap();
    let requirement = row.requirement_id.expect("a run on code has a requirement");
    let mut pulls: Vec<(String, u64)> = hub
        .db
        .store
        .pull_requests_of_requirement(requirement)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.run_id == run)
        .map(|p| (p.repo, p.number as u64))
        .collect();
    pulls.sort();
    pulls
}

/// The real `pull_request.closed` payload for pull request `number` of `repo`.
fn closed(repo: &str, number: u64, merged: bool) -> Value {
    let mut payload = fixture("pull_request.closed.unmerged");
    payload["repository"]["full_name"] = json!(repo);
    payload["number"] = json!(number);
    payload["pull_request"]["number"] = json!(number);
    payload["pull_request"]["merged"] = json!(merged);
    payload
}

/// Starts `sop` as `person` through the API with `body`'s other fields.
async fn start(hub: &Gatehouse, person: &str, mut body: Value) -> Uuid {
    let token = token(hub, person).await;
    let accepted = hub.api_as(&token).post("/runs", body.take()).await.is(202);
    accepted["run_id"].as_str().unwrap().parse().unwrap()
}

async fn a_run_from_the_api_delivers_a_linked_pull_request_per_changed_repository(
    backend: Backend,
) {
    let hub = hub(backend).await;
    let run = start(&hub, "cy", json!({ "sop": "change", "project": "shop" })).await;
    let row = hub.db.store.run(run).await.unwrap().unwrap();
    assert_eq!(row.project.as_deref(), Some("shop"));
    delivered_change(&hub, run).await;

    // The requirement the run made for itself belongs to the project and lists both.
    let requirement = row.requirement_id.unwrap();
    let ana = token(&hub, "ana").await;
    let shown = hub
        .api_as(&ana)
        .get(&format!("/requirements/{requirement}"))
        .await
        .is(200);
    assert_eq!(shown["requirement"]["project"], "shop", "{shown:#}");
    assert_eq!(shown["requirement"]["source"]["kind"], "api", "{shown:#}");
    let states: Vec<&Value> = shown["pull_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["state"])
        .collect();
    assert_eq!(states, [&json!("open"), &json!("open")], "{shown:#}");
    assert_eq!(shown["runs"][0]["project"], "shop");

    // A run on some of the project's repositories is frozen with those.
    let run = start(
        &hub,
        "cy",
        json!({ "sop": "ask", "repositories": ["acme/web", "acme/api"] }),
    )
    .await;
    let row = hub.db.store.run(run).await.unwrap().unwrap();
    let workspace: Value = serde_json::from_str(row.workspace.as_deref().unwrap()).unwrap();
    assert_eq!(workspace["project"], "shop", "found from its repositories");
    let repos: Vec<&Value> = workspace["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["repo"])
        .collect();
    assert_eq!(
        repos,
        [&json!("acme/api"), &json!("acme/web")],
        "in the project's order"
    );
    hub.stop().await;
}

async fn runs_from_chat_and_a_schedule_work_on_the_project(backend: Backend) {
    let hub = hub(backend).await;
    // `run SOP` in the project's channel.
    hub.slack_mention("Ev-shop-1", "C0SHOP", CY, "run change")
        .await;
    let run = hub.until_run(|r| r.sop == "change").await;
    let row = hub.db.store.run(run).await.unwrap().unwrap();
    assert_eq!(row.project.as_deref(), Some("shop"));
    let requirement = hub
        .db
        .store
        .requirement(row.requirement_id.unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(requirement.project.as_deref(), Some("shop"), "the thread's");
    delivered_change(&hub, run).await;

    // A schedule on the project, fired by hand.
    let cy = token(&hub, "cy").await;
    hub.api_as(&cy)
        .post(
            "/schedules",
            json!({ "name": "nightly-change", "cron": "0 3 * * *", "sop": "change", "project": "shop" }),
        )
        .await
        .is(201);
    hub.api_as(&cy)
        .post("/schedules/nightly-change/trigger", json!({}))
        .await
        .is(202);
    let fired = hub
        .until_run(|r| r.schedule.as_deref() == Some("nightly-change"))
        .await;
    let row = hub.db.store.run(fired).await.unwrap().unwrap();
    assert_eq!(row.project.as_deref(), Some("shop"));
    delivered_change(&hub, fired).await;
    hub.stop().await;
}

async fn the_requirement_is_delivered_when_every_pull_request_is_merged(backend: Backend) {
    let hub = hub(backend).await;
    let run = start(&hub, "cy", json!({ "sop": "change", "project": "shop" })).await;
    let pulls = delivered_change(&hub, run).await;
    let requirement = hub
        .db
        .store
        .run(run)
        .await
        .unwrap()
        .unwrap()
        .requirement_id
        .unwrap();
    let state = |hub: &Gatehouse| {
        let store = hub.db.store.clone();
        async move { store.requirement(requirement).await.unwrap().unwrap().state }
    };
    // One of two merged: still open; both: delivered.
    for (delivery, pull, merged, after) in [
        ("m-api", &pulls[0], 1, "open"),
        ("m-web", &pulls[1], 2, "delivered"),
    ] {
        hub.deliver_github(
            "pull_request",
            delivery,
            &closed(&pull.repo, pull.number, true),
        )
        .await;
        assert_eq!(
            hub.note(delivery).await,
            format!(
                "pull request {}#{} merged: {merged} of 2 merged, api:{run} {after}",
                pull.repo, pull.number
            )
        );
        assert_eq!(state(&hub).await, after);
    }

    // Another run's pull request closed unmerged closes its requirement.
    let other = start(&hub, "cy", json!({ "sop": "change", "project": "shop" })).await;
    let pulls = delivered_change(&hub, other).await;
    hub.deliver_github(
        "pull_request",
        "c-web",
        &closed("acme/web", pulls[1].number, false),
    )
    .await;
    assert!(
        hub.note("c-web").await.ends_with(" closed"),
        "{}",
        hub.note("c-web").await
    );
    hub.stop().await;
}

async fn deliver_refuses_work_changed_after_its_approval(backend: Backend) {
    let hub = hub(backend).await;
    let run = start(&hub, "cy", json!({ "sop": "tamper", "project": "shop" })).await;
    approve(&hub, run).await;
    hub.wait_run(run, "failed").await;
    let state: Value =
        serde_json::from_str(&hub.db.store.run(run).await.unwrap().unwrap().state).unwrap();
    let reason = state["failure"].as_str().unwrap_or_default();
    assert!(
        reason.contains("gate `review`") && reason.contains("acme/api"),
        "{state:#}"
    );
    for repo in ["acme/api", "acme/web", "acme/shared"] {
        assert_eq!(branches(&hub, repo), ["main"], "{repo}: nothing pushed");
    }
    assert!(hub.github.pulls().is_empty());
    hub.stop().await;
}

async fn bad_projects_and_repositories_are_refused_and_change_nothing(backend: Backend) {
    let hub = hub(backend).await;
    let cy = token(&hub, "cy").await;
    for (body, status, words) in [
        (
            json!({ "sop": "change", "project": "mobile" }),
            422,
            "no project named `mobile`; the projects are `shop`, `tools`",
        ),
        (
            json!({ "sop": "change", "project": "shop", "repositories": ["acme/tools"] }),
            422,
            "acme/tools is not a repository of project `shop`",
        ),
        (
            json!({ "sop": "change", "repositories": ["acme/secret"] }),
            422,
            "no project lists acme/secret",
        ),
        (
            json!({ "sop": "elsewhere", "project": "shop" }),
            422,
            "project `shop` does not allow the SOP `elsewhere`",
        ),
        (
            json!({ "sop": "elsewhere", "project": "tools" }),
            403,
            "cy may not start runs on project `tools`; its run list is ana",
        ),
        (
            json!({ "sop": "change", "issue": "acme/api#0" }),
            422,
            "issue: `acme/api#0`: issue numbers start at 1",
        ),
        (
            json!({ "sop": "change", "project": "shop", "issue": "acme/tools#3" }),
            422,
            "acme/tools is not a repository of project `shop`",
        ),
    ] {
        hub.api_as(&cy)
            .post("/runs", body)
            .await
            .refused(status, words);
    }
    hub.api_as(&cy)
        .post(
            "/schedules",
            json!({ "name": "n", "cron": "0 3 * * *", "sop": "change", "project": "mobile" }),
        )
        .await
        .refused(422, "project: no project named `mobile`");
    assert!(hub.db.store.runs(None, &[], 10).await.unwrap().is_empty());
    assert!(
        hub.db
            .store
            .requirements(None, &[], 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(hub.db.store.schedule("n").await.unwrap().is_none());

    // A label on a repository no project lists starts nothing.
    let mut labeled = fixture("issues.labeled");
    labeled["label"]["name"] = json!("elsewhere");
    hub.deliver_github("issues", "l-1", &labeled).await;
    assert_eq!(
        hub.note("l-1").await,
        format!(
            "`elsewhere` not started: no project lists {REPO}; add it to a [[projects]] entry's repositories"
        )
    );
    assert!(hub.db.store.runs(None, &[], 10).await.unwrap().is_empty());
    // A login Gatehouse does not know is nobody, even one spelled like a person of the
    // project's `run` list.
    labeled["label"]["name"] = json!("tools");
    labeled["repository"]["full_name"] = json!("acme/tools");
    labeled["sender"]["login"] = json!("ana");
    hub.deliver_github("issues", "l-2", &labeled).await;
    assert_eq!(
        hub.note("l-2").await,
        "`elsewhere` not started: someone Gatehouse does not know may not start runs on project `tools`; its run list is ana"
    );
    assert!(hub.db.store.runs(None, &[], 10).await.unwrap().is_empty());

    // The project's approvers decide its gates, beside the gate's own.
    let run = start(&hub, "cy", json!({ "sop": "ask", "project": "shop" })).await;
    hub.node(run, "review", "waiting_approval", 1).await;
    let dee = token(&hub, "dee").await;
    hub.api_as(&dee)
        .post(
            &format!("/runs/{run}/gates/review/decision"),
            json!({ "decision": "approve" }),
        )
        .await
        .refused(
            403,
            "dee may not decide gates on project `shop`; its approve list is group:leads",
        );
    let bo = token(&hub, "bo").await;
    hub.api_as(&bo)
        .post(
            &format!("/runs/{run}/gates/review/decision"),
            json!({ "decision": "approve" }),
        )
        .await
        .is(202);
    hub.wait_run(run, "succeeded").await;

    // A comment on an issue works on the project of the issue's repository.
    let mut comment = fixture("issue_comment.created");
    comment["repository"]["full_name"] = json!("acme/web");
    comment["comment"]["user"]["login"] = json!("dee-gh");
    comment["comment"]["body"] = json!("/gatehouse run ask");
    hub.deliver_github("issue_comment", "c-1", &comment).await;
    assert!(
        hub.note("c-1").await.contains("started `ask`"),
        "{}",
        hub.note("c-1").await
    );
    let commented = hub.until_run(|r| r.sop == "ask" && r.id != run).await;
    let row = hub.db.store.run(commented).await.unwrap().unwrap();
    assert_eq!(row.project.as_deref(), Some("shop"));
    let requirement = hub
        .db
        .store
        .requirement(row.requirement_id.unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(requirement.source_key.starts_with("github:acme/web#"));
    assert_eq!(requirement.project.as_deref(), Some("shop"));

    // The projects, as the API lists them.
    let listed = hub.api_as(&cy).get("/projects").await.is(200);
    assert_eq!(listed[0]["name"], "shop");
    assert_eq!(listed[0]["repositories"][2]["mode"], "read-only");
    assert_eq!(listed[0]["settings"]["test_command"], "make test");
    hub.stop().await;
}

async fn a_pull_request_github_opened_before_failing_is_not_opened_twice(backend: Backend) {
    let hub = hub(backend).await;
    // The first pull request is opened, but GitHub answers 502: the delivery looks for it,
    // finds it open, and goes on rather than opening another.
    hub.github.fail_pull_creates(1);
    let run = start(&hub, "cy", json!({ "sop": "change", "project": "shop" })).await;
    let pulls = delivered_change(&hub, run).await;
    for pull in &pulls {
        let same: Vec<_> = hub
            .github
            .pulls()
            .into_iter()
            .filter(|p| p.repo == pull.repo && p.head == pull.head)
            .collect();
        assert_eq!(same.len(), 1, "{same:#?}");
    }
    let creates = hub
        .github
        .calls()
        .iter()
        .filter(|c| c.starts_with("POST /repos/acme/") && c.ends_with("/pulls"))
        .count();
    assert_eq!(
        creates, 2,
        "the one that failed was found open, not created again"
    );
    assert_eq!(
        hub.db.store.run(run).await.unwrap().unwrap().status,
        "succeeded"
    );
    hub.stop().await;
}

async fn a_delivery_killed_mid_way_is_finished_by_its_next_attempt_without_duplicates(
    backend: Backend,
) {
    let hub = hub(backend).await;
    let run = start(&hub, "cy", json!({ "sop": "resilient", "project": "shop" })).await;
    // The first pull request is opened and the process dies before GitHub answers.
    hub.github.hold_pull_creates(true);
    approve(&hub, run).await;
    hub.until("a pull request", || {
        (!hub.github.pulls().is_empty()).then_some(())
    })
    .await;
    let github = hub.github.clone();
    let (db, data) = hub.crash();
    github.hold_pull_creates(false);

    // Restarted, the lost attempt is given up and the next one delivers what was approved.
    let hub = configured(Gatehouse::builder_on(db, data))
        .fake_github(github)
        .start()
        .await;
    hub.wait_run(run, "succeeded").await;
    let recorded = recorded_pulls(&hub, run).await;
    let repos: Vec<&str> = recorded.iter().map(|(repo, _)| repo.as_str()).collect();
    assert_eq!(repos, ["acme/api", "acme/web"]);
    for repo in ["acme/api", "acme/web"] {
        let open: Vec<_> = hub
            .github
            .pulls()
            .into_iter()
            .filter(|p| p.repo == repo)
            .collect();
        assert_eq!(open.len(), 1, "{repo}: one pull request, {open:#?}");
    }
    hub.stop().await;
}
