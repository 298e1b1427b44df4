//! What a conversation's `deliver` says in its thread: the reply, one line per repository
//! naming its pull request (opened, as a draft or not, or updated) and its link, and the
//! progress message's text from start to end. Pure, so what people read can be asserted.
//!
//! A pull request is "opened" when this delivery opened it or Gatehouse had no record of it
//! for the requirement yet (one a crashed attempt opened is new to the thread), and
//! "updated" when it was Gatehouse's already: an earlier `deliver`, or a run on the same
//! requirement, delivered into it.

use gatehouse_events::PullRef;

use crate::deliver::answer::Change;
use crate::deliver::{Delivered, DeliveredTo};

use super::progress::{self, Ending};

/// The progress message while the workspace is delivered.
pub(super) const DELIVERING: &str = "Delivering…";

/// The reply when no writable repository has changes: an answer, not a failure.
pub(super) const NOTHING: &str = "Nothing to deliver: no repository has changes.";

/// The reply: one line per delivered repository. `known`: the pull requests recorded for
/// the requirement before this delivery, `(owner/name, number)`.
pub(super) fn reply(delivered: &[Delivered], known: &[(String, u64)]) -> String {
    let lines: Vec<String> = delivered.iter().map(|d| line(d, known)).collect();
    lines.join("\n")
}

/// `Opened acme/api#12 (draft): https://github.com/acme/api/pull/12`,
/// `Updated acme/api#12: …`, or for a work branch that is its own base `Pushed main on
/// acme/api`.
fn line(delivered: &Delivered, known: &[(String, u64)]) -> String {
    let repo = &delivered.repo;
    match &delivered.to {
        DeliveredTo::Pull {
            number,
            url,
            draft,
            opened,
            ..
        } => {
            let recorded = known.iter().any(|(r, n)| r == repo && n == number);
            let verb = if *opened || !recorded {
                "Opened"
            } else {
                "Updated"
            };
            let mut text = format!("{verb} {repo}#{number}");
            if *draft {
                text.push_str(" (draft)");
            }
            if !url.is_empty() {
                text.push_str(&format!(": {url}"));
            }
            text
        }
        DeliveredTo::Pushed { branch } => {
            format!("Pushed {branch} on {repo} (the work branch is its base: no pull request)")
        }
        DeliveredTo::Merged { branch, commit } => {
            let short: String = commit.chars().take(12).collect();
            format!("Merged into {branch} on {repo} ({short})")
        }
        DeliveredTo::PushedBranch {
            branch,
            commit,
            url,
        } => {
            let short: String = commit.chars().take(12).collect();
            format!(
                "Pushed branch {branch} at {short} to {url} ({repo}: no forge to open a pull request on; merge it there)"
            )
        }
        DeliveredTo::Request {
            number,
            url,
            opened,
            ..
        } => {
            let verb = if *opened { "Opened" } else { "Updated" };
            let mut text = format!("{verb} {repo}#{number}");
            if !url.is_empty() {
                text.push_str(&format!(": {url}"));
            }
            text
        }
    }
}

/// What a feedback turn's reply ends with: the pull request it answered, updated
/// (`Updated acme/api#7 (pushed 1a2b3c4) and answered there: <url>`) or not (`Nothing
/// changed, so nothing was pushed to acme/api#7; said so there.`), then any other
/// repository delivered with it.
pub(super) fn answered(pull: &PullRef, delivered: &[Delivered], change: &Change) -> String {
    let mut lines = Vec::new();
    let answered = delivered.iter().find_map(|d| match &d.to {
        DeliveredTo::Pull {
            number, url, head, ..
        } if d.repo == pull.repo && change.pushed => Some((number, url, head)),
        _ => None,
    });
    lines.push(match answered {
        Some((number, url, head)) => {
            let short: String = head.chars().take(7).collect();
            let mut text = format!(
                "Updated {}#{number} (pushed {short}) and answered there",
                pull.repo
            );
            if *number != pull.number {
                text.push_str(&format!(
                    " (the work is on #{number}, not on #{})",
                    pull.number
                ));
            }
            if !url.is_empty() {
                text.push_str(&format!(": {url}"));
            }
            text
        }
        None => format!("Nothing changed, so nothing was pushed to {pull}; said so there."),
    });
    for other in delivered.iter().filter(|d| d.repo != pull.repo) {
        lines.push(line(other, &[]));
    }
    lines.join("\n")
}

/// The progress message once the delivery ended.
pub(super) enum Ended<'a> {
    Delivered(&'a [Delivered]),
    Unchanged,
    Failed,
    Stopped,
}

/// `Delivered in 4s · 2 pull requests`, `Nothing to deliver`, `Delivery failed after 3s`,
/// `Stopped after 0s`.
pub(super) fn ended(ended: &Ended<'_>, elapsed_ms: u64) -> String {
    let took = progress::duration(elapsed_ms);
    match ended {
        Ended::Delivered(delivered) => {
            let pulls = delivered
                .iter()
                .filter(|d| matches!(d.to, DeliveredTo::Pull { .. } | DeliveredTo::Request { .. }))
                .count();
            match pulls {
                0 => format!("Delivered in {took}"),
                1 => format!("Delivered in {took} · 1 pull request"),
                n => format!("Delivered in {took} · {n} pull requests"),
            }
        }
        Ended::Unchanged => "Nothing to deliver".to_owned(),
        Ended::Failed => format!("Delivery failed after {took}"),
        Ended::Stopped => progress::ended(Ending::Stopped, elapsed_ms, 0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(repo: &str, number: u64, draft: bool, opened: bool) -> Delivered {
        Delivered {
            repo: repo.into(),
            to: DeliveredTo::Pull {
                number,
                branch: "gatehouse/fix".into(),
                url: format!("https://github.com/{repo}/pull/{number}"),
                draft,
                opened,
                head: "0123456789abcdef0123456789abcdef01234567".into(),
            },
        }
    }

    #[test]
    fn the_reply_names_each_pull_request_opened_or_updated() {
        let delivered = [
            pull("acme/api", 12, true, true),
            pull("acme/web", 3, false, false),
        ];
        let known = [("acme/web".to_owned(), 3)];
        assert_eq!(
            reply(&delivered, &known),
            "Opened acme/api#12 (draft): https://github.com/acme/api/pull/12\nUpdated acme/web#3: https://github.com/acme/web/pull/3"
        );
    }

    #[test]
    fn a_pull_request_found_open_but_never_recorded_was_opened_for_the_thread() {
        // Opened by an attempt that crashed before it was recorded.
        let found = [pull("acme/api", 12, false, false)];
        assert_eq!(
            reply(&found, &[]),
            "Opened acme/api#12: https://github.com/acme/api/pull/12"
        );
        assert_eq!(
            reply(&found, &[("acme/web".into(), 12)]),
            "Opened acme/api#12: https://github.com/acme/api/pull/12",
            "another repository's number"
        );
        let mut bare = pull("acme/api", 12, false, true);
        if let DeliveredTo::Pull { url, .. } = &mut bare.to {
            url.clear();
        }
        assert_eq!(reply(&[bare], &[]), "Opened acme/api#12");
    }

    #[test]
    fn pushes_and_merges_say_where() {
        let pushed = Delivered {
            repo: "acme/api".into(),
            to: DeliveredTo::Pushed {
                branch: "main".into(),
            },
        };
        let merged = Delivered {
            repo: "acme/web".into(),
            to: DeliveredTo::Merged {
                branch: "main".into(),
                commit: "0123456789abcdef0123".into(),
            },
        };
        assert_eq!(
            reply(&[pushed, merged], &[]),
            "Pushed main on acme/api (the work branch is its base: no pull request)\nMerged into main on acme/web (0123456789ab)"
        );
        let branch = Delivered {
            repo: "team/app".into(),
            to: DeliveredTo::PushedBranch {
                branch: "gatehouse/r-1-fix".into(),
                commit: "0123456789abcdef0123".into(),
                url: "file:///srv/git/app.git".into(),
            },
        };
        let request = Delivered {
            repo: "team/web".into(),
            to: DeliveredTo::Request {
                forge: "gitlab".into(),
                number: 4,
                branch: "gatehouse/r-1-fix".into(),
                url: "https://gitlab.example.com/team/web/-/merge_requests/4".into(),
                opened: true,
                head: String::new(),
                remote: "https://gitlab.example.com/team/web.git".into(),
            },
        };
        assert_eq!(
            reply(&[branch, request], &[]),
            "Pushed branch gatehouse/r-1-fix at 0123456789ab to file:///srv/git/app.git (team/app: no forge to open a pull request on; merge it there)\nOpened team/web#4: https://gitlab.example.com/team/web/-/merge_requests/4"
        );
    }

    #[test]
    fn the_progress_message_says_how_the_delivery_ended() {
        let two = [
            pull("acme/api", 1, false, true),
            pull("acme/web", 2, false, true),
        ];
        assert_eq!(
            ended(&Ended::Delivered(&two), 4_200),
            "Delivered in 4s · 2 pull requests"
        );
        assert_eq!(
            ended(&Ended::Delivered(&two[..1]), 61_000),
            "Delivered in 1m 01s · 1 pull request"
        );
        assert_eq!(ended(&Ended::Delivered(&[]), 0), "Delivered in 0s");
        assert_eq!(ended(&Ended::Unchanged, 900), "Nothing to deliver");
        assert_eq!(ended(&Ended::Failed, 3_000), "Delivery failed after 3s");
        assert_eq!(ended(&Ended::Stopped, 0), "Stopped after 0s");
    }

    #[test]
    fn a_feedback_turn_names_the_pull_request_it_updated_or_says_nothing_changed() {
        let pull = PullRef {
            repo: "acme/api".into(),
            number: 12,
        };
        let pushed = Change {
            pushed: true,
            ..Change::default()
        };
        let done = [pull_request("acme/api", 12), pull_request("acme/web", 3)];
        assert_eq!(
            answered(&pull, &done, &pushed),
            "Updated acme/api#12 (pushed 0123456) and answered there: https://github.com/acme/api/pull/12\nOpened acme/web#3: https://github.com/acme/web/pull/3"
        );
        assert_eq!(
            answered(&pull, &done[1..], &Change::default()),
            "Nothing changed, so nothing was pushed to acme/api#12; said so there.\nOpened acme/web#3: https://github.com/acme/web/pull/3"
        );
        assert_eq!(
            answered(&pull, &[], &Change::default()),
            "Nothing changed, so nothing was pushed to acme/api#12; said so there."
        );
    }

    fn pull_request(repo: &str, number: u64) -> Delivered {
        pull(repo, number, false, false)
    }
}
