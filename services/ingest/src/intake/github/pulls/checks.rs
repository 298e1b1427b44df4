//! Check suites and workflow runs on one of Gatehouse's pull requests: failing ones on
//! the head it pushed last are feedback with the tail of each failing job's log.

use gatehouse_events::{Feedback, FeedbackKind};
use gatehouse_github::{CheckSuiteEvent, WorkflowRunEvent};
use gatehouse_store::{Tx, fit_bytes};

use super::{
    Event, Lookup, MAX_FEEDBACK_BYTES, not_ours, processed_or_ignored, pull_ref, record, short,
    with_feedback,
};
use crate::intake::deliveries::Outcome;
use crate::{ApiError, ApiState};

impl<'a> CheckResult<'a> {
    pub(super) fn of_suite(e: &'a CheckSuiteEvent) -> Self {
        let suite = &e.check_suite;
        let app = suite.app.as_ref().and_then(|a| a.slug.as_deref());
        Self {
            repo: &e.repository.full_name,
            numbers: suite.pull_requests.iter().map(|p| p.number).collect(),
            name: format!("check_suite.{}", e.action),
            completed: e.action == "completed",
            head_sha: &suite.head_sha,
            conclusion: conclusion(suite.conclusion.as_deref(), suite.status.as_deref()),
            what: format!(
                "check suite of {} on {}",
                app.unwrap_or("an app"),
                short(&suite.head_sha)
            ),
        }
    }

    pub(super) fn of_workflow_run(e: &'a WorkflowRunEvent) -> Self {
        let run = &e.workflow_run;
        let name = run.name.as_deref().unwrap_or("workflow");
        Self {
            repo: &e.repository.full_name,
            numbers: run.pull_requests.iter().map(|p| p.number).collect(),
            name: format!("workflow_run.{}", e.action),
            completed: e.action == "completed",
            head_sha: &run.head_sha,
            conclusion: conclusion(run.conclusion.as_deref(), run.status.as_deref()),
            what: format!("workflow `{name}` on {}", short(&run.head_sha)),
        }
    }
}

/// The conclusion of a check, or its status before it has one.
fn conclusion<'a>(conclusion: Option<&'a str>, status: Option<&'a str>) -> &'a str {
    conclusion.or(status).unwrap_or("unknown")
}

/// A check suite's or workflow run's result, as far as feedback reads it.
pub(super) struct CheckResult<'a> {
    repo: &'a str,
    numbers: Vec<u64>,
    name: String,
    completed: bool,
    head_sha: &'a str,
    conclusion: &'a str,
    what: String,
}

/// Conclusions that mean the work is broken (not `cancelled`, `skipped` or `neutral`,
/// which a person or a rule chose).
fn failed(conclusion: &str) -> bool {
    matches!(conclusion, "failure" | "timed_out" | "startup_failure")
}

pub(super) async fn checks(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    result: &CheckResult<'_>,
    lookup: &Lookup,
) -> Result<Outcome, ApiError> {
    let mut notes = Vec::new();
    for &number in &result.numbers {
        let event = Event {
            repo: result.repo,
            number,
            name: result.name.clone(),
            actor: "",
            summary: format!("{} {}", result.what, result.conclusion),
        };
        let Some(pull) = tx.pull_request(result.repo, number).await? else {
            notes.push(not_ours(&event).note().to_owned());
            continue;
        };
        // Only the head Gatehouse pushed last is the work as it stands; a result for an
        // older head is history.
        let current = pull.head_sha.is_empty() || pull.head_sha == result.head_sha;
        if !result.completed || !current {
            let outcome = if current {
                "recorded"
            } else {
                "recorded: not the head Gatehouse pushed last"
            };
            record(tx, delivery, &pull, &event, outcome).await?;
            notes.push(format!("{}: {}: {outcome}", event.name, event.summary));
            continue;
        }
        let state = if failed(result.conclusion) {
            "failure"
        } else {
            "success"
        };
        tx.set_pull_checks(result.repo, number, result.head_sha, state)
            .await?;
        let feedback = failed(result.conclusion)
            .then(|| checks_feedback(&event, result.head_sha, lookup))
            .flatten();
        if failed(result.conclusion) && feedback.is_none() {
            let names = lookup.failed_on_base.join(", ");
            let outcome = format!(
                "reported, not retried: {names} fail on the base branch too, so the pull request did not break them"
            );
            record(tx, delivery, &pull, &event, &outcome).await?;
            let key = format!("checks-base:{}:{number}:{}", result.repo, result.head_sha);
            let text = format!(
                "The checks {names} fail on this pull request's base branch as well, so Gatehouse is not reworking the pull request for them."
            );
            tx.want_comment(&key, result.repo, number, &text).await?;
            notes.push(format!("{}: {outcome}", event.name));
            continue;
        }
        notes.push(
            with_feedback(api, tx, delivery, &event, feedback)
                .await?
                .note()
                .to_owned(),
        );
    }
    Ok(processed_or_ignored(
        notes,
        &format!("{}: on no pull request", result.name),
    ))
}

/// The work failing checks ask for, its details under the feedback's own header: the
/// head they failed on and each failing check with the tail of its log. `None` when every
/// one of them fails on the base branch too (the pull request did not break them;
/// reworking it would not mend them).
fn checks_feedback(event: &Event<'_>, head_sha: &str, lookup: &Lookup) -> Option<Feedback> {
    let ours: Vec<_> = lookup
        .failed
        .iter()
        .filter(|c| !lookup.failed_on_base.contains(&c.name))
        .collect();
    if ours.is_empty() && !lookup.failed.is_empty() {
        return None;
    }
    // The first line names what failed: cards and the status comment quote it.
    let failing: Vec<String> = ours
        .iter()
        .map(|c| format!("{} ({})", c.name, c.conclusion))
        .collect();
    let mut text = if failing.is_empty() {
        format!(
            "The checks failed on {}, the pull request's head; GitHub named no failing job.\n\n{}\n",
            short(head_sha),
            event.summary
        )
    } else {
        format!(
            "{} failed on {}, the pull request's head.\n",
            failing.join(", "),
            short(head_sha)
        )
    };
    for check in ours {
        text.push_str(&format!("\n### {} ({})\n", check.name, check.conclusion));
        if let Some(url) = &check.html_url {
            text.push_str(&format!("{url}\n"));
        }
        for part in [&check.title, &check.summary].into_iter().flatten() {
            if !part.trim().is_empty() {
                text.push_str(&format!("{}\n", part.trim()));
            }
        }
        if let Some(log) = &check.log_tail {
            text.push_str(&format!(
                "\nThe end of its log:\n```\n{}\n```\n",
                log.trim_end()
            ));
        }
    }
    Some(Feedback {
        kind: FeedbackKind::ChecksFailed,
        key: format!("checks:{}#{}:{head_sha}", event.repo, event.number),
        text: fit_bytes(&text, MAX_FEEDBACK_BYTES),
        pull: pull_ref(event),
        from: String::new(),
        thread: None,
    })
}
