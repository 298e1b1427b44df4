//! A delivery that answers feedback on a pull request (a conversation's feedback turn, or
//! a `deliver` node of a run sent back by it): the workspace delivered as any delivery is,
//! to the same work branch and the same pull request, except that the answered pull
//! request's repository is not pushed when its commit is the head pushed before; then a
//! comment on the pull request saying what changed (`@alice pushed 1a2b3c4:` with the
//! commits since the head before, and the agent's reply) or that nothing did.
//!
//! The comment is posted once: its marker is keyed by the feedback and by what answers it
//! (the turn, or the run's node), so an attempt retried after the runner died finds the
//! comment rather than posting another. Both kinds of work call [`Deliverer::answer`].

use gatehouse_events::Feedback;
use gatehouse_github::{GithubError, comment_marker, quiet_mentions};

use super::branch::Repo;
use super::trees::short;
use super::{Deliverer, Deliveries, Delivery};

/// Commits a comment lists; more are counted.
const MAX_COMMITS: usize = 20;

/// Characters of the agent's reply a comment quotes.
const MAX_REPLY_CHARS: usize = 4000;

/// What answers the feedback, and what it said.
pub(crate) struct Answer<'a> {
    /// Names the work answering (`conversation:<id>:turn:<seq>`, `run:<id>:node:<name>`):
    /// with the feedback's key, the comment's marker.
    pub by: String,
    /// The agent's reply, quoted (bounded) in the comment.
    pub reply: &'a str,
    /// The head Gatehouse recorded pushing to the pull request before; `None` when none
    /// was recorded (then the clone's view of the remote branch is used).
    pub recorded_head: Option<&'a str>,
}

/// What the answered pull request's repository came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Change {
    /// Its work branch's head before the delivery, when known.
    pub before: Option<String>,
    /// The commit delivered; the same as `before` when nothing changed.
    pub after: Option<String>,
    /// Whether `after` was pushed.
    pub pushed: bool,
    /// `<short sha> <subject>` of the commits pushed, newest first (bounded).
    pub commits: Vec<String>,
    /// Commits pushed beyond those listed.
    pub more: usize,
    /// When the change only took lines out of tests (and touched nothing else): the test
    /// files and how many lines left them. Flagged on the answer, for failing checks most
    /// of all: making checks pass by weakening them is not a fix.
    pub tests_only_shrunk: Option<TestsShrunk>,
}

/// A change that only removed lines from tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TestsShrunk {
    /// The test files it changed.
    pub files: Vec<String>,
    /// Lines removed from them, less lines added.
    pub removed: u64,
}

impl TestsShrunk {
    /// Whether `git diff --numstat` output describes a change that only took lines out of
    /// test files: every changed file is a test (by its path), and they lost more lines
    /// than they gained. A binary file (`-` counts) is never a test here.
    pub(crate) fn of_numstat(numstat: &str) -> Option<Self> {
        let mut files = Vec::new();
        let (mut added, mut removed) = (0u64, 0u64);
        for line in numstat.lines().filter(|l| !l.trim().is_empty()) {
            let mut fields = line.splitn(3, '\t');
            let (Some(a), Some(r), Some(path)) = (fields.next(), fields.next(), fields.next())
            else {
                return None;
            };
            let (Ok(a), Ok(r)) = (a.parse::<u64>(), r.parse::<u64>()) else {
                return None;
            };
            if !is_test_path(path) {
                return None;
            }
            added += a;
            removed += r;
            files.push(path.to_owned());
        }
        (removed > added).then(|| Self {
            files,
            removed: removed - added,
        })
    }
}

/// Both sides of a rename as `git diff --numstat -M` writes it.
fn renamed(path: &str) -> Option<(String, String)> {
    match (path.find('{'), path.find('}')) {
        (Some(open), Some(close)) if open < close => {
            let (prefix, suffix) = (&path[..open], &path[close + 1..]);
            let (old, new) = path[open + 1..close].split_once(" => ")?;
            Some((
                format!("{prefix}{old}{suffix}"),
                format!("{prefix}{new}{suffix}"),
            ))
        }
        _ => path
            .split_once(" => ")
            .map(|(old, new)| (old.to_owned(), new.to_owned())),
    }
}

/// Whether `path` names a test by the conventions of common ecosystems: a `test`,
/// `tests`, `spec`, `__tests__` or `testdata` folder, or a file named `test_*`, `*_test.*`,
/// `*_tests.*`, `*.test.*`, `*.spec.*` or `*Test.*` / `*Tests.*`.
fn is_test_path(path: &str) -> bool {
    // A rename shows as `old => new` or `dir/{old => new}/file`: judge both sides.
    if let Some((old, new)) = renamed(path) {
        return is_test_path(&old) && is_test_path(&new);
    }
    let mut parts = path.split('/');
    let file = parts.next_back().unwrap_or_default();
    let folder = |p: &str| {
        matches!(
            p,
            "test" | "tests" | "spec" | "specs" | "__tests__" | "testdata"
        )
    };
    if path.split('/').rev().skip(1).any(folder) {
        return true;
    }
    let stem = file.split('.').next().unwrap_or_default();
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || file.contains(".test.")
        || file.contains(".spec.")
}

/// A delivery that answered feedback: what was delivered, and the answered pull
/// request's change.
#[derive(Debug)]
pub(crate) struct Answered {
    pub deliveries: Deliveries,
    pub change: Change,
}

impl Deliverer {
    /// Delivers `delivery` (whose spec names the feedback it answers) and answers on the
    /// feedback's pull request. `Err`: why the delivery or the answer failed (what was
    /// pushed before the answer failed stays pushed, and is said).
    pub(crate) async fn answer(
        &self,
        delivery: &Delivery<'_>,
        answer: &Answer<'_>,
        log: &mut Vec<String>,
    ) -> Result<Answered, String> {
        let Some(feedback) = delivery.spec.answer.as_ref() else {
            return Err("the delivery names no feedback to answer".to_owned());
        };
        let Some(github) = &self.github else {
            return Err(format!(
                "answering on {} needs [github]; this runner has none",
                feedback.pull
            ));
        };
        let mut change = Change {
            before: answer
                .recorded_head
                .filter(|h| !h.is_empty())
                .map(str::to_owned),
            ..Change::default()
        };
        let deliveries = self
            .deliver_watching(delivery, Some(&mut change), log)
            .await?;
        let body = delivery
            .secrets
            .mask(&comment(feedback, &change, answer.reply));
        let marker = comment_marker(&format!("answer:{}:{}", feedback.key, answer.by));
        let pull = &feedback.pull;
        let answered = match feedback.thread {
            Some(comment) => {
                let reply = github
                    .reply_to_review_comment_once(&pull.repo, pull.number, comment, &marker, &body)
                    .await;
                match reply {
                    // The comment is gone (deleted, or its thread resolved away): answer
                    // on the pull request instead.
                    Err(GithubError::Api { status, .. })
                        if status == http::StatusCode::NOT_FOUND =>
                    {
                        github
                            .create_comment_once(&pull.repo, pull.number, &marker, &body)
                            .await
                    }
                    other => other,
                }
            }
            None => {
                github
                    .create_comment_once(&pull.repo, pull.number, &marker, &body)
                    .await
            }
        };
        answered.map_err(|e| {
            let pushed = if change.pushed {
                " (the work is pushed)"
            } else {
                ""
            };
            format!("answering on {pull}: {e}{pushed}")
        })?;
        Ok(Answered { deliveries, change })
    }
}

impl Repo<'_> {
    /// Fills `change` with the commits pushed since its head before (only the head's own
    /// when that is unknown, or not in the clone).
    pub(super) async fn list_commits(&mut self, change: &mut Change) {
        let Some(after) = change.after.clone() else {
            return;
        };
        let between = match change.before.clone() {
            Some(before) => self.commits_between(&before, &after, MAX_COMMITS).await,
            None => None,
        };
        let (commits, more) = match between {
            Some(found) => found,
            None => {
                let one = self
                    .local(&["log", "--no-decorate", "--format=%h %s", "-1", &after])
                    .await
                    .unwrap_or_default();
                (one.lines().map(str::to_owned).collect(), 0)
            }
        };
        change.commits = commits;
        change.more = more;
        if let Some(before) = change.before.clone() {
            let numstat = self
                .local(&["diff", "--numstat", "-M", &before, &after])
                .await
                .unwrap_or_default();
            change.tests_only_shrunk = TestsShrunk::of_numstat(&numstat);
        }
    }
}

/// The comment answering `feedback`: who it answers, what was pushed (or that nothing
/// was), and the agent's reply, quoted and bounded. What the agent wrote (commit subjects,
/// reply) has its `@mentions` quietened: it pages nobody from the bot's account.
pub(crate) fn comment(feedback: &Feedback, change: &Change, reply: &str) -> String {
    let to = if feedback.from.is_empty() {
        String::new()
    } else {
        format!("@{} ", feedback.from)
    };
    let mut text = match (&change.after, change.pushed) {
        (Some(after), true) => {
            let mut text = format!("{to}pushed {}:", short_sha(after));
            for commit in &change.commits {
                text.push_str(&format!("\n- {}", quiet_mentions(commit)));
            }
            if change.more > 0 {
                text.push_str(&format!("\n- … and {} more", change.more));
            }
            text
        }
        _ => format!("{to}nothing changed: no new commit was pushed to this pull request."),
    };
    if let Some(shrunk) = change.tests_only_shrunk.as_ref().filter(|_| change.pushed) {
        text.push_str(&format!(
            "\n\n**Look closely:** this change only takes lines out of tests ({} fewer, in {}). Checks that pass because tests were removed or weakened are not a fix.",
            shrunk.removed,
            shrunk.files.join(", ")
        ));
    }
    let reply = reply.trim();
    if !reply.is_empty() {
        text.push_str("\n\n");
        text.push_str(&quote(&quiet_mentions(&bounded(reply, MAX_REPLY_CHARS))));
    }
    text
}

/// A commit's id as people quote it.
fn short_sha(id: &str) -> &str {
    id.get(..7).unwrap_or_else(|| short(id))
}

/// `text`, cut to `max` characters with a mark saying so.
fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `text` as a Markdown quote.
fn quote(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.is_empty() {
                ">".to_owned()
            } else {
                format!("> {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use gatehouse_events::{FeedbackKind, PullRef};

    use super::*;

    fn review() -> Feedback {
        Feedback {
            kind: FeedbackKind::Review,
            key: "review:1".into(),
            text: "rename it".into(),
            pull: PullRef {
                repo: "acme/api".into(),
                number: 7,
            },
            from: "alice".into(),
            thread: None,
        }
    }

    #[test]
    fn a_pushed_answer_names_the_head_the_commits_and_the_reply() {
        let change = Change {
            before: Some("a".repeat(40)),
            after: Some("1a2b3c4d5e6f".to_owned() + &"0".repeat(28)),
            pushed: true,
            commits: vec![
                "1a2b3c4 Address review by @alice on #7".into(),
                "9f8e7d6 Rename x to count".into(),
            ],
            more: 3,
            tests_only_shrunk: None,
        };
        assert_eq!(
            comment(&review(), &change, "Renamed it.\n\nAlso fixed a typo.\n"),
            "@alice pushed 1a2b3c4:\n- 1a2b3c4 Address review by @\u{200B}alice on #7\n- 9f8e7d6 Rename x to count\n- … and 3 more\n\n> Renamed it.\n>\n> Also fixed a typo."
        );
    }

    #[test]
    fn an_answer_that_pushed_nothing_says_so() {
        let head = "b".repeat(40);
        let change = Change {
            before: Some(head.clone()),
            after: Some(head),
            ..Change::default()
        };
        let mut checks = review();
        checks.kind = FeedbackKind::ChecksFailed;
        checks.from = String::new();
        assert_eq!(
            comment(&checks, &change, "The failure is flaky upstream."),
            "nothing changed: no new commit was pushed to this pull request.\n\n> The failure is flaky upstream."
        );
        assert_eq!(
            comment(&review(), &Change::default(), " "),
            "@alice nothing changed: no new commit was pushed to this pull request."
        );
    }

    #[test]
    fn a_change_that_only_shrinks_tests_is_flagged() {
        let shrunk = TestsShrunk::of_numstat("0\t12\ttests/api.rs\n1\t3\tsrc/lib_test.go\n");
        assert_eq!(
            shrunk,
            Some(TestsShrunk {
                files: vec!["tests/api.rs".into(), "src/lib_test.go".into()],
                removed: 14
            })
        );
        for numstat in [
            // A fix beside the tests.
            "0\t12\ttests/api.rs\n4\t1\tsrc/lib.rs\n",
            // Tests grew.
            "10\t2\tweb/app.test.ts\n",
            // A binary file.
            "-\t-\ttests/fixture.bin\n",
            // Nothing changed.
            "",
        ] {
            assert_eq!(TestsShrunk::of_numstat(numstat), None, "{numstat:?}");
        }
        for path in [
            "spec/models/user_spec.rb",
            "pkg/handler_test.go",
            "test_views.py",
            "src/__tests__/app.js",
            "app/src/test/java/AppTest.java",
            "web/button.spec.tsx",
            "{test => tests}/api.rs",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in [
            "src/lib.rs",
            "contest/main.go",
            "docs/testing.md",
            "{tests => src}/api.rs",
        ] {
            assert!(!is_test_path(path), "{path}");
        }
        let change = Change {
            before: Some("a".repeat(40)),
            after: Some("d".repeat(40)),
            pushed: true,
            tests_only_shrunk: TestsShrunk::of_numstat("0\t5\ttests/api.rs\n"),
            ..Change::default()
        };
        let text = comment(&review(), &change, "");
        assert!(
            text.ends_with("this change only takes lines out of tests (5 fewer, in tests/api.rs). Checks that pass because tests were removed or weakened are not a fix."),
            "{text}"
        );
    }

    #[test]
    fn a_long_reply_is_cut() {
        let change = Change {
            after: Some("c".repeat(40)),
            pushed: true,
            ..Change::default()
        };
        let long = "é".repeat(MAX_REPLY_CHARS + 10);
        let text = comment(&review(), &change, &long);
        let quoted = text.split("\n\n> ").nth(1).expect("the reply");
        assert_eq!(quoted.chars().count(), MAX_REPLY_CHARS + 1);
        assert!(quoted.ends_with('…'));
    }
}
