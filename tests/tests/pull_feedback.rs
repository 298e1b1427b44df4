//! After the pull request: reviews, failing checks and conflicts on the pull requests
//! Gatehouse opened come back as work, with GitHub's real payloads (tests/fixtures/github)
//! against the stateful fake GitHub and a bare repository delivered to through git.
//!
//! The SOP `loop` appends what it was told (its rework comment) to `WORK.md` and delivers;
//! its deliver node sends reviews, failing checks and conflicts back to `implement`.

#[path = "pull_feedback/assignments.rs"]
mod assignments;
#[path = "pull_feedback/conversations.rs"]
mod conversations;
#[path = "pull_feedback/hub.rs"]
mod hub;

use gatehouse_events::GateDecisionKind;
use gatehouse_fake_forge::github::NewReviewComment;
use gatehouse_tests::gatehouse::github::REPO;
use gatehouse_tests::{Backend, on_both_backends};
use serde_json::json;

use hub::{Hub, fixture};

on_both_backends!(
    changes_requested_send_the_run_back_to_the_same_pull_request,
    a_strangers_review_is_answered_and_starts_nothing,
    failing_checks_send_the_work_back_with_the_log_then_ask_a_person,
    checks_that_fail_on_the_base_too_are_reported_not_retried,
    feedback_while_the_run_works_waits_for_it,
    a_push_that_conflicts_with_the_pull_request_sends_the_work_back,
    events_about_other_pull_requests_are_recorded_as_ignored,
    a_crash_between_the_review_and_the_push_pushes_and_answers_once,
    assigning_an_issue_to_the_bot_starts_its_sop_and_unassigning_cancels,
    a_review_on_a_conversations_pull_request_becomes_a_turn,
    assigning_an_issue_can_open_a_conversation_on_it,
    a_line_comment_for_the_bot_is_answered_in_its_thread,
);

async fn a_line_comment_for_the_bot_is_answered_in_its_thread(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    let body = "@gatehouse name this constant";
    let comment = NewReviewComment {
        review_id: 7300,
        author: "Codertocat",
        path: "src/lib.rs",
        line: Some(5),
        body,
    };
    let id = hub.gh.github.add_review_comment(REPO, hub.pull, comment);
    let payload = hub.review_comment(id, 7300, "Codertocat", body);
    hub.gh
        .deliver_github("pull_request_review_comment", "rc-1", &payload)
        .await;
    let note = hub.gh.note("rc-1").await;
    assert!(note.contains("by its `on_review`"), "{note}");
    hub.gh.node(hub.run, "deliver", "succeeded", 2).await;
    assert!(hub.work().contains("> @gatehouse name this constant"));
    // The answer is a reply in the comment's thread, not a comment on the pull request.
    let mut replies = Vec::new();
    for _ in 0..500 {
        replies = hub.gh.github.review_replies(REPO, hub.pull);
        if !replies.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let [reply] = replies.as_slice() else {
        panic!("one reply in the thread: {replies:?}");
    };
    assert_eq!(reply.to, id);
    assert!(
        reply.body.starts_with("@Codertocat pushed"),
        "{}",
        reply.body
    );
    let comments = hub.gh.github.comments(REPO, hub.pull);
    assert!(
        comments.iter().all(|c| !c.contains("pushed")),
        "{comments:#?}"
    );
    hub.gh.stop().await;
}

async fn assigning_an_issue_can_open_a_conversation_on_it(backend: Backend) {
    assignments::a_conversation_on_the_issue(backend).await;
}

async fn a_review_on_a_conversations_pull_request_becomes_a_turn(backend: Backend) {
    conversations::a_review_becomes_a_turn_pushed_to_the_same_pull_request(backend).await;
}

async fn assigning_an_issue_to_the_bot_starts_its_sop_and_unassigning_cancels(backend: Backend) {
    assignments::start_and_cancel(backend).await;
}

async fn changes_requested_send_the_run_back_to_the_same_pull_request(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    let comment = NewReviewComment {
        review_id: 7001,
        author: "Codertocat",
        path: "src/lib.rs",
        line: Some(3),
        body: "call it bar",
    };
    hub.gh.github.add_review_comment(REPO, hub.pull, comment);
    let review = hub.review(7001, "Codertocat", "changes_requested", "please rename foo");
    hub.gh
        .deliver_github("pull_request_review", "rv-1", &review)
        .await;
    let note = hub.gh.note("rv-1").await;
    assert!(
        note.contains(&format!("sent run {} back by its `on_review`", hub.run)),
        "{note}"
    );
    hub.gh.node(hub.run, "deliver", "succeeded", 2).await;

    let work = hub.work();
    // One header, naming the review, the pull request and the reviewer; then the details.
    assert!(
        work.contains(&format!(
            "Review of {REPO}#{} by @Codertocat:\n\n",
            hub.pull
        )),
        "{work}"
    );
    assert!(work.contains("> please rename foo"), "{work}");
    assert!(work.contains("- src/lib.rs:3:\n> call it bar"), "{work}");
    assert_eq!(
        hub.gh.github.pulls().len(),
        1,
        "the same pull request, updated"
    );
    hub.gh
        .comments(hub.pull, 1, |c| {
            c.contains("@Codertocat") && c.contains("pushed")
        })
        .await;

    // The same review under another delivery id (a second hook) does nothing more.
    hub.gh
        .deliver_github("pull_request_review", "rv-1-again", &review)
        .await;
    let again = hub.gh.note("rv-1-again").await;
    assert!(again.contains("already"), "{again}");
    // Nor does an approval: it is recorded.
    let approval = hub.review(7002, "Codertocat", "approved", "");
    hub.gh
        .deliver_github("pull_request_review", "rv-2", &approval)
        .await;
    assert!(
        hub.gh
            .note("rv-2")
            .await
            .contains("review approved by @Codertocat")
    );
    hub.gh.node(hub.run, "deliver", "succeeded", 2).await;

    // What happened is on the requirement.
    let shown = hub.requirement_shown().await;
    let events = shown["pull_request_events"].as_array().unwrap();
    let outcomes: Vec<&str> = events
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{shown:#}");
    assert!(outcomes[0].starts_with("sent run"), "{outcomes:?}");
    assert!(outcomes[1].contains("already"), "{outcomes:?}");
    assert_eq!(outcomes[2], "recorded", "{outcomes:?}");
    let head = hub.head();
    assert_eq!(
        shown["pull_requests"][0]["head"],
        head.as_str(),
        "{shown:#}"
    );
    assert_eq!(shown["pull_requests"][0]["checks"], "pending", "{shown:#}");
    // The run's page says what it delivered, as it stands.
    let run = hub.run_shown().await;
    assert_eq!(run["pull_requests"][0]["number"], hub.pull, "{run:#}");
    assert_eq!(run["pull_requests"][0]["head"], head.as_str(), "{run:#}");
    hub.gh.stop().await;
}

async fn a_strangers_review_is_answered_and_starts_nothing(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    // bob is known but has no `run` right in the project; `someone` is not known at all.
    for (delivery, login, why) in [
        ("rv-bob", "bob-gh", "only people with the `run` right"),
        (
            "rv-someone",
            "someone",
            "does not know the GitHub account `someone`",
        ),
    ] {
        let review = hub.review(7100, login, "changes_requested", "do it differently");
        hub.gh
            .deliver_github("pull_request_review", delivery, &review)
            .await;
        let note = hub.gh.note(delivery).await;
        assert!(note.contains("refused"), "{note}");
        hub.gh
            .comments(hub.pull, 1 + usize::from(delivery == "rv-someone"), |c| {
                c.starts_with(&format!("@{login} ")) && c.contains(why)
            })
            .await;
    }
    hub.gh.node(hub.run, "deliver", "succeeded", 1).await;
    assert_eq!(hub.work(), "first pass\n---\n", "nothing was reworked");
    hub.gh.stop().await;
}

async fn failing_checks_send_the_work_back_with_the_log_then_ask_a_person(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    let first = hub.head();
    let log = format!(
        "{}\nthread 'adds' panicked: assertion failed: 2 + 2 == 5\n",
        "noise\n".repeat(4000)
    );
    hub.gh.github.fail_check(REPO, &first, "test", &log);
    hub.gh
        .deliver_github("check_suite", "cs-1", &hub.check_suite(&first, "failure"))
        .await;
    let note = hub.gh.note("cs-1").await;
    assert!(note.contains("on_checks_failed"), "{note}");
    hub.gh.node(hub.run, "deliver", "succeeded", 2).await;
    let work = hub.work();
    assert!(
        work.contains(&format!(
            "Failing checks on {REPO}#{}:\n\ntest (failure) failed on {}, the pull request's head.\n",
            hub.pull,
            &first[..7]
        )),
        "{work}"
    );
    assert!(work.contains("### test (failure)"), "{work}");
    assert!(
        work.contains("assertion failed: 2 + 2 == 5"),
        "the log's end: {work}"
    );
    assert!(work.len() < 40_000, "the log was cut: {} bytes", work.len());
    assert!(
        work.contains("Never skip, delete or weaken tests"),
        "{work}"
    );

    // The rework pushed a new head; it fails too, and `max: 1` is used up: a person decides.
    let second = hub.head();
    assert_ne!(first, second);
    hub.gh
        .github
        .fail_check(REPO, &second, "test", "still failing\n");
    // A late result for the first head is history.
    hub.gh
        .deliver_github(
            "workflow_run",
            "wr-old",
            &hub.workflow_run(&first, "failure"),
        )
        .await;
    let note = hub.gh.note("wr-old").await;
    assert!(
        note.contains("not the head Gatehouse pushed last"),
        "{note}"
    );
    hub.gh
        .deliver_github("check_suite", "cs-2", &hub.check_suite(&second, "failure"))
        .await;
    // The gate opens as the deliver node's next attempt: a decision on an earlier opening
    // is stale.
    hub.gh.node(hub.run, "deliver", "waiting_approval", 3).await;
    // The gate says what came back and what deciding does, in the API and on GitHub.
    let gates = hub.get("/gates").await;
    let feedback = gates[0]["feedback"].as_str().unwrap_or_default().to_owned();
    assert!(
        feedback.starts_with(&format!("Failing checks on {REPO}#{} came back", hub.pull)),
        "{gates:#}"
    );
    assert!(
        feedback.ends_with(&format!(
            "for it: test (failure) failed on {}, the pull request's head.",
            &second[..7]
        )),
        "the gate names what failed: {feedback}"
    );
    hub.gh
        .comments(1, 1, |c| {
            c.contains("Approve keeps the pull request as it is")
        })
        .await;
    hub.gh
        .decide(hub.run, "deliver", 3, GateDecisionKind::Approve, None)
        .await;
    hub.gh.wait_run(hub.run, "succeeded").await;
    hub.gh.stop().await;
}

async fn checks_that_fail_on_the_base_too_are_reported_not_retried(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    let head = hub.head();
    let base = hub.base();
    hub.gh.github.fail_check(REPO, &head, "lint", "bad style\n");
    hub.gh.github.fail_check(REPO, &base, "lint", "bad style\n");
    hub.gh
        .deliver_github("check_suite", "cs-base", &hub.check_suite(&head, "failure"))
        .await;
    let note = hub.gh.note("cs-base").await;
    assert!(
        note.contains("reported, not retried: lint fail on the base branch too"),
        "{note}"
    );
    hub.gh
        .comments(hub.pull, 1, |c| {
            c.contains("fail on this pull request's base branch")
        })
        .await;
    hub.gh.node(hub.run, "deliver", "succeeded", 1).await;
    hub.gh.stop().await;
}

async fn feedback_while_the_run_works_waits_for_it(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    hub.hold_rework();
    let first = hub.review(7201, "Codertocat", "changes_requested", "first round");
    hub.gh
        .deliver_github("pull_request_review", "rv-a", &first)
        .await;
    assert!(hub.gh.note("rv-a").await.contains("sent run"));
    hub.gh.node(hub.run, "implement", "running", 2).await;
    let second = hub.review(7202, "Codertocat", "changes_requested", "second round");
    hub.gh
        .deliver_github("pull_request_review", "rv-b", &second)
        .await;
    let note = hub.gh.note("rv-b").await;
    assert!(note.contains("queued for run"), "{note}");
    hub.release_rework();
    // One after the other: each rework starts from `implement`'s inputs, so the branch
    // holds the second; each was answered on the pull request.
    hub.gh.node(hub.run, "deliver", "succeeded", 3).await;
    assert!(hub.work().contains("> second round"), "{}", hub.work());
    let answers = hub.gh.comments(hub.pull, 2, |c| c.contains("pushed")).await;
    assert!(answers[0].contains("pushed"), "{answers:#?}");
    assert_eq!(hub.gh.github.pulls().len(), 1);
    hub.gh.stop().await;
}

async fn a_push_that_conflicts_with_the_pull_request_sends_the_work_back(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    // A push to main that still merges changes nothing.
    hub.gh
        .github
        .set_mergeable(REPO, hub.pull, Some(true), "clean");
    hub.gh
        .deliver_github(
            "push",
            "push-1",
            &hub.push("main", "1111111111111111111111111111111111111111"),
        )
        .await;
    assert!(hub.gh.note("push-1").await.contains("still merge"));
    // One that conflicts sends the work back, with what to do.
    hub.gh
        .github
        .set_mergeable(REPO, hub.pull, Some(false), "dirty");
    hub.gh
        .deliver_github(
            "push",
            "push-2",
            &hub.push("main", "2222222222222222222222222222222222222222"),
        )
        .await;
    let note = hub.gh.note("push-2").await;
    assert!(note.contains("on_conflict"), "{note}");
    hub.gh.node(hub.run, "deliver", "succeeded", 2).await;
    let work = hub.work();
    assert!(
        work.contains(&format!("Conflict on {REPO}#{}:\n\n", hub.pull)),
        "{work}"
    );
    assert!(work.contains("`main` moved to 2222222"), "{work}");
    assert!(
        work.contains("`git fetch origin main && git rebase origin/main`"),
        "{work}"
    );
    // A push to another branch is not about the pull request.
    hub.gh
        .deliver_github(
            "push",
            "push-3",
            &hub.push("feature", "3333333333333333333333333333333333333333"),
        )
        .await;
    assert!(hub.gh.note("push-3").await.contains("no open pull request"));
    hub.gh.stop().await;
}

async fn events_about_other_pull_requests_are_recorded_as_ignored(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    let mut review = hub.review(7301, "Codertocat", "changes_requested", "not yours");
    review["pull_request"]["number"] = json!(999);
    hub.gh
        .deliver_github("pull_request_review", "rv-other", &review)
        .await;
    let note = hub.gh.note("rv-other").await;
    assert!(
        note.contains("is not a pull request Gatehouse opened"),
        "{note}"
    );
    assert_eq!(hub.gh.delivery_status("rv-other").await, "ignored");
    // A payload missing what Gatehouse reads is recorded, not a panic.
    let mut broken = hub.review(7302, "Codertocat", "changes_requested", "x");
    broken["review"].as_object_mut().unwrap().remove("user");
    hub.gh
        .deliver_github("pull_request_review", "rv-broken", &broken)
        .await;
    assert!(
        hub.gh
            .note("rv-broken")
            .await
            .contains("payload not understood")
    );
    // Feedback on a closed requirement starts nothing.
    let mut closed = fixture("issues.edited");
    closed["action"] = json!("closed");
    closed["issue"]["state"] = json!("closed");
    closed["issue"]["updated_at"] = json!("2030-01-01T00:00:00Z");
    hub.gh.deliver_github("issues", "close", &closed).await;
    hub.gh.note("close").await;
    let review = hub.review(7303, "Codertocat", "changes_requested", "too late");
    hub.gh
        .deliver_github("pull_request_review", "rv-late", &review)
        .await;
    let note = hub.gh.note("rv-late").await;
    assert!(note.contains("is closed"), "{note}");
    hub.gh.node(hub.run, "deliver", "succeeded", 1).await;
    hub.gh.stop().await;
}

async fn a_crash_between_the_review_and_the_push_pushes_and_answers_once(backend: Backend) {
    let hub = Hub::delivered(backend).await;
    hub.hold_rework();
    let review = hub.review(7401, "Codertocat", "changes_requested", "once only");
    hub.gh
        .deliver_github("pull_request_review", "rv-crash", &review)
        .await;
    hub.gh.node(hub.run, "implement", "running", 2).await;
    let hub = hub.crash_and_restart().await;
    // GitHub redelivers the review too, under the same delivery id: nothing more.
    hub.gh
        .deliver_github("pull_request_review", "rv-crash", &review)
        .await;
    hub.release_rework();
    hub.gh.wait_run(hub.run, "succeeded").await;
    assert!(hub.work().contains("> once only"), "{}", hub.work());
    // The deliver node ran once after the review: one push.
    hub.gh.node(hub.run, "deliver", "succeeded", 2).await;
    assert_eq!(hub.gh.github.pulls().len(), 1);
    let answers: Vec<String> = hub
        .gh
        .github
        .comments(REPO, hub.pull)
        .into_iter()
        .filter(|c| c.contains("pushed"))
        .collect();
    assert_eq!(answers.len(), 1, "{answers:#?}");
    hub.gh.stop().await;
}
