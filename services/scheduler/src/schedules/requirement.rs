//! The requirement of a fire whose schedule names a project: work on code is recorded
//! against a requirement, which its pull requests deliver, so each such fire gets one
//! (source `schedule`, one per fire time) in the fire's transaction.

use chrono::Utc;
use gatehouse_events::{
    Actor, Event, RequirementCreated, RequirementSource, RequirementState, RunRequested,
    RunWorkspace, TraceParent,
};
use gatehouse_store::{RequirementRow, ScheduleRow, Tx};
use jiff::Timestamp;
use uuid::Uuid;

use crate::SchedulerError;
use crate::effects::emit;

/// Binds a fire's `request` to the project's `workspace`, when the schedule names one, and
/// to the fire's own requirement, created here.
pub(super) async fn work_on(
    tx: &mut Tx,
    schedule: &ScheduleRow,
    scheduled: Timestamp,
    request: &mut RunRequested,
    workspace: Option<RunWorkspace>,
    trace: Option<&TraceParent>,
) -> Result<(), SchedulerError> {
    if let Some(workspace) = &workspace {
        let actor = request.requested_by.clone();
        let id = fire_requirement(tx, schedule, scheduled, workspace, actor, trace).await?;
        request.requirement_id = Some(id);
    }
    request.workspace = workspace;
    Ok(())
}

/// Creates the fire's requirement (`schedule:<name>:<fire time ms>`) unless a replayed
/// fire did; returns its id.
async fn fire_requirement(
    tx: &mut Tx,
    schedule: &ScheduleRow,
    scheduled: Timestamp,
    workspace: &RunWorkspace,
    requested_by: Actor,
    trace: Option<&TraceParent>,
) -> Result<Uuid, SchedulerError> {
    let key = format!("schedule:{}:{}", schedule.name, scheduled.as_millisecond());
    if let Some(existing) = tx.requirement_by_key(&key).await? {
        return Ok(existing.id);
    }
    let now = Utc::now();
    let source = RequirementSource::Schedule {
        schedule: schedule.name.clone(),
    };
    let row = RequirementRow {
        id: Uuid::now_v7(),
        source_key: key,
        // A tagged enum of strings always serializes.
        source: serde_json::to_string(&source).unwrap_or_default(),
        title: format!(
            "{} on {}, scheduled for {scheduled}",
            schedule.sop, workspace.project
        ),
        body: String::new(),
        url: None,
        state: RequirementState::Open,
        requested_by: requested_by
            .person
            .clone()
            .unwrap_or_else(|| requested_by.handle.clone()),
        source_updated_at: String::new(),
        project: Some(workspace.project.clone()),
        created_at: now,
        updated_at: now,
    };
    tx.insert_requirement(&row).await?;
    let created = RequirementCreated {
        requirement_id: row.id,
        source,
        title: row.title.clone(),
        body: row.body.clone(),
        url: None,
        requested_by,
    };
    emit(tx, Event::RequirementCreated(created), trace).await?;
    Ok(row.id)
}
