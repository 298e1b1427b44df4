//! Processing webhook deliveries (GitHub, Slack, Discord): each in one transaction with
//! everything it causes (requirement rows, events in the outbox, wanted replies) and the
//! mark that it was processed, so a crash at any point leaves it either untouched
//! (processed again after the restart) or done. A delivery is processed as it arrives, in
//! the commit that stores it; the processor takes those that had to wait behind an
//! earlier one, failed, or were left by a crash or another replica.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use gatehouse_events::TraceParent;
use gatehouse_github::Webhook;
use gatehouse_outage::Outage;
use gatehouse_store::{DeliveryRow, DeliveryStatus, Tx};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::intake::github::{Lookup, LookupError, lookup, needs_lookup};
use crate::{ApiError, ApiState};

/// How long the processor sleeps when nothing wakes it (another replica's deliveries).
const POLL: Duration = Duration::from_secs(1);

/// Processes stored deliveries until `shutdown`: those received by this process as they
/// come, and any left pending by a crash or another replica.
pub async fn process_deliveries(api: ApiState, shutdown: CancellationToken) {
    let mut github = GithubWait::new(&api);
    loop {
        if let Err(err) = process_pending(&api, &mut github).await {
            tracing::warn!(error = %err, "processing webhook deliveries failed; retrying");
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = api.deliveries.notified() => {}
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// GitHub's API as the processor last found it. While it does not answer, the deliveries
/// that need it stay pending (their note says why) and are tried again only when the next
/// try is due, growing while the outage lasts; the outage is logged as [`Outage`] words it
/// — once, then at growing intervals — not once a second per delivery.
pub(crate) struct GithubWait {
    outage: Outage,
    next_try: Option<Instant>,
}

impl GithubWait {
    pub(crate) fn new(api: &ApiState) -> Self {
        let at = api
            .github_client
            .as_ref()
            .map_or_else(|| "-".to_owned(), |c| c.api_url().to_owned());
        Self {
            outage: Outage::new(format!("GitHub API at {at}")),
            next_try: None,
        }
    }

    /// Whether a delivery that needs the API may be tried now.
    fn may_try(&self, now: Instant) -> bool {
        self.next_try.is_none_or(|at| now >= at)
    }

    /// The API did not answer; how long until the next try.
    fn failed(&mut self, why: &str) -> Duration {
        let now = Instant::now();
        let (say, wait) = self.outage.failed(now, why);
        Outage::log(&say);
        self.next_try = Some(now + wait);
        wait
    }

    fn answered(&mut self) {
        Outage::log(&self.outage.answered(Instant::now()));
        self.next_try = None;
    }
}

/// What processing one delivery came to, when it did not fail.
enum Processed {
    Done,
    /// It needs GitHub's API, which does not answer: it stays pending.
    WaitsForGithub,
}

/// A request body as text, which is how deliveries are stored: 400 when it is not UTF-8.
pub(crate) fn utf8(body: &[u8]) -> Result<&str, ApiError> {
    std::str::from_utf8(body).map_err(|_| ApiError::BadRequest("the body is not UTF-8".into()))
}

/// What processing a delivery came to.
pub(crate) struct Outcome {
    status: DeliveryStatus,
    note: String,
}

impl Outcome {
    /// Acted on; `notes` say how.
    pub(crate) fn processed(notes: Vec<String>) -> Self {
        Self {
            status: DeliveryStatus::Processed,
            note: notes.join("; "),
        }
    }

    /// What it came to, in words.
    pub(crate) fn note(&self) -> &str {
        &self.note
    }

    /// Nothing to do, and why.
    pub(crate) fn ignored(note: impl Into<String>) -> Self {
        Self {
            status: DeliveryStatus::Ignored,
            note: note.into(),
        }
    }
}

/// Processes every pending delivery, oldest first. GitHub's are taken in groups that
/// cannot see each other's writes ([`independent`]), each group in one transaction
/// ([`process_together`]); the rest, and the deliveries of a group that could not be, each
/// in a transaction of its own. One that fails is logged and left pending while the others
/// go on (it must not hold up every later delivery); the pass then ends with its error, so
/// the caller waits before trying again.
pub(crate) async fn process_pending(
    api: &ApiState,
    github: &mut GithubWait,
) -> Result<usize, ApiError> {
    let mut done = 0;
    loop {
        let pending = api.store.pending_deliveries(100).await?;
        if pending.is_empty() {
            return Ok(done);
        }
        let (from_github, others): (Vec<_>, Vec<_>) =
            pending.into_iter().partition(|d| d.source == "github");
        let groups = independent(from_github)
            .into_iter()
            .chain(others.into_iter().map(|d| vec![d]));
        let mut first_error = None;
        let mut waiting = false;
        for group in groups {
            if group.len() > 1 && process_together(api, &group).await? {
                done += group.len();
                continue;
            }
            for delivery in group {
                if needs_lookup(&delivery) && !github.may_try(Instant::now()) {
                    waiting = true;
                    continue;
                }
                let id = delivery.delivery_id.clone();
                let source = delivery.source.clone();
                match process(api, delivery, github).await {
                    Ok(Processed::Done) => done += 1,
                    Ok(Processed::WaitsForGithub) => waiting = true,
                    Err(e) => {
                        tracing::warn!(%source, delivery = %id, error = %e, "processing a delivery failed; it stays pending");
                        // Shown as failed, with why, until it is tried again.
                        if let Err(noted) = api
                            .store
                            .delivery_failed(&source, &id, &e.to_string())
                            .await
                        {
                            tracing::warn!(%source, delivery = %id, error = %noted, "could not record why a delivery failed");
                        }
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        // Those waiting for GitHub are still pending: the next pass takes them.
        if waiting {
            return Ok(done);
        }
    }
}

/// GitHub deliveries, in order, cut into groups of consecutive ones about different
/// issues (or pull requests). Processing reads some rows through the pool, outside its
/// transaction (the runs of a requirement, a run's state), so a delivery must not share a
/// transaction with an earlier one about the same issue: it would not see that one's run
/// (a label removed would not cancel the run its adding asked for). One about no issue
/// is a group of its own.
fn independent(deliveries: Vec<DeliveryRow>) -> Vec<Vec<DeliveryRow>> {
    let mut groups = Vec::new();
    let mut group: Vec<DeliveryRow> = Vec::new();
    let mut subjects = HashSet::new();
    for delivery in deliveries {
        let subject = Webhook::parse(&delivery.event, delivery.body.as_bytes())
            .ok()
            .and_then(|w| w.subject().map(|(repo, number)| (repo.to_owned(), number)))
            // One that reads GitHub's API first is processed alone.
            .filter(|_| !needs_lookup(&delivery));
        let Some(subject) = subject else {
            if !group.is_empty() {
                groups.push(std::mem::take(&mut group));
            }
            subjects.clear();
            groups.push(vec![delivery]);
            continue;
        };
        if !subjects.insert(subject.clone()) {
            groups.push(std::mem::take(&mut group));
            subjects.clear();
            subjects.insert(subject);
        }
        group.push(delivery);
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// Processes a group of GitHub deliveries ([`independent`]) in one transaction, one
/// durable commit for a burst of webhooks. Their processing only writes to the store, so a
/// batch can be undone whole: `false` when one failed, or another replica had processed one,
/// and nothing was kept; each is then processed alone.
async fn process_together(api: &ApiState, deliveries: &[DeliveryRow]) -> Result<bool, ApiError> {
    let mut tx = api.store.begin().await?;
    let mut outcomes = Vec::with_capacity(deliveries.len());
    for delivery in deliveries {
        match apply_traced(api, &mut tx, delivery).await {
            Ok(Some(applied)) => outcomes.push(applied),
            Ok(None) => {
                tx.rollback().await?;
                return Ok(false);
            }
            Err(err) => {
                tracing::debug!(delivery = %delivery.delivery_id, error = %err,
                    "a delivery of a batch failed; processing each alone");
                tx.rollback().await?;
                return Ok(false);
            }
        }
    }
    tx.commit().await?;
    for (delivery, (span, outcome)) in deliveries.iter().zip(outcomes) {
        span.in_scope(|| outcome.log(delivery));
    }
    Ok(true)
}

/// Stores a verified request (GitHub, Slack, Discord) and processes it in the same
/// commit, the way to its run shortest; `false` for one stored before, which must then do
/// nothing. It is only stored, and the processor woken, when another is being processed as
/// it arrived (in a burst, the processor takes many in one commit), when an earlier one
/// still waits (it must not be overtaken), or when processing it failed (the processor
/// tries again and says why).
pub(crate) async fn store(
    api: &ApiState,
    source: &'static str,
    id: &str,
    event: &str,
    body: &str,
) -> Result<bool, ApiError> {
    let span = tracing::Span::current();
    span.record("delivery", id);
    let trace = crate::trace::of_delivery(source, id);
    span.record("trace_id", trace.trace_id());
    crate::trace::continue_trace(&span, &trace);
    let arrival = process_on_arrival(api, source, id, event, body)
        .await
        .unwrap_or_else(|err| {
            tracing::warn!(%source, delivery = %id, error = %err,
                "processing a delivery as it arrived failed; it is stored for the processor");
            Arrival::StoreAlone
        });
    let stored = match arrival {
        Arrival::Duplicate => false,
        Arrival::Processed | Arrival::Waits => true,
        Arrival::StoreAlone => {
            let project = concerns(api, source, body);
            api.store
                .record_delivery(source, id, event, body, project.as_deref())
                .await?
        }
    };
    if matches!(arrival, Arrival::Waits | Arrival::StoreAlone) {
        api.deliveries.notify_one();
    }
    metrics::counter!("gatehouse_webhook_deliveries_total", "source" => source, "duplicate" => if stored { "false" } else { "true" })
        .increment(1);
    Ok(stored)
}

/// What became of a delivery as it arrived.
enum Arrival {
    /// Stored before: nothing to do.
    Duplicate,
    /// Stored and processed in one commit.
    Processed,
    /// Not stored: another delivery is being processed as it arrived (or processing this
    /// one failed); it is to be stored alone.
    StoreAlone,
    /// Stored behind an earlier one still pending, for the processor.
    Waits,
}

/// Stores the delivery and, unless another waits before it, processes it in the same
/// transaction; neither while another delivery is processed so. `Err`: nothing was kept.
async fn process_on_arrival(
    api: &ApiState,
    source: &str,
    id: &str,
    event: &str,
    body: &str,
) -> Result<Arrival, ApiError> {
    let Ok(_turn) = api.arrivals.try_lock() else {
        return Ok(Arrival::StoreAlone);
    };
    let mut tx = api.store.begin().await?;
    let project = concerns(api, source, body);
    let Some(delivery) = tx
        .record_delivery(source, id, event, body, project.as_deref())
        .await?
    else {
        tx.rollback().await?;
        return Ok(Arrival::Duplicate);
    };
    // One that reads GitHub's API waits for the processor: GitHub is answered first.
    if tx.other_delivery_pending(source, id).await? || needs_lookup(&delivery) {
        tx.commit().await?;
        return Ok(Arrival::Waits);
    }
    // Stored by this transaction, so nothing else can have finished it.
    let (span, outcome) = apply_traced(api, &mut tx, &delivery)
        .await?
        .ok_or_else(|| {
            ApiError::Internal(format!("delivery {id} was finished by another process"))
        })?;
    tx.commit().await?;
    span.in_scope(|| outcome.log(&delivery));
    Ok(Arrival::Processed)
}

/// The project a delivery concerns, as far as its body tells: the one project listing a
/// GitHub delivery's repository, or listing the Slack or Discord channel it came from.
/// People who may read that project may see the delivery; one concerning none is for
/// administrators.
fn concerns(api: &ApiState, source: &str, body: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    let text = |pointer: &str| json.pointer(pointer).and_then(|v| v.as_str());
    match source {
        "github" => crate::projects::project_of_repo(api, text("/repository/full_name")?),
        "slack" => {
            let channel = text("/event/channel")?;
            Some(
                api.projects
                    .of_channel(&format!("slack:{channel}"))?
                    .name()
                    .to_owned(),
            )
        }
        "discord" => {
            let channel = text("/channel_id")?;
            Some(
                api.projects
                    .of_channel(&format!("discord:{channel}"))?
                    .name()
                    .to_owned(),
            )
        }
        _ => None,
    }
}

/// [`apply`] in the delivery's trace and `delivery` span, with the span to log the outcome
/// in once it is committed; `None` as `apply` gives it.
async fn apply_traced(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &DeliveryRow,
) -> Result<Option<(tracing::Span, Outcome)>, ApiError> {
    let (span, trace) = delivery_span(delivery);
    let applied = crate::trace::within(trace, apply(api, tx, delivery, &Lookup::default()))
        .instrument(span.clone())
        .await?;
    Ok(applied.map(|outcome| (span, outcome)))
}

/// Processes one delivery in its own transaction, in its trace (the one its request was
/// logged with) and a `delivery` span. One whose API lookup finds GitHub not answering
/// stays pending with a note saying so, and `github` learns of the outage.
async fn process(
    api: &ApiState,
    delivery: DeliveryRow,
    github: &mut GithubWait,
) -> Result<Processed, ApiError> {
    let (span, trace) = delivery_span(&delivery);
    let work = async {
        let found = match lookup(api, &delivery).await {
            Ok(found) => {
                if found.asked_github {
                    github.answered();
                }
                found
            }
            Err(e @ LookupError::Unreachable { .. }) => {
                let wait = github.failed(&e.to_string());
                let note = format!(
                    "waiting for GitHub: {e}; tried again in {} s",
                    wait.as_secs()
                );
                api.store
                    .delivery_failed(&delivery.source, &delivery.delivery_id, &note)
                    .await?;
                return Ok(Processed::WaitsForGithub);
            }
            Err(e) => return Err(e.into()),
        };
        let mut tx = api.store.begin().await?;
        // Another replica may have processed it meanwhile: then roll all of this back.
        match apply(api, &mut tx, &delivery, &found).await? {
            Some(outcome) => {
                tx.commit().await?;
                outcome.log(&delivery);
            }
            None => tx.rollback().await?,
        }
        Ok(Processed::Done)
    };
    crate::trace::within(trace, work).instrument(span).await
}

/// The `delivery` span a delivery is processed in, and its trace.
fn delivery_span(delivery: &DeliveryRow) -> (tracing::Span, TraceParent) {
    let trace = crate::trace::of_delivery(&delivery.source, &delivery.delivery_id);
    let span = tracing::info_span!("delivery", source = %delivery.source,
        delivery = %delivery.delivery_id, event = %delivery.event, trace_id = trace.trace_id());
    crate::trace::continue_trace(&span, &trace);
    (span, trace)
}

/// Processes `delivery` within `tx`, with what was looked up for it beforehand, and marks
/// it done there; `None` when another replica had processed it already, and `tx` must be
/// rolled back.
async fn apply(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &DeliveryRow,
    found: &Lookup,
) -> Result<Option<Outcome>, ApiError> {
    let outcome = match delivery.source.as_str() {
        "github" => crate::intake::github::process(api, tx, delivery, found).await?,
        "slack" => crate::intake::chat::process_slack(api, tx, delivery).await?,
        "discord" => crate::intake::chat::process_discord(api, tx, delivery).await?,
        other => Outcome::ignored(format!("unknown source `{other}`")),
    };
    let marked = tx
        .finish_delivery(
            &delivery.source,
            &delivery.delivery_id,
            outcome.status,
            &outcome.note,
        )
        .await?;
    Ok(marked.then_some(outcome))
}

impl Outcome {
    /// Logs what processing `delivery` came to, once it is committed.
    fn log(&self, delivery: &DeliveryRow) {
        tracing::info!(source = %delivery.source, delivery = %delivery.delivery_id,
            event = %delivery.event, status = self.status.as_str(), note = %self.note,
            "delivery processed");
    }
}
