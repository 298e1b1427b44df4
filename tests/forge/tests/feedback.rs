//! The fake's pull requests, checks and review threads, as Gatehouse's own client sees them.

use gatehouse_fake_forge::Forge;
use gatehouse_fake_forge::git::{commit_all, git};
use gatehouse_fake_forge::github::{CheckRun, NewReviewComment};
use gatehouse_github::{CheckLimits, GithubClient, comment_marker};
use secrecy::SecretString;

const REPO: &str = "acme/api";

fn client(forge: &Forge) -> GithubClient {
    GithubClient::new(&forge.github.url, SecretString::from("t0ken")).unwrap()
}

/// A forge with `acme/api`, a branch `work` one commit ahead of `main`, and a pull request
/// from it; returns the forge, the pull request's number and `work`'s commit.
async fn scene() -> (Forge, u64, String) {
    let forge = Forge::start().await;
    let bare = forge.remote(REPO, 1);
    let other = forge.someone_else(REPO);
    git(&other, &["checkout", "--quiet", "-b", "work"]);
    std::fs::write(other.join("CHANGED.md"), "changed\n").unwrap();
    commit_all(&other, "work");
    git(&other, &["push", "--quiet", "origin", "work"]);
    let number = client(&forge)
        .open_or_update_pull(REPO, "work", "main", "Work", "body")
        .await
        .unwrap();
    let head = git(&bare, &["rev-parse", "refs/heads/work"])
        .trim()
        .to_owned();
    (forge, number, head)
}

#[tokio::test]
async fn a_pull_shows_its_ends_commits_and_mergeability() {
    let (forge, number, head) = scene().await;
    let github = client(&forge);
    let fresh = github.pull(REPO, number).await.unwrap();
    assert_eq!(
        (fresh.head.name.as_str(), fresh.head.sha.as_str()),
        ("work", "")
    );
    assert_eq!(fresh.mergeable, None);
    assert_eq!(fresh.mergeable_state.as_deref(), Some("unknown"));

    let synced = forge.github.sync_pull_head(REPO, number, &forge.bare(REPO));
    assert_eq!(synced, head);
    let main = git(&forge.bare(REPO), &["rev-parse", "refs/heads/main"]);
    forge
        .github
        .set_mergeable(REPO, number, Some(false), "dirty");
    let pull = github.pull(REPO, number).await.unwrap();
    assert_eq!(pull.head.sha, head);
    assert_eq!(pull.base.sha, main.trim());
    assert_eq!(pull.mergeable, Some(false));
    assert_eq!(pull.mergeable_state.as_deref(), Some("dirty"));

    forge.github.set_pull_head(REPO, number, "abc123");
    assert_eq!(github.pull(REPO, number).await.unwrap().head.sha, "abc123");

    // Following git, a push shows without a verb.
    forge.github.follow_git(&forge.path("git"));
    let other = forge.path(&format!("others/{REPO}"));
    std::fs::write(other.join("MORE.md"), "more\n").unwrap();
    commit_all(&other, "more");
    git(&other, &["push", "--quiet", "origin", "work"]);
    let pushed = git(&other, &["rev-parse", "HEAD"]).trim().to_owned();
    assert_eq!(github.pull(REPO, number).await.unwrap().head.sha, pushed);
    assert!(
        forge
            .github
            .calls()
            .contains(&format!("GET /repos/{REPO}/pulls/{number}"))
    );

    forge.github.merge_pull(REPO, number, "m3rge");
    let merged = github.pull(REPO, number).await.unwrap();
    assert!(merged.merged && merged.state == "closed");
    assert_eq!(merged.merge_commit_sha.as_deref(), Some("m3rge"));
}

#[tokio::test]
async fn failed_checks_come_with_their_logs_through_a_redirect() {
    let (forge, _, head) = scene().await;
    let passed = forge.github.pass_check(REPO, &head, "lint");
    let failed = forge
        .github
        .fail_check(REPO, &head, "test", &"noise\n".repeat(5000).to_string());
    let expired = forge.github.fail_check(REPO, &head, "e2e", "gone");
    forge.github.expire_log(expired);
    let external = forge.github.add_check_run(
        REPO,
        &head,
        CheckRun {
            name: "ci/external".into(),
            conclusion: Some("timed_out".into()),
            app: "circleci".into(),
            title: Some("Timed out".into()),
            summary: None,
            log: None,
        },
    );
    forge
        .github
        .fail_check(REPO, "another-sha", "other", "not this");

    let limits = CheckLimits {
        log_tail_bytes: 100,
        ..CheckLimits::default()
    };
    let found = client(&forge)
        .failed_checks(REPO, &head, limits)
        .await
        .unwrap();
    let ids: Vec<u64> = found.iter().map(|f| f.id).collect();
    assert_eq!(ids, vec![failed, expired, external]);
    assert!(!ids.contains(&passed));
    let tail = found[0].log_tail.as_deref().unwrap();
    assert_eq!(tail.len(), 100);
    assert!(tail.ends_with("noise\n"));
    assert_eq!(found[0].title.as_deref(), Some("test failed"));
    assert_eq!(found[1].log_tail, None, "expired");
    assert_eq!(found[2].log_tail, None, "not an Actions job");
    assert_eq!(found[2].title.as_deref(), Some("Timed out"));

    let calls = forge.github.calls();
    let download = format!("GET /_downloads/jobs/{failed}/logs");
    assert!(calls.contains(&download), "{calls:?}");
    assert!(!calls.contains(&format!("GET /repos/{REPO}/actions/jobs/{external}/logs")));
}

#[tokio::test]
async fn review_comments_are_listed_and_answered_once() {
    let (forge, number, _) = scene().await;
    let comment = |body| NewReviewComment {
        review_id: 77,
        author: "ana",
        path: "src/lib.rs",
        line: Some(3),
        body,
    };
    let first = forge
        .github
        .add_review_comment(REPO, number, comment("Rename this"));
    forge
        .github
        .add_review_comment(REPO, number, comment("And this"));
    forge.github.add_review_comment(
        REPO,
        number,
        NewReviewComment {
            review_id: 78,
            ..comment("Another review")
        },
    );
    let github = client(&forge);
    let listed = github.review_comments(REPO, number, 77).await.unwrap();
    let bodies: Vec<&str> = listed.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(bodies, vec!["Rename this", "And this"]);
    assert_eq!(listed[0].id, first);
    assert_eq!(listed[0].path, "src/lib.rs");
    assert_eq!(listed[0].line, Some(3));
    assert_eq!(listed[0].user.login, "ana");

    // The reply is stored and then answered 502: the retry finds it, none is repeated.
    forge.github.fail_replies(1);
    let marker = comment_marker("reply:acme/api#1");
    let id = github
        .reply_to_review_comment_once(REPO, number, first, &marker, "Renamed.")
        .await
        .unwrap();
    let again = github
        .reply_to_review_comment_once(REPO, number, first, &marker, "Renamed.")
        .await
        .unwrap();
    assert_eq!(id, again);
    let replies = forge.github.review_replies(REPO, number);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].id, id);
    assert_eq!(replies[0].to, first);
    assert_eq!(replies[0].body, format!("Renamed.\n\n{marker}"));

    let plain = github
        .reply_to_review_comment(REPO, number, first, "Also done.")
        .await
        .unwrap();
    assert_eq!(forge.github.review_replies(REPO, number)[1].id, plain);
    assert!(
        github
            .reply_to_review_comment(REPO, number, 999_999, "nowhere")
            .await
            .is_err(),
        "no such comment"
    );
}
