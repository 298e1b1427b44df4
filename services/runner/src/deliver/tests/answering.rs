//! Deliveries answering feedback on the pull request an earlier delivery opened: pushed
//! to the same branch, the one pull request updated and answered once however often the
//! answer is retried; nothing pushed, and said so, when nothing changed.

use gatehouse_events::{DeliverMode, Feedback, FeedbackKind, PullRef};

use super::super::answer::Answered;
use super::super::scene::{BRANCH, Scene, auto, git};
use super::super::{By, DeliveredTo, Deliveries};

fn review(key: &str, number: u64) -> Feedback {
    Feedback {
        kind: FeedbackKind::Review,
        key: key.to_owned(),
        text: "FIX.md: say what was fixed".to_owned(),
        pull: PullRef {
            repo: "acme/api".to_owned(),
            number,
        },
        from: "alice".to_owned(),
        thread: None,
    }
}

/// A conversation's workspace on `acme/api`, delivered once: its pull request's number
/// and the head pushed.
async fn delivered_once() -> (Scene, u64, String) {
    let mut scene = Scene::new().await;
    scene.by = By::Conversation(uuid::Uuid::nil());
    scene.remote("acme/api", 1);
    scene.prepare(&[auto("acme/api")]).await.unwrap();
    std::fs::write(scene.workspace().join("FIX.md"), "fixed\n").unwrap();
    let (delivered, _) = scene.deliver(DeliverMode::Pr, None).await;
    let number = match delivered.unwrap().as_slice() {
        [done] => match done.to {
            DeliveredTo::Pull { number, .. } => number,
            ref other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let head = head(&scene);
    (scene, number, head)
}

fn head(scene: &Scene) -> String {
    git(&scene.bare("acme/api"), &["rev-parse", BRANCH])
        .trim()
        .to_owned()
}

#[tokio::test]
async fn feedback_is_pushed_to_the_same_branch_and_answered_once_even_when_retried() {
    let (scene, number, before) = delivered_once().await;
    std::fs::write(scene.workspace().join("FIX.md"), "fixed the checkout\n").unwrap();
    let feedback = review("review:100", number);
    let by = "conversation:c:turn:3";

    let (answered, log) = scene
        .answer(&feedback, by, "Said what was fixed.", Some(&before))
        .await;
    let Answered { deliveries, change } = answered.unwrap();
    let after = head(&scene);
    assert_ne!(after, before, "pushed");
    assert!(log.iter().any(|l| l.starts_with("$ git push")), "{log:?}");
    assert_eq!(
        git(
            &scene.bare("acme/api"),
            &["rev-parse", &format!("{after}^")]
        )
        .trim(),
        before,
        "on top of the head pushed before"
    );
    assert_eq!(
        git(
            &scene.bare("acme/api"),
            &["show", &format!("{BRANCH}:FIX.md")]
        ),
        "fixed the checkout\n"
    );
    let Deliveries::Done(done) = deliveries else {
        panic!("{deliveries:?}");
    };
    assert!(
        matches!(&done[..], [d] if matches!(&d.to, DeliveredTo::Pull { number: n, opened: false, head, .. } if *n == number && *head == after)),
        "{done:?}"
    );
    assert_eq!(change.before.as_deref(), Some(before.as_str()));
    assert_eq!(change.after.as_deref(), Some(after.as_str()));
    let pulls = scene.github.pulls();
    assert_eq!(pulls.len(), 1, "never a second pull request: {pulls:?}");
    let comments = scene.github.comments("acme/api", number);
    let [comment] = comments.as_slice() else {
        panic!("{comments:?}");
    };
    let short = &after[..7];
    assert!(
        comment.starts_with(&format!(
            "@alice pushed {short}:\n- {short} Address review by @\u{200B}alice on #{number}\n\n> Said what was fixed.\n\n<!-- gatehouse:answer:review:100:{by} -->"
        )),
        "{comment}"
    );

    // The attempt retried (its runner died after the push, before the head was
    // recorded): the same commit goes out again, and the answer is not posted twice.
    let (again, _) = scene
        .answer(&feedback, by, "Said what was fixed.", Some(&before))
        .await;
    assert!(again.unwrap().change.pushed);
    assert_eq!(head(&scene), after);
    assert_eq!(scene.github.comments("acme/api", number).len(), 1);
    assert_eq!(scene.github.pulls().len(), 1);
}

#[tokio::test]
async fn feedback_that_changed_nothing_pushes_nothing_and_says_so() {
    let (scene, number, before) = delivered_once().await;
    let feedback = review("review:200", number);

    let (answered, log) = scene
        .answer(
            &feedback,
            "conversation:c:turn:4",
            "It is right as it is.",
            Some(&before),
        )
        .await;
    let Answered { deliveries, change } = answered.unwrap();
    assert!(
        matches!(&deliveries, Deliveries::Unchanged(reason) if reason.contains("no changes against") && reason.contains("its head, pushed before")),
        "{deliveries:?}"
    );
    assert!(!change.pushed);
    assert!(!log.iter().any(|l| l.starts_with("$ git push")), "{log:?}");
    assert_eq!(head(&scene), before);
    assert_eq!(
        scene.github.comments("acme/api", number),
        [
            "@alice nothing changed: no new commit was pushed to this pull request.\n\n> It is right as it is.\n\n<!-- gatehouse:answer:review:200:conversation:c:turn:4 -->"
        ]
    );

    // With no head recorded, the clone's view of the branch (as the last push left it)
    // tells the same.
    let (answered, _) = scene
        .answer(
            &review("review:201", number),
            "conversation:c:turn:5",
            "",
            None,
        )
        .await;
    assert!(!answered.unwrap().change.pushed);
    assert_eq!(head(&scene), before);
    assert_eq!(scene.github.comments("acme/api", number).len(), 2);
}
