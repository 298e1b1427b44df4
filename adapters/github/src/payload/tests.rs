//! Every saved real payload parses, with the values Gatehouse reads.

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/github/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn parse(event: &str, name: &str) -> Webhook {
    Webhook::parse(event, &fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const HEAD: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const BASE: &str = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";
const HELLO: &str = "Codertocat/Hello-World";

#[test]
fn the_real_payloads_parse() {
    let Webhook::Issues(labeled) = parse("issues", "issues.labeled") else {
        panic!("issues");
    };
    assert_eq!(labeled.action, "labeled");
    assert_eq!(labeled.label.unwrap().name, "bug");
    assert_eq!(labeled.repository.full_name, HELLO);
    assert_eq!(labeled.issue.number, 1);
    assert!(labeled.issue.pull_request.is_none());
    assert_eq!(labeled.assignee, None);

    let Webhook::IssueComment(comment) = parse("issue_comment", "issue_comment.created") else {
        panic!("issue_comment");
    };
    assert_eq!(comment.action, "created");
    assert!(comment.comment.body.starts_with("You are totally right"));

    let Webhook::PullRequest(pr) = parse("pull_request", "pull_request.closed.unmerged") else {
        panic!("pull_request");
    };
    assert_eq!(pr.action, "closed");
    assert!(!pr.pull_request.merged);
    assert!(!pr.pull_request.from_fork());

    for name in ["issues.opened", "issues.edited", "issues.unlabeled"] {
        assert!(matches!(parse("issues", name), Webhook::Issues(_)));
    }
    for name in ["pull_request.opened", "pull_request.synchronize"] {
        assert!(matches!(
            parse("pull_request", name),
            Webhook::PullRequest(_)
        ));
    }
    assert_eq!(parse("ping", "ping"), Webhook::Ping);
    assert_eq!(
        parse("installation", "installation.created"),
        Webhook::Other("installation".into())
    );
}

#[test]
fn assignments_name_the_assignee() {
    for (name, action) in [
        ("issues.assigned", "assigned"),
        ("issues.unassigned", "unassigned"),
    ] {
        let Webhook::Issues(e) = parse("issues", name) else {
            panic!("{name}");
        };
        assert_eq!(e.action, action);
        assert_eq!(e.issue.number, 1);
        assert_eq!(e.assignee.map(|a| a.login).as_deref(), Some("Codertocat"));
    }
}

#[test]
fn pull_requests_carry_their_commits_and_mergeability() {
    let hook = parse("pull_request", "pull_request.reopened");
    let Webhook::PullRequest(e) = &hook else {
        panic!("pull_request");
    };
    assert_eq!(e.action, "reopened");
    assert_eq!(e.pull_request.state, "open");
    assert_eq!(e.pull_request.head.name, "changes");
    assert_eq!(e.pull_request.head.sha, HEAD);
    assert_eq!(e.pull_request.base.name, "master");
    assert_eq!(e.pull_request.base.sha, BASE);
    assert_eq!(e.pull_request.mergeable, None);
    assert_eq!(e.pull_request.mergeable_state.as_deref(), Some("unknown"));
    assert_eq!(e.pull_request.merge_commit_sha, None);
    assert_eq!(hook.subject(), Some((HELLO, 2)));
    assert_eq!(hook.pull_numbers(), vec![2]);
}

#[test]
fn reviews_parse() {
    let hook = parse("pull_request_review", "pull_request_review.submitted");
    let Webhook::PullRequestReview(e) = &hook else {
        panic!("pull_request_review");
    };
    assert_eq!(e.action, "submitted");
    assert_eq!(e.review.id, 237_895_671);
    assert_eq!(e.review.body, None);
    assert_eq!(e.review.state, "commented");
    assert!(!e.review.requests_changes() && !e.review.approves());
    assert_eq!(e.review.user.login, "Codertocat");
    assert_eq!(
        e.review.html_url,
        "https://github.com/Codertocat/Hello-World/pull/2#pullrequestreview-237895671"
    );
    assert_eq!(
        e.review.submitted_at.as_deref(),
        Some("2019-05-15T15:20:38Z")
    );
    assert_eq!(e.review.commit_id.as_deref(), Some(HEAD));
    assert_eq!(e.pull_request.head.sha, HEAD);
    assert_eq!(e.pull_request.base.sha, BASE);
    assert_eq!(e.pull_request.mergeable, None, "reviews leave it out");
    assert_eq!(
        e.pull_request.merge_commit_sha.as_deref(),
        Some("c4295bd74fb0f4fda03689c3df3f2803b658fd85")
    );
    assert_eq!(e.sender.login, "Codertocat");
    assert_eq!(hook.subject(), Some((HELLO, 2)));
    assert_eq!(hook.repository(), Some(HELLO));

    let Webhook::PullRequestReview(dismissed) =
        parse("pull_request_review", "pull_request_review.dismissed")
    else {
        panic!("dismissed");
    };
    assert_eq!(dismissed.action, "dismissed");
    assert_eq!(dismissed.review.state, "dismissed");
    assert_eq!(dismissed.pull_request.number, 2);
}

#[test]
fn the_review_state_is_read_in_either_case() {
    let mut body: serde_json::Value =
        serde_json::from_slice(&fixture("pull_request_review.submitted")).unwrap();
    for state in ["changes_requested", "CHANGES_REQUESTED"] {
        body["review"]["state"] = state.into();
        let Webhook::PullRequestReview(e) =
            Webhook::parse("pull_request_review", body.to_string().as_bytes()).unwrap()
        else {
            panic!("pull_request_review");
        };
        assert!(e.review.requests_changes(), "{state}");
    }
}

#[test]
fn review_comments_parse() {
    let hook = parse(
        "pull_request_review_comment",
        "pull_request_review_comment.created",
    );
    let Webhook::PullRequestReviewComment(e) = &hook else {
        panic!("pull_request_review_comment");
    };
    assert_eq!(e.action, "created");
    let c = &e.comment;
    assert_eq!(c.id, 284_312_630);
    assert_eq!(c.body, "Maybe you should use more emoji on this line.");
    assert_eq!(c.path, "README.md");
    assert_eq!(c.line, Some(265));
    assert_eq!(c.original_line, Some(265));
    assert_eq!(c.diff_hunk, "@@ -1 +1 @@\n-# Hello-World");
    assert_eq!(c.user.login, "Codertocat");
    assert_eq!(
        c.html_url,
        "https://github.com/Codertocat/Hello-World/pull/2#discussion_r284312630"
    );
    assert_eq!(c.updated_at, "2019-05-15T15:20:38Z");
    assert_eq!(c.in_reply_to_id, None);
    assert_eq!(c.pull_request_review_id, Some(237_895_671));
    assert_eq!(e.changes, None);
    assert_eq!(hook.subject(), Some((HELLO, 2)));

    let Webhook::PullRequestReviewComment(edited) = parse(
        "pull_request_review_comment",
        "pull_request_review_comment.edited",
    ) else {
        panic!("edited");
    };
    assert_eq!(edited.action, "edited");
    let before = edited.changes.and_then(|c| c.body).map(|b| b.from);
    assert_eq!(before.as_deref(), Some(""));
}

#[test]
fn review_threads_parse() {
    for (name, action) in [
        ("pull_request_review_thread.resolved", "resolved"),
        ("pull_request_review_thread.unresolved", "unresolved"),
    ] {
        let hook = parse("pull_request_review_thread", name);
        let Webhook::PullRequestReviewThread(e) = &hook else {
            panic!("{name}");
        };
        assert_eq!(e.action, action);
        assert_eq!(e.thread.node_id, "PRRT_kwDOFd42Pc4rQOUv");
        let ids: Vec<u64> = e.thread.comments.iter().map(|c| c.id).collect();
        assert_eq!(ids, vec![284_312_630]);
        assert_eq!(
            e.thread.comments[0].node_id,
            "MDI0OlB1bGxSZXF1ZXN0UmV2aWV3Q29tbWVudDI4NDMxMjYzMA=="
        );
        assert_eq!(hook.subject(), Some((HELLO, 2)));
    }
}

#[test]
fn check_suites_name_their_pull_requests() {
    let hook = parse("check_suite", "check_suite.completed");
    let Webhook::CheckSuite(e) = &hook else {
        panic!("check_suite");
    };
    assert_eq!(e.action, "completed");
    let s = &e.check_suite;
    assert_eq!(s.id, 118_578_147);
    assert_eq!(s.head_sha, HEAD);
    assert_eq!(s.head_branch.as_deref(), Some("changes"));
    assert_eq!(s.status.as_deref(), Some("completed"));
    assert_eq!(s.conclusion.as_deref(), Some("success"));
    assert!(!s.failed());
    assert_eq!(
        s.pull_requests,
        vec![CheckPull {
            number: 2,
            head: Tip {
                name: "changes".into(),
                sha: HEAD.into()
            },
            base: Tip {
                name: "master".into(),
                sha: BASE.into()
            },
        }]
    );
    assert_eq!(s.app.as_ref().and_then(|a| a.slug.as_deref()), None);
    assert_eq!(hook.subject(), Some((HELLO, 2)));
    assert_eq!(hook.pull_numbers(), vec![2]);

    let hook = parse("check_suite", "check_suite.completed.1");
    let Webhook::CheckSuite(e) = &hook else {
        panic!("check_suite.1");
    };
    assert!(e.check_suite.pull_requests.is_empty());
    assert_eq!(e.check_suite.head_branch.as_deref(), Some("main"));
    let slug = e.check_suite.app.as_ref().and_then(|a| a.slug.as_deref());
    assert_eq!(slug, Some("github-actions"));
    assert_eq!(hook.subject(), None, "no pull request");
    assert_eq!(hook.repository(), Some(HELLO));
    assert!(hook.pull_numbers().is_empty());
}

#[test]
fn check_runs_parse() {
    let hook = parse("check_run", "check_run.completed");
    let Webhook::CheckRun(e) = &hook else {
        panic!("check_run");
    };
    assert_eq!(e.action, "completed");
    let r = &e.check_run;
    assert_eq!(r.id, 128_620_228);
    assert_eq!(r.name, "Octocoders-linter");
    assert_eq!(r.head_sha, HEAD);
    assert_eq!(r.status, "completed");
    assert_eq!(r.conclusion.as_deref(), Some("success"));
    assert_eq!(
        r.html_url.as_deref(),
        Some("https://github.com/Codertocat/Hello-World/runs/128620228")
    );
    assert_eq!(r.check_suite.as_ref().map(|s| s.id), Some(118_578_147));
    assert_eq!(r.pull_requests.len(), 1);
    let output = r.output.clone().unwrap();
    assert_eq!((output.title, output.summary), (None, None));
    assert_eq!(hook.subject(), Some((HELLO, 2)));
}

#[test]
fn workflow_runs_parse() {
    let hook = parse("workflow_run", "workflow_run.completed.with-pull-requests");
    let Webhook::WorkflowRun(e) = &hook else {
        panic!("workflow_run");
    };
    assert_eq!(e.action, "completed");
    let w = &e.workflow_run;
    assert_eq!(w.id, 289_782_451);
    assert_eq!(w.name.as_deref(), Some(""));
    assert_eq!(w.head_sha, "3484a3fb816e0859fd6e1cea078d76385ff50625");
    assert_eq!(w.head_branch.as_deref(), Some("master"));
    assert_eq!(w.status.as_deref(), Some("completed"));
    assert_eq!(w.conclusion.as_deref(), Some("success"));
    assert!(!w.failed());
    assert_eq!(
        w.html_url,
        "https://github.com/octo-org/octo-repo/actions/runs/289782451"
    );
    assert_eq!(hook.pull_numbers(), vec![2]);
    assert_eq!(hook.subject(), Some(("octo-org/octo-repo", 2)));

    let hook = parse("workflow_run", "workflow_run.completed");
    assert!(hook.pull_numbers().is_empty());
    assert_eq!(hook.subject(), None);
}

#[test]
fn pushes_parse() {
    let hook = parse("push", "push.with-new-branch");
    let Webhook::Push(e) = &hook else {
        panic!("push");
    };
    assert_eq!(e.git_ref, "refs/heads/master");
    assert_eq!(e.branch(), Some("master"));
    assert_eq!(e.before, "0".repeat(40));
    assert_eq!(e.after, "6113728f27ae82c7b1a177c8d03f9e96e0adf246");
    assert!(e.created && !e.deleted && !e.forced);
    assert_eq!(
        e.sender.as_ref().map(|s| s.login.as_str()),
        Some("Codertocat")
    );
    assert_eq!(hook.repository(), Some(HELLO));
    assert_eq!(hook.subject(), None);
    assert!(hook.pull_numbers().is_empty());

    let Webhook::Push(tag) = parse("push", "push") else {
        panic!("push");
    };
    assert_eq!(tag.branch(), None);
    assert!(tag.deleted && !tag.created);
    assert!(matches!(
        parse("push", "push.with-installation"),
        Webhook::Push(_)
    ));
}

#[test]
fn a_payload_missing_fields_is_an_error_not_a_panic() {
    assert!(Webhook::parse("issues", br#"{"action":"opened"}"#).is_err());
    assert!(Webhook::parse("issue_comment", b"not json").is_err());
    let without = |name: &str, path: &[&str]| {
        let mut body: serde_json::Value = serde_json::from_slice(&fixture(name)).unwrap();
        let (last, parents) = path.split_last().unwrap();
        let mut at = &mut body;
        for key in parents {
            at = &mut at[*key];
        }
        at.as_object_mut().unwrap().remove(*last);
        body.to_string().into_bytes()
    };
    for (event, name, path) in [
        (
            "pull_request_review",
            "pull_request_review.submitted",
            &["review", "state"][..],
        ),
        (
            "pull_request_review",
            "pull_request_review.submitted",
            &["pull_request"],
        ),
        (
            "pull_request_review_comment",
            "pull_request_review_comment.created",
            &["comment", "path"],
        ),
        (
            "pull_request_review_thread",
            "pull_request_review_thread.resolved",
            &["thread"],
        ),
        (
            "check_suite",
            "check_suite.completed",
            &["check_suite", "head_sha"],
        ),
        ("check_run", "check_run.completed", &["check_run", "name"]),
        (
            "workflow_run",
            "workflow_run.completed",
            &["workflow_run", "head_sha"],
        ),
        ("push", "push.with-new-branch", &["after"]),
        (
            "pull_request",
            "pull_request.reopened",
            &["pull_request", "head", "ref"],
        ),
    ] {
        assert!(
            Webhook::parse(event, &without(name, path)).is_err(),
            "{name} without {path:?}"
        );
        assert!(
            Webhook::parse(event, &fixture(name)).is_ok(),
            "{name} as saved"
        );
    }
}
