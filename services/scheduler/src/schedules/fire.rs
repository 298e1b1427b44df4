//! One fire: decided by the schedule's catch-up window and overlap policy, recorded, and
//! its run requested (cancelling the others first, for `cancel_other`); and a buffered
//! fire started once nothing of its schedule runs.

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_events::{
    Actor, Channel, Event, RunCommand, RunCommandKind, RunRequested, RunWorkspace, ScheduleFire,
    TraceParent,
};
use gatehouse_project::Request;
use gatehouse_schedule::{Decision, SkipReason, decide};
use gatehouse_store::{FireOutcome, FireRow, ScheduleRow};
use jiff::Timestamp;
use uuid::Uuid;

use super::requirement::work_on;
use super::{Clock, Pending};
use crate::effects::emit;
use crate::{Scheduler, SchedulerError};

impl Scheduler {
    /// Decides a fire, records it (or settles the requested one) and sets off what it
    /// decided, in one transaction; does nothing when another scheduler recorded it first.
    pub(super) async fn fire(
        &self,
        schedule: &ScheduleRow,
        pending: &Pending<'_>,
        clock: Clock,
    ) -> Result<(), SchedulerError> {
        let window = Duration::from_millis(schedule.catchup_window_ms.max(0).unsigned_abs());
        let active = self.store.active_schedule_runs(&schedule.name).await?;
        let buffered = self
            .store
            .waiting_fires(&schedule.name, FireOutcome::Buffered)
            .await?
            .len();
        let now = clock.now();
        let startable = self.startable(schedule);
        let decision = match &startable {
            Ok(_) => decide(
                schedule.overlap,
                window,
                pending.due,
                now,
                active.len(),
                buffered,
            ),
            Err(why) => {
                tracing::error!(schedule = %schedule.name, sop = %schedule.sop, %why, "schedule cannot start its SOP; fire skipped");
                Decision::Skip(SkipReason::Invalid)
            }
        };
        let run_id =
            matches!(decision, Decision::Start | Decision::CancelOthersAndStart).then(Uuid::now_v7);
        let outcome = outcome(decision);
        let lateness = now
            .duration_since(pending.due)
            .max(jiff::SignedDuration::ZERO);
        let fire = FireRow {
            schedule: schedule.name.clone(),
            scheduled_ms: pending.scheduled.as_millisecond(),
            kind: pending.kind,
            outcome,
            run_id,
            fired_ms: now.as_millisecond(),
            lateness_ms: lateness.as_millis().try_into().unwrap_or(i64::MAX),
            requested_by: pending.requested_by.map(str::to_owned),
        };
        let mut tx = self.store.begin().await?;
        let claimed = if pending.requested {
            tx.settle_requested_fire(&fire).await?
        } else {
            tx.record_fire(&fire).await?
        };
        if !claimed {
            return Ok(());
        }
        // One trace for everything the fire sets off: it is where that work enters.
        let trace = TraceParent::new_root();
        if decision == Decision::CancelOthersAndStart {
            for other in &active {
                let command = RunCommand {
                    run_id: *other,
                    command: RunCommandKind::Cancel,
                    actor: actor(schedule, pending.requested_by),
                };
                emit(&mut tx, Event::RunCommand(command), Some(&trace)).await?;
            }
        }
        if let (Some(run_id), Ok(workspace)) = (run_id, startable) {
            let mut request = request(schedule, run_id, pending.scheduled, pending.requested_by);
            let scheduled = pending.scheduled;
            work_on(
                &mut tx,
                schedule,
                scheduled,
                &mut request,
                workspace,
                Some(&trace),
            )
            .await?;
            emit(&mut tx, Event::RunRequested(request), Some(&trace)).await?;
        }
        tx.commit().await?;
        metrics::histogram!("gatehouse_schedule_lateness_seconds").record(lateness.as_secs_f64());
        metrics::counter!("gatehouse_schedule_fires_total", "outcome" => outcome.as_str())
            .increment(1);
        tracing::info!(
            schedule = %schedule.name, kind = pending.kind.as_str(),
            scheduled = %pending.scheduled, %outcome, lateness_ms = fire.lateness_ms,
            trace_id = trace.trace_id(), "schedule fired"
        );
        Ok(())
    }

    /// Whether the schedule's SOP exists and takes its parameters, and its project (if it
    /// names one) is configured and allows the SOP: a fire that cannot start a run is
    /// skipped, so it never counts as a run still going. `Ok`: the workspace its runs get.
    fn startable(&self, schedule: &ScheduleRow) -> Result<Option<RunWorkspace>, String> {
        let sop = self
            .catalog
            .get(&schedule.sop)
            .ok_or_else(|| format!("no SOP named `{}`", schedule.sop))?;
        let params: BTreeMap<String, String> =
            serde_json::from_str(&schedule.params).unwrap_or_default();
        sop.check_start(&params)?;
        let Some(project) = &schedule.project else {
            return Ok(None);
        };
        let request = Request {
            project: Some(project),
            sop: Some(&sop.name),
            ..Request::default()
        };
        self.projects.resolve(request).map_err(|e| e.to_string())
    }

    /// Starts the oldest buffered fire once nothing of the schedule runs.
    pub(super) async fn start_buffered(
        &self,
        schedule: &ScheduleRow,
        now: Timestamp,
    ) -> Result<(), SchedulerError> {
        let buffered = self
            .store
            .waiting_fires(&schedule.name, FireOutcome::Buffered)
            .await?;
        let Some(oldest) = buffered.first() else {
            return Ok(());
        };
        if !self
            .store
            .active_schedule_runs(&schedule.name)
            .await?
            .is_empty()
        {
            return Ok(());
        }
        let mut tx = self.store.begin().await?;
        let startable = self.startable(schedule);
        if let Err(why) = &startable {
            tracing::error!(schedule = %schedule.name, sop = %schedule.sop, %why, "schedule cannot start its SOP; buffered fire skipped");
            tx.settle_buffered_fire(
                &schedule.name,
                oldest.scheduled_ms,
                FireOutcome::SkippedInvalid,
                None,
                now.as_millisecond(),
            )
            .await?;
        } else {
            let run_id = Uuid::now_v7();
            let started = tx
                .settle_buffered_fire(
                    &schedule.name,
                    oldest.scheduled_ms,
                    FireOutcome::Started,
                    Some(run_id),
                    now.as_millisecond(),
                )
                .await?;
            if started {
                let scheduled = Timestamp::from_millisecond(oldest.scheduled_ms).unwrap_or(now);
                let mut request =
                    request(schedule, run_id, scheduled, oldest.requested_by.as_deref());
                let workspace = startable.unwrap_or_default();
                work_on(&mut tx, schedule, scheduled, &mut request, workspace, None).await?;
                emit(&mut tx, Event::RunRequested(request), None).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

/// What a decision is recorded as.
fn outcome(decision: Decision) -> FireOutcome {
    match decision {
        Decision::Start | Decision::CancelOthersAndStart => FireOutcome::Started,
        Decision::Buffer => FireOutcome::Buffered,
        Decision::Skip(SkipReason::Missed) => FireOutcome::SkippedMissed,
        Decision::Skip(SkipReason::Overlap) => FireOutcome::SkippedOverlap,
        Decision::Skip(SkipReason::Invalid) => FireOutcome::SkippedInvalid,
    }
}

/// The schedule as an actor, answering for the person accountable for this fire: who
/// triggered it by hand, else who created or last changed the schedule. The gates of its
/// runs hold that person to the requester rule.
fn actor(schedule: &ScheduleRow, requested_by: Option<&str>) -> Actor {
    Actor {
        channel: Channel::Schedule,
        handle: schedule.name.clone(),
        person: Some(requested_by.unwrap_or(&schedule.owner).to_owned()),
    }
}

fn request(
    schedule: &ScheduleRow,
    run_id: Uuid,
    scheduled: Timestamp,
    requested_by: Option<&str>,
) -> RunRequested {
    let params: BTreeMap<String, String> =
        serde_json::from_str(&schedule.params).unwrap_or_default();
    RunRequested {
        run_id,
        sop: schedule.sop.clone(),
        params,
        requirement_id: None,
        requested_by: actor(schedule, requested_by),
        schedule: Some(ScheduleFire {
            schedule: schedule.name.clone(),
            scheduled_time: chrono::DateTime::from_timestamp_millis(scheduled.as_millisecond())
                .unwrap_or_default(),
            owner: Some(schedule.owner.clone()),
        }),
        parent: None,
        workspace: None,
    }
}
