//! GitHub webhooks end to end: signed deliveries (the real payloads from octokit/webhooks)
//! over HTTP on loopback into the API, stored, processed into requirements, runs and gate
//! decisions by the real scheduler on a real database.

use std::time::Duration;

use gatehouse_fake_forge::git::{commit_all, git};
use gatehouse_fake_forge::github::FakeGithub;
use gatehouse_github::GithubClient;
use gatehouse_ingest::{Person, Trigger};
// Real payloads, their issues opened by `reporter`: the fixtures' author, Codertocat, is
// ana here, a lead who decides gates.
use gatehouse_tests::gatehouse::github::{REPO, TOKEN, reported_fixture as fixture, sign};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use serde_json::{Value, json};

const HOLD: &str = "name: hold\nparams: { repo: {}, issue: {} }\nnodes:\n  review: { kind: gate, approvers: [group:leads] }\n";
const QUICK: &str = "name: quick\nnodes:\n  work: { kind: script, run: \"true\" }\n";
/// The `fix` node also tries what a hostile script could: point the remote elsewhere and
/// plant a hook that would see git's environment (and with it the token).
const SHIP: &str = "name: ship\nnodes:\n  fix: { kind: script, run: 'echo \"fixed by $GATEHOUSE_RUN_ID\" > FIX.md; git remote -v > $GATEHOUSE_ARTIFACTS/remotes.txt; git config remote.origin.url file:///nonexistent/evil.git; printf \"#!/bin/sh\\nenv > ../hook-saw-this\\n\" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit', artifacts: [remotes.txt] }\n  check: { kind: gate, needs: [fix], approvers: [group:leads], send_back: [fix] }\n  deliver: { kind: deliver, needs: [check] }\n";
const MERGE: &str = "name: merge\nnodes:\n  fix: { kind: script, run: 'echo merged > MERGED.md' }\n  deliver: { kind: deliver, needs: [fix], mode: direct, branch: main }\n";
const MERGE_LATER: &str = "name: merge-later\nnodes:\n  fix: { kind: script, run: 'echo ours > MERGED.md' }\n  check: { kind: gate, needs: [fix], approvers: [group:leads] }\n  deliver: { kind: deliver, needs: [check], mode: direct }\n";

/// Gatehouse wired to the fake GitHub with `triggers`, the SOPs above, and the people ana
/// (Codertocat, a lead), bob and tri (the triager); `process: false` stores deliveries
/// without processing them, as a process that crashed after storing them.
async fn hub(backend: Backend, triggers: Vec<Trigger>, process: bool) -> Gatehouse {
    let person = |id: &str, login: &str, groups: &[&str]| Person {
        id: id.into(),
        github: Some(login.into()),
        slack: None,
        discord: None,
        groups: groups.iter().map(|g| g.to_string()).collect(),
    };
    let builder = Gatehouse::builder(backend)
        .sops(&[
            ("hold", HOLD),
            ("quick", QUICK),
            ("ship", SHIP),
            ("merge", MERGE),
            ("merge-later", MERGE_LATER),
        ])
        .people(vec![
            person("ana", "Codertocat", &["leads"]),
            person("bob", "bob-gh", &[]),
            person("tri", "triager", &[]),
        ])
        .github(triggers)
        .lease(Duration::from_secs(5));
    match process {
        true => builder.start().await,
        false => builder.deliveries_later().start().await,
    }
}

/// The real `issues.labeled` payload, labelled `label` by the triager.
fn labeled(label: &str) -> Value {
    let mut payload = fixture("issues.labeled");
    payload["label"]["name"] = json!(label);
    payload["sender"]["login"] = json!("triager");
    payload
}

/// The real `issue_comment.created` payload with another body and author, as a comment of
/// its own: GitHub never sends two comments (or two versions of one) with the same id and
/// `updated_at`, and Gatehouse runs a version's commands once.
fn comment(login: &str, body: &str) -> Value {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut payload = fixture("issue_comment.created");
    let id = payload["comment"]["id"].as_u64().unwrap()
        + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    payload["comment"]["id"] = json!(id);
    payload["comment"]["body"] = json!(body);
    payload["comment"]["user"]["login"] = json!(login);
    payload["sender"]["login"] = json!(login);
    payload
}

fn hold_on(label: &str) -> Trigger {
    Trigger::new(label, "hold", &["Codertocat/*".into()], false, false).unwrap()
}

/// `stop-me` starts `hold`, and removing it cancels the run.
fn stop_me() -> Trigger {
    Trigger::new("stop-me", "hold", &["Codertocat/*".into()], true, false).unwrap()
}

/// `stop-me` added to the issue, then removed a minute later.
fn stop_me_added_then_removed() -> (Value, Value) {
    let mut stop = labeled("stop-me");
    stop["issue"]["updated_at"] = json!("2019-05-15T15:21:00Z");
    let mut unstop = stop.clone();
    unstop["action"] = json!("unlabeled");
    unstop["issue"]["updated_at"] = json!("2019-05-15T15:22:00Z");
    (stop, unstop)
}

on_both_backends!(
    bad_deliveries_are_refused_and_nothing_is_stored,
    a_label_starts_its_sop_once_however_often_it_is_delivered,
    a_delivery_stored_before_a_crash_is_processed_after_the_restart,
    a_delivery_is_processed_as_it_arrives,
    a_delivery_waits_behind_an_earlier_pending_one,
    deliveries_waiting_together_each_see_those_before_them,
    comment_commands_act_for_configured_people_only,
    a_comment_delivered_again_under_a_new_delivery_id_starts_nothing,
    issue_events_keep_the_requirement_current,
    forks_and_removed_labels_follow_their_trigger,
    the_status_comment_is_posted_once_and_edited_in_place,
    a_comment_github_stored_before_failing_is_not_posted_again,
    commands_that_need_an_answer_get_a_reply,
    reconciliation_starts_labels_added_while_away_exactly_once,
    labels_and_commands_reach_only_configured_repositories_and_people,
    deliver_pushes_a_work_branch_and_keeps_one_pull_request,
    direct_delivery_merges_into_the_branch,
    direct_delivery_refuses_a_conflicting_merge,
    a_comment_github_refuses_for_good_is_given_up,
    the_status_comment_names_blocked_hosts_and_budgets_past_80_percent,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_app_acts_through_its_installation() {
    use secrecy::ExposeSecret;
    let github = FakeGithub::start().await;
    let key = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/github/test-app-private-key.pem"
    ))
    .unwrap();
    let client = GithubClient::app(&github.url, 12345, &key.into()).unwrap();
    client
        .create_comment_once(REPO, 1, "<!-- m -->", "hello")
        .await
        .unwrap();
    assert_eq!(github.comments(REPO, 1).len(), 1);
    let token = client.git_token(REPO).await.unwrap();
    assert!(token.expose_secret().starts_with("ghs_installation_42_"));
    github.add_search_result(json!({
        "number": 3, "title": "t", "body": null, "html_url": "h",
        "repository_url": format!("{}/repos/{REPO}", github.url),
        "updated_at": "2026-11-30T10:00:00Z", "user": {"login": "Codertocat"},
        "labels": [{"name": "bug"}]
    }));
    assert_eq!(
        client
            .open_with_label("bug", "user:Codertocat")
            .await
            .unwrap()
            .len(),
        1
    );

    let calls = github.calls();
    let authorizations = github.authorizations();
    let auth_of = |call: &str| {
        calls
            .iter()
            .zip(&authorizations)
            .find(|(c, _)| c.as_str() == call)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| panic!("no call {call}: {calls:?}"))
    };
    // The app signs in with a JWT to find and mint; everything else uses the installation.
    let jwt = auth_of(&format!("GET /repos/{REPO}/installation"));
    assert!(jwt.starts_with("Bearer ey"), "{jwt}");
    assert!(auth_of("POST /app/installations/42/access_tokens").starts_with("Bearer ey"));
    let comment = auth_of(&format!("POST /repos/{REPO}/issues/1/comments"));
    assert!(comment.contains("ghs_installation_42_"), "{comment}");
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.ends_with("/installation"))
            .count(),
        1,
        "the installation is looked up once per owner: {calls:?}"
    );
}

async fn bad_deliveries_are_refused_and_nothing_is_stored(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], true).await;
    let body = serde_json::to_vec(&labeled("bug")).unwrap();
    let (status, answer) = hub.post_github("issues", "d-unsigned", &body, None).await;
    assert_eq!(status, 401);
    assert_eq!(answer["error"], "no X-Hub-Signature-256 header");
    let wrong = sign(b"another body");
    assert_eq!(
        hub.post_github("issues", "d-wrong", &body, Some(wrong))
            .await
            .0,
        401
    );
    let big = vec![b' '; 65 * 1024];
    assert_eq!(
        hub.post_github("issues", "d-big", &big, Some(sign(&big)))
            .await
            .0,
        413
    );
    let (status, answer) = hub
        .post_github("issues", "d-text", b"not json", Some(sign(b"not json")))
        .await;
    assert_eq!(status, 400);
    assert!(
        answer["error"].as_str().unwrap().contains("not JSON"),
        "{answer}"
    );
    for delivery in ["d-unsigned", "d-wrong", "d-big", "d-text"] {
        assert!(
            hub.db
                .store
                .delivery("github", delivery)
                .await
                .unwrap()
                .is_none()
        );
    }
    // Parses as JSON but lacks what an `issues` event has: recorded and ignored.
    hub.deliver_github("issues", "d-thin", &json!({"action": "opened"}))
        .await;
    assert!(
        hub.note("d-thin")
            .await
            .starts_with("payload not understood")
    );
    hub.deliver_github("ping", "d-ping", &fixture("ping")).await;
    assert!(hub.note("d-ping").await.starts_with("ping: "));
    hub.deliver_github("push", "d-push", &fixture("push")).await;
    assert_eq!(
        hub.note("d-push").await,
        "push to refs/tags/simple-tag: only a branch moving is acted on"
    );
    hub.stop().await;
}

async fn a_label_starts_its_sop_once_however_often_it_is_delivered(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug"), hold_on("other")], true).await;
    let payload = labeled("bug");
    let first = hub.deliver_github("issues", "d-1", &payload).await;
    assert_eq!(first["duplicate"], false);
    let body = serde_json::to_vec(&payload).unwrap();
    let (status, again) = hub
        .post_github("issues", "d-1", &body, Some(sign(&body)))
        .await;
    assert_eq!(status, 200);
    assert_eq!(again["duplicate"], true, "a redelivery does nothing");
    // The same label event through a second hook (another delivery id).
    hub.deliver_github("issues", "d-2", &payload).await;
    assert!(hub.note("d-1").await.starts_with("started `hold`"));
    assert_eq!(
        hub.note("d-2").await,
        "`hold` already started for this label event (delivered twice)"
    );
    let runs = hub.runs(1, "waiting", 1).await;
    assert_eq!(runs[0].requested_by.as_deref(), Some("tri"));
    let params: Value = serde_json::from_str(&runs[0].params).unwrap();
    assert_eq!(params, json!({"repo": REPO, "issue": "1"}));
    let requirement = hub.requirement(1).await;
    assert_eq!(requirement.title, "Spelling error in the README file");
    assert_eq!(requirement.state, "open");
    // A label no trigger names starts nothing.
    hub.deliver_github("issues", "d-3", &labeled("wontfix"))
        .await;
    assert_eq!(
        hub.note("d-3").await,
        format!("label `wontfix` starts nothing: no trigger names it for {REPO}")
    );
    hub.runs(1, "waiting", 1).await;
    hub.stop().await;
}

async fn a_delivery_stored_before_a_crash_is_processed_after_the_restart(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], false).await;
    hub.leave_github_pending("issues", "d-1", &labeled("bug"))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(hub.delivery_status("d-1").await, "pending");
    hub.process_deliveries();
    hub.note("d-1").await;
    hub.runs(1, "waiting", 1).await;
    hub.stop().await;
}

/// A delivery is processed in the commit that stores it: by the time it is answered, its
/// run is requested, with no processor running.
async fn a_delivery_is_processed_as_it_arrives(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], false).await;
    let answer = hub.deliver_github("issues", "d-1", &labeled("bug")).await;
    assert_eq!(answer["duplicate"], false);
    assert_eq!(hub.delivery_status("d-1").await, "processed");
    assert!(hub.note("d-1").await.starts_with("started `hold`"));
    hub.runs(1, "waiting", 1).await;
    hub.stop().await;
}

/// One arriving while an earlier delivery waits does not overtake it: a label removed
/// waits behind its addition, and then cancels the run the addition asked for.
async fn a_delivery_waits_behind_an_earlier_pending_one(backend: Backend) {
    let hub = hub(backend, vec![stop_me()], false).await;
    let (stop, unstop) = stop_me_added_then_removed();
    hub.leave_github_pending("issues", "d-1", &stop).await;
    let answer = hub.deliver_github("issues", "d-2", &unstop).await;
    assert_eq!(answer["duplicate"], false);
    assert_eq!(
        hub.delivery_status("d-2").await,
        "pending",
        "it waits its turn"
    );
    hub.process_deliveries();
    assert!(hub.note("d-1").await.starts_with("started `hold`"));
    assert!(
        hub.note("d-2")
            .await
            .contains("label removed: cancelling run"),
        "the run d-1 asked for is seen"
    );
    hub.runs(1, "cancelled", 1).await;
    hub.stop().await;
}

/// Deliveries waiting together are processed in one pass, each seeing what those before it
/// did: a label event delivered twice starts its SOP once, and a label removed right after
/// it was added cancels the run the addition asked for.
async fn deliveries_waiting_together_each_see_those_before_them(backend: Backend) {
    let triggers = vec![hold_on("bug"), stop_me()];
    let hub = hub(backend, triggers, false).await;
    let bug = labeled("bug");
    let (stop, unstop) = stop_me_added_then_removed();
    for (id, payload) in [
        ("d-1", &bug),
        ("d-2", &bug),
        ("d-3", &stop),
        ("d-4", &unstop),
        ("d-5", &labeled("wontfix")),
    ] {
        hub.leave_github_pending("issues", id, payload).await;
    }
    hub.process_deliveries();
    assert!(hub.note("d-1").await.starts_with("started `hold`"));
    assert_eq!(
        hub.note("d-2").await,
        "`hold` already started for this label event (delivered twice)"
    );
    assert!(hub.note("d-3").await.starts_with("started `hold`"));
    assert!(
        hub.note("d-4")
            .await
            .contains("label removed: cancelling run"),
        "the run d-3 asked for is seen"
    );
    assert!(
        hub.note("d-5")
            .await
            .starts_with("label `wontfix` starts nothing")
    );
    // Both runs are `hold`; the trigger cancels every unfinished run of its SOP, even one
    // the scheduler has not created yet.
    hub.runs(1, "cancelled", 2).await;
    hub.stop().await;
}

async fn comment_commands_act_for_configured_people_only(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], true).await;
    hub.deliver_github("issues", "d-label", &labeled("bug"))
        .await;
    let run = hub.runs(1, "waiting", 1).await[0].id;

    hub.deliver_github(
        "issue_comment",
        "c-1",
        &comment("mallory", "/gatehouse approve"),
    )
    .await;
    assert_eq!(
        hub.note("c-1").await,
        "approve: refused, `mallory` is not one of the people configured for Gatehouse; ask an administrator to add you to [[people]]"
    );
    hub.deliver_github(
        "issue_comment",
        "c-2",
        &comment("bob-gh", "@gatehouse approve ok"),
    )
    .await;
    assert_eq!(
        hub.note("c-2").await,
        "approve: refused: bob may not decide gate `review`; its approvers are group:leads"
    );
    // Commands in code blocks and quotes are not commands.
    let quoted = "> /gatehouse approve\n```\n/gatehouse approve\n```\nthanks";
    hub.deliver_github("issue_comment", "c-3", &comment("Codertocat", quoted))
        .await;
    assert_eq!(hub.note("c-3").await, "no command in the comment");
    hub.runs(1, "waiting", 1).await;

    // An edit runs only the commands it added.
    let mut edited = comment("Codertocat", "@gatehouse status\n/gatehouse approve lgtm");
    edited["action"] = json!("edited");
    edited["changes"] = json!({"body": {"from": "@gatehouse status"}});
    hub.deliver_github("issue_comment", "c-4", &edited).await;
    assert_eq!(
        hub.note("c-4").await,
        format!("approve {run}/review: decided")
    );
    hub.runs(1, "succeeded", 1).await;
    let decisions = hub.db.store.decisions(run).await.unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].person, "ana");
    assert_eq!(decisions[0].channel, "github");
    assert_eq!(decisions[0].comment.as_deref(), Some("lgtm"));

    // Unknown commands and `run` with parameters.
    hub.deliver_github(
        "issue_comment",
        "c-5",
        &comment("bob-gh", "/gatehouse deploy\n/gatehouse run quick"),
    )
    .await;
    let note = hub.note("c-5").await;
    assert!(note.contains("unknown command"), "{note}");
    assert!(note.contains("run: started `quick`"), "{note}");
    hub.stop().await;
}

async fn a_comment_delivered_again_under_a_new_delivery_id_starts_nothing(backend: Backend) {
    let hub = hub(backend, vec![], true).await;
    let written = comment("bob-gh", "/gatehouse run quick");
    let (id, at) = (&written["comment"]["id"], &written["comment"]["updated_at"]);
    let again = format!(
        "comment {id} as of {} was acted on already, by another delivery",
        at.as_str().unwrap()
    );
    hub.deliver_github("issue_comment", "r-1", &written).await;
    let note = hub.note("r-1").await;
    assert!(note.contains("run: started `quick`"), "{note}");
    // The same body under a new delivery id: a redelivery, a second hook, a replay.
    hub.deliver_github("issue_comment", "r-2", &written).await;
    assert_eq!(hub.note("r-2").await, again);

    // An edit is a new version of the comment: the command it added runs.
    let mut edited = written.clone();
    edited["action"] = json!("edited");
    edited["comment"]["body"] = json!("/gatehouse run quick\n/gatehouse run quick");
    edited["comment"]["updated_at"] = json!("2019-05-15T15:30:00Z");
    edited["changes"] = json!({"body": {"from": "/gatehouse run quick"}});
    hub.deliver_github("issue_comment", "r-3", &edited).await;
    let note = hub.note("r-3").await;
    assert!(note.contains("run: started `quick`"), "{note}");
    hub.deliver_github("issue_comment", "r-4", &edited).await;
    assert_eq!(
        hub.note("r-4").await,
        again.replace(at.as_str().unwrap(), "2019-05-15T15:30:00Z")
    );
    hub.runs_where(1, 2, |_| true).await;
    // Two runs, not four, however long one waits.
    tokio::time::sleep(Duration::from_millis(500)).await;
    hub.runs_where(1, 2, |_| true).await;
    hub.stop().await;
}

async fn issue_events_keep_the_requirement_current(backend: Backend) {
    let hub = hub(backend, vec![], true).await;
    let mut opened = fixture("issues.opened");
    opened["issue"]["user"]["login"] = json!("Codertocat");
    hub.deliver_github("issues", "d-open", &opened).await;
    hub.note("d-open").await;
    let created = hub.requirement(1).await;
    assert_eq!(
        created.requested_by, "ana",
        "the author, as a configured person"
    );
    let mut edited = fixture("issues.edited");
    edited["issue"]["title"] = json!("Spelling error in the README");
    hub.deliver_github("issues", "d-edit", &edited).await;
    hub.note("d-edit").await;
    let mut closed = fixture("issues.edited");
    closed["action"] = json!("closed");
    closed["issue"]["state"] = json!("closed");
    closed["issue"]["title"] = json!("Spelling error in the README");
    hub.deliver_github("issues", "d-close", &closed).await;
    hub.note("d-close").await;
    let now = hub.requirement(1).await;
    assert_eq!(now.id, created.id, "one requirement per issue");
    assert_eq!(now.title, "Spelling error in the README");
    assert_eq!(now.state, "closed");

    // Out of order: an edit (newer) arrives before the opening (older) of issue #2.
    let mut newer = fixture("issues.edited");
    newer["issue"]["number"] = json!(2);
    newer["issue"]["title"] = json!("The newer title");
    newer["issue"]["updated_at"] = json!("2019-05-16T00:00:00Z");
    hub.deliver_github("issues", "d-2-edit", &newer).await;
    hub.note("d-2-edit").await;
    let mut older = fixture("issues.opened");
    older["issue"]["number"] = json!(2);
    hub.deliver_github("issues", "d-2-open", &older).await;
    hub.note("d-2-open").await;
    assert_eq!(hub.requirement(2).await.title, "The newer title");
    hub.stop().await;
}

async fn forks_and_removed_labels_follow_their_trigger(backend: Backend) {
    let triggers = vec![
        hold_on("bug"),
        stop_me(),
        Trigger::new("fork-ok", "quick", &["Codertocat/*".into()], false, true).unwrap(),
    ];
    let hub = hub(backend, triggers, true).await;
    // A pull request from a fork does not start a run holding credentials...
    let mut pr = fixture("pull_request.opened");
    pr["action"] = json!("labeled");
    pr["label"] = json!({"name": "bug"});
    pr["pull_request"]["head"]["repo"]["full_name"] = json!("mallory/Hello-World");
    hub.deliver_github("pull_request", "p-1", &pr).await;
    assert_eq!(
        hub.note("p-1").await,
        "`hold` not started: the pull request comes from a fork (allow_forks = false)"
    );
    // ...unless its trigger allows forks.
    pr["label"] = json!({"name": "fork-ok"});
    hub.deliver_github("pull_request", "p-2", &pr).await;
    assert!(hub.note("p-2").await.starts_with("started `quick`"));

    // Removing a label leaves its runs alone unless the trigger says otherwise.
    hub.deliver_github("issues", "d-bug", &labeled("bug")).await;
    hub.runs(1, "waiting", 1).await;
    let mut removed = labeled("bug");
    removed["action"] = json!("unlabeled");
    hub.deliver_github("issues", "d-unbug", &removed).await;
    assert_eq!(
        hub.note("d-unbug").await,
        "label removed; runs of `hold` go on (cancel_on_unlabel = false)"
    );
    let mut stop = labeled("stop-me");
    stop["issue"]["updated_at"] = json!("2019-05-15T15:21:00Z");
    hub.deliver_github("issues", "d-stop", &stop).await;
    hub.newest(1, "waiting", 2).await;
    stop["action"] = json!("unlabeled");
    stop["issue"]["updated_at"] = json!("2019-05-15T15:22:00Z");
    hub.deliver_github("issues", "d-unstop", &stop).await;
    assert!(
        hub.note("d-unstop")
            .await
            .contains("label removed: cancelling run")
    );
    let requirement = hub.requirement(1).await;
    for _ in 0..500 {
        let runs = hub
            .db
            .store
            .runs_of_requirement(requirement.id)
            .await
            .unwrap();
        // Both runs are `hold`; the trigger cancels every unfinished run of its SOP.
        if runs.iter().all(|r| r.status == "cancelled") {
            hub.stop().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the runs were not cancelled");
}

async fn the_status_comment_is_posted_once_and_edited_in_place(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], true).await;
    hub.deliver_github("issues", "d-label", &labeled("bug"))
        .await;
    let run = hub.runs(1, "waiting", 1).await[0].id;
    let status = hub.comments(1, 1, |c| c.contains("waiting_approval")).await;
    assert!(status[0].contains(&format!("run `{run}`")), "{}", status[0]);
    assert!(status[0].contains("waits for group:leads"), "{}", status[0]);
    assert!(status[0].contains(&format!("<!-- gatehouse:run:{run} -->")));
    assert!(
        status[0].contains(&format!("[Run details](https://gatehouse.test/runs/{run})")),
        "{}",
        status[0]
    );

    hub.deliver_github(
        "issue_comment",
        "c-ok",
        &comment("Codertocat", "/gatehouse approve"),
    )
    .await;
    hub.runs(1, "succeeded", 1).await;
    let done = hub.comments(1, 1, |c| c.contains("— succeeded")).await;
    assert!(
        done[0].contains("| review | gate | succeeded | 1 |"),
        "{}",
        done[0]
    );
    let calls = hub.github.calls();
    let posts = calls.iter().filter(|c| c.starts_with("POST")).count();
    let edits = calls.iter().filter(|c| c.starts_with("PATCH")).count();
    assert_eq!(posts, 1, "created once: {calls:?}");
    assert!(edits >= 1, "then edited in place: {calls:?}");
    hub.stop().await;
}

async fn a_comment_github_stored_before_failing_is_not_posted_again(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], true).await;
    // The first create is stored by GitHub but answered 502 (the same as a crash between
    // posting and recording the id), and the next call meets a secondary rate limit.
    hub.github.fail_creates(1);
    hub.deliver_github("issues", "d-label", &labeled("bug"))
        .await;
    hub.runs(1, "waiting", 1).await;
    hub.comments(1, 1, |c| c.contains("waiting_approval")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        hub.github.comments(REPO, 1).len(),
        1,
        "found by its marker, not repeated"
    );
    hub.github.rate_limit(1);
    hub.deliver_github(
        "issue_comment",
        "c-ok",
        &comment("Codertocat", "/gatehouse approve"),
    )
    .await;
    hub.comments(1, 1, |c| c.contains("— succeeded")).await;
    let calls = hub.github.calls();
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("POST")).count(),
        1,
        "{calls:?}"
    );
    hub.stop().await;
}

async fn commands_that_need_an_answer_get_a_reply(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], true).await;
    hub.deliver_github("issues", "d-label", &labeled("bug"))
        .await;
    let run = hub.runs(1, "waiting", 1).await[0].id;
    hub.comments(1, 1, |c| c.contains("waiting_approval")).await;

    hub.deliver_github(
        "issue_comment",
        "c-who",
        &comment("mallory", "/gatehouse approve"),
    )
    .await;
    let replies = hub.comments(1, 2, |c| c.starts_with("@mallory")).await;
    assert!(
        replies[1].contains("`approve`: refused: `mallory` is not one of the people configured"),
        "{}",
        replies[1]
    );
    hub.deliver_github(
        "issue_comment",
        "c-typo",
        &comment("bob-gh", "/gatehouse aprove\n@gatehouse status"),
    )
    .await;
    let replies = hub.comments(1, 3, |c| c.starts_with("@bob-gh")).await;
    assert!(replies[2].contains("`aprove`"), "{}", replies[2]);
    assert!(replies[2].contains("unknown command"), "{}", replies[2]);
    assert!(
        replies[2].contains("send-back NODE"),
        "help follows: {}",
        replies[2]
    );
    assert!(
        replies[2].contains(&format!(
            "`{run}` hold — waiting; gate `{run}/review` (attempt 1) waits for group:leads"
        )),
        "{}",
        replies[2]
    );
    // A redelivery replies nothing new.
    hub.deliver_github(
        "issue_comment",
        "c-typo",
        &comment("bob-gh", "/gatehouse aprove"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hub.github.comments(REPO, 1).len(), 3);
    hub.stop().await;
}

async fn reconciliation_starts_labels_added_while_away_exactly_once(backend: Backend) {
    let hub = hub(
        backend,
        vec![hold_on("bug"), hold_on("elsewhere-only")],
        true,
    )
    .await;
    let issue = |number: u64, repo: &str, label: &str| {
        json!({
            "number": number, "title": format!("issue {number}"), "body": "text",
            "html_url": format!("https://github.com/{repo}/issues/{number}"),
            "repository_url": format!("{}/repos/{repo}", hub.github.url),
            "updated_at": "2026-11-30T10:00:00Z", "state": "open",
            "user": {"login": "Codertocat"}, "labels": [{"name": label}]
        })
    };
    hub.github.add_search_result(issue(7, REPO, "bug"));
    hub.github.add_search_result(issue(8, "other/repo", "bug"));
    // Two replicas reconciling at the same time start one run.
    let (a, b) = tokio::join!(
        gatehouse_ingest::reconcile_once(&hub.api, &hub.client),
        gatehouse_ingest::reconcile_once(&hub.api, &hub.client)
    );
    assert_eq!(a.unwrap() + b.unwrap(), 1);
    hub.runs(7, "waiting", 1).await;
    assert_eq!(
        gatehouse_ingest::reconcile_once(&hub.api, &hub.client)
            .await
            .unwrap(),
        0,
        "it has its run now"
    );
    assert!(
        hub.db
            .store
            .requirement_by_key("github:other/repo#8")
            .await
            .unwrap()
            .is_none(),
        "outside the trigger's repositories"
    );
    // GitHub is only ever searched within the triggers' owners, never all of it.
    let searches = hub.github.searches();
    assert!(!searches.is_empty());
    for q in &searches {
        assert!(q.ends_with(" user:Codertocat"), "unscoped search: {q}");
    }
    hub.stop().await;
}

async fn labels_and_commands_reach_only_configured_repositories_and_people(backend: Backend) {
    let people_only = Trigger::new("people-only", "hold", &[REPO.into()], false, false)
        .unwrap()
        .requiring_person(true);
    let leads_only = Trigger::new("leads-only", "hold", &[REPO.into()], false, false)
        .unwrap()
        .with_starters(Some(vec!["group:leads".into()]));
    let hub = hub(backend, vec![hold_on("bug"), people_only, leads_only], true).await;
    // An issue template labels for whoever opens an issue: a stranger starts nothing.
    let mut by_stranger = labeled("people-only");
    by_stranger["sender"]["login"] = json!("drive-by");
    hub.deliver_github("issues", "p-1", &by_stranger).await;
    assert_eq!(
        hub.note("p-1").await,
        "`hold` not started: `drive-by` is not one of the people known to Gatehouse, and this trigger starts runs only for them"
    );
    hub.deliver_github("issues", "p-2", &labeled("people-only"))
        .await;
    assert!(
        hub.note("p-2").await.starts_with("started `hold`"),
        "tri is known"
    );
    // Starters: the triager (no groups) may not, a lead may.
    hub.deliver_github("issues", "s-1", &labeled("leads-only"))
        .await;
    assert_eq!(
        hub.note("s-1").await,
        "`hold` not started: tri may not start it by labelling; the trigger's starters are group:leads"
    );
    let mut by_lead = labeled("leads-only");
    by_lead["sender"]["login"] = json!("Codertocat");
    hub.deliver_github("issues", "s-2", &by_lead).await;
    assert!(hub.note("s-2").await.starts_with("started `hold`"));
    // A repository no trigger names (a hook there, or an App installed more widely).
    let mut elsewhere = labeled("bug");
    elsewhere["repository"]["full_name"] = json!("other/repo");
    hub.deliver_github("issues", "o-1", &elsewhere).await;
    assert_eq!(
        hub.note("o-1").await,
        "repository `other/repo` is not configured: name it in a trigger's `repos` or in [github] repositories"
    );
    let mut comment_elsewhere = comment("Codertocat", "@gatehouse run quick");
    comment_elsewhere["repository"]["full_name"] = json!("other/repo");
    hub.deliver_github("issue_comment", "o-2", &comment_elsewhere)
        .await;
    assert!(
        hub.note("o-2")
            .await
            .starts_with("repository `other/repo` is not configured")
    );
    assert!(
        hub.db
            .store
            .requirement_by_key("github:other/repo#1")
            .await
            .unwrap()
            .is_none(),
        "nothing is recorded for it"
    );
    hub.stop().await;
}

async fn deliver_pushes_a_work_branch_and_keeps_one_pull_request(backend: Backend) {
    let ship = Trigger::new("ship", "ship", &["Codertocat/*".into()], false, false).unwrap();
    let hub = hub(backend, vec![ship], true).await;
    let bare = hub.data.path().join(format!("git/{REPO}.git"));
    hub.deliver_github("issues", "d-ship", &labeled("ship"))
        .await;
    let run = hub.runs(1, "waiting", 1).await[0].id;
    hub.deliver_github(
        "issue_comment",
        "c-ok",
        &comment("Codertocat", "/gatehouse approve"),
    )
    .await;
    hub.runs(1, "succeeded", 1).await;

    let branch = "gatehouse/1-spelling-error-in-the-readme-file";
    let fix = git(&bare, &["show", &format!("{branch}:FIX.md")]);
    assert_eq!(
        fix,
        format!("fixed by {run}\n"),
        "the workspace was committed and pushed"
    );
    let subject = git(&bare, &["log", "-1", "--format=%s|%an", branch]);
    assert_eq!(
        subject.trim(),
        "Spelling error in the README file (#1)|Gatehouse"
    );
    let pulls = hub.github.pulls();
    assert_eq!(pulls.len(), 1);
    hub.comments(1, 1, |c| {
        c.contains(&format!("Delivered in #{}.", pulls[0].number))
    })
    .await;
    assert_eq!(
        (pulls[0].head.as_str(), pulls[0].base.as_str()),
        (branch, "main")
    );
    assert!(pulls[0].body.starts_with("Closes #1"), "{}", pulls[0].body);

    // The token is in no remote URL, repository config, log or artifact.
    let workspace = hub.data.path().join(format!("runs/{run}/workspace"));
    let config = std::fs::read_to_string(workspace.join(".git/config")).unwrap();
    assert!(!config.contains(TOKEN), "{config}");
    let remotes = std::fs::read_to_string(
        hub.data
            .path()
            .join(format!("runs/{run}/artifacts/fix/1/remotes.txt")),
    )
    .unwrap();
    assert!(
        remotes.contains("file://") && !remotes.contains(TOKEN),
        "{remotes}"
    );
    assert!(
        !hub.data
            .path()
            .join(format!("runs/{run}/hook-saw-this"))
            .exists(),
        "a hook planted by a node never ran with the token around"
    );
    for node in ["fix", "deliver"] {
        let logs = hub.db.store.logs(run, 0, 1000).await.unwrap();
        assert!(logs.iter().all(|l| !l.line.contains(TOKEN)), "{node}");
    }
    let logs = hub.db.store.logs(run, 0, 1000).await.unwrap();
    assert!(
        logs.iter()
            .any(|l| l.line == format!("delivered: pull request #{} on {REPO}", pulls[0].number)),
        "{logs:?}"
    );

    // Delivered again (a second label event): the same branch, the same pull request.
    let mut again = labeled("ship");
    again["issue"]["updated_at"] = json!("2019-05-15T16:00:00Z");
    hub.deliver_github("issues", "d-ship-2", &again).await;
    hub.newest(1, "waiting", 2).await;
    hub.deliver_github(
        "issue_comment",
        "c-ok-2",
        &comment("Codertocat", "/gatehouse approve"),
    )
    .await;
    hub.runs(1, "succeeded", 2).await;
    assert_eq!(hub.github.pulls().len(), 1, "updated, not opened twice");

    // Its merge delivers the requirement.
    let mut merged = fixture("pull_request.closed.unmerged");
    merged["number"] = json!(pulls[0].number);
    merged["pull_request"]["number"] = json!(pulls[0].number);
    merged["pull_request"]["merged"] = json!(true);
    hub.deliver_github("pull_request", "p-merged", &merged)
        .await;
    assert_eq!(
        hub.note("p-merged").await,
        format!(
            "pull request {REPO}#{} merged: 1 of 1 merged, github:{REPO}#1 delivered",
            pulls[0].number
        )
    );
    assert_eq!(hub.requirement(1).await.state, "delivered");

    // The API shows the requirement with both runs and its one pull request.
    let ana = hub
        .stored_token("ana", &gatehouse_ingest::Scope::ALL, None)
        .await;
    let id = hub.requirement(1).await.id;
    let shown = hub
        .api_as(&ana)
        .get(&format!("/requirements/{id}"))
        .await
        .is(200);
    assert_eq!(shown["requirement"]["state"], "delivered", "{shown:#}");
    assert_eq!(shown["runs"].as_array().unwrap().len(), 2, "{shown:#}");
    let listed = shown["pull_requests"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{shown:#}");
    assert_eq!(listed[0]["repo"], REPO);
    assert_eq!(listed[0]["number"], pulls[0].number);
    assert_eq!(listed[0]["state"], "merged");
    assert_eq!(
        listed[0]["run_id"], shown["runs"][0]["id"],
        "the newest run delivered last"
    );
    hub.stop().await;
}

async fn direct_delivery_merges_into_the_branch(backend: Backend) {
    let merge = Trigger::new("merge", "merge", &["Codertocat/*".into()], false, false).unwrap();
    let hub = hub(backend, vec![merge], true).await;
    let bare = hub.data.path().join(format!("git/{REPO}.git"));
    hub.deliver_github("issues", "d-merge", &labeled("merge"))
        .await;
    hub.runs(1, "succeeded", 1).await;
    assert_eq!(git(&bare, &["show", "main:MERGED.md"]), "merged\n");
    assert!(
        hub.github.pulls().is_empty(),
        "no pull request in direct mode"
    );
    let requirement = hub.requirement(1).await;
    assert_eq!(requirement.state, "delivered", "what was merged is in");
    let merges = hub
        .db
        .store
        .direct_merges_of_requirement(requirement.id)
        .await
        .unwrap();
    let main = git(&bare, &["rev-parse", "main"]);
    assert_eq!(merges.len(), 1);
    assert_eq!(merges[0].commit_sha, main.trim(), "with the merge commit");
    hub.stop().await;
}

async fn direct_delivery_refuses_a_conflicting_merge(backend: Backend) {
    let later = Trigger::new(
        "merge-later",
        "merge-later",
        &["Codertocat/*".into()],
        false,
        false,
    )
    .unwrap();
    let hub = hub(backend, vec![later], true).await;
    let bare = hub.data.path().join(format!("git/{REPO}.git"));
    hub.deliver_github("issues", "d-merge", &labeled("merge-later"))
        .await;
    let run = hub.runs(1, "waiting", 1).await[0].id;
    // Meanwhile someone changes the same file on main.
    let other = hub.data.path().join("other-clone");
    git(
        hub.data.path(),
        &[
            "clone",
            "--quiet",
            bare.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join("MERGED.md"), "theirs\n").unwrap();
    commit_all(&other, "theirs");
    git(&other, &["push", "--quiet", "origin", "main"]);

    hub.deliver_github(
        "issue_comment",
        "c-ok",
        &comment("Codertocat", "/gatehouse approve"),
    )
    .await;
    hub.runs(1, "failed", 1).await;
    let attempts = hub.db.store.attempts(run).await.unwrap();
    let deliver = attempts.iter().find(|a| a.node == "deliver").unwrap();
    assert_eq!(
        deliver.error.as_deref(),
        Some("the work conflicts with main in: MERGED.md")
    );
    assert_eq!(
        git(&bare, &["show", "main:MERGED.md"]),
        "theirs\n",
        "main untouched"
    );
    hub.stop().await;
}

async fn a_comment_github_refuses_for_good_is_given_up(backend: Backend) {
    let hub = hub(backend, vec![hold_on("bug")], true).await;
    hub.github.remove_repository(REPO);
    hub.deliver_github("issues", "d-label", &labeled("bug"))
        .await;
    let run = hub.runs(1, "waiting", 1).await[0].id;
    let key = format!("run:{run}");
    for _ in 0..500 {
        if let Some(comment) = hub.db.store.comment(&key).await.unwrap()
            && !comment.dirty
        {
            assert_eq!(comment.comment_id, None, "never posted");
            hub.stop().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("a comment GitHub answers 404 for is retried for ever");
}

/// A host the egress proxy refused the run's sandbox and a budget past 80 % are named in
/// the status comment, the host once however often it was refused.
async fn the_status_comment_names_blocked_hosts_and_budgets_past_80_percent(backend: Backend) {
    use gatehouse_store::{ConnectionOwner, ConnectionRow, ConnectionVerdict, SpendLimit};

    let hub = hub(backend, vec![hold_on("bug")], true).await;
    hub.deliver_github("issues", "d-label", &labeled("bug"))
        .await;
    let run = hub.runs(1, "waiting", 1).await[0].id;
    let refused = |host: &str| ConnectionRow {
        owner: ConnectionOwner::Node {
            run_id: run,
            node: "review".into(),
        },
        attempt: 1,
        host: host.into(),
        port: 443,
        verdict: ConnectionVerdict::Refused,
        reason: Some("not in the egress allow-list".into()),
        bytes_up: 0,
        bytes_down: 0,
        started_at: chrono::Utc::now(),
        duration_ms: 1,
    };
    let store = &hub.db.store;
    store
        .record_connections(&[refused("pypi.org"), refused("pypi.org"), refused("[x](y)")])
        .await
        .unwrap();
    let own = [SpendLimit {
        scope: format!("run:{run}"),
        label: "SOP hold".into(),
        period: "for this run".into(),
        tokens: None,
        usd_micros: Some(20_000_000),
    }];
    store.admit_spend("h1", &own, 0, 60_000).await.unwrap();
    store
        .charge_spend("h1", &own, 10, 16_100_000, 10)
        .await
        .unwrap();

    // The next change of the run brings them into its comment.
    hub.deliver_github(
        "issue_comment",
        "c-ok",
        &comment("Codertocat", "/gatehouse approve"),
    )
    .await;
    hub.runs(1, "succeeded", 1).await;
    let done = hub.comments(1, 1, |c| c.contains("— succeeded")).await;
    let expected = "\n- blocked `pypi.org:443` — add it to the profile's egress\n\
                    - blocked `[x]?y?:443` — add it to the profile's egress\n\
                    - 80% of the budget of SOP hold used for this run: $16.10 of $20.00\n";
    assert!(done[0].contains(expected), "{}", done[0]);
    assert_eq!(done[0].matches("pypi.org").count(), 1, "{}", done[0]);
    hub.stop().await;
}
