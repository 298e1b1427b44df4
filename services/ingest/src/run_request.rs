//! Asking for a run: the `run.requested` event for the scheduler and, in the same
//! transaction, the run's row with status `requested`. The id ingest gives out (the API's
//! 202, a chat reply, a comment) is then a run that `run show` and the console find from
//! that moment; the scheduler fills the row in when it creates the run, or marks it failed
//! saying why when it cannot.

use gatehouse_engine::RunState;
use gatehouse_events::{Event, RunRequested, RunStatus};
use gatehouse_sop::Sop;
use gatehouse_store::{RunRow, Tx};
use uuid::Uuid;

use crate::{ApiError, outbox};

/// Records `request` (a run of `sop`) as asked for; the outbox event's id.
pub(crate) async fn request(
    tx: &mut Tx,
    sop: &Sop,
    request: RunRequested,
) -> Result<Uuid, ApiError> {
    tx.save_sop_version(&sop.version, &sop.name, &sop.source, &sop.text)
        .await?;
    tx.request_run(&row(sop, &request)?).await?;
    outbox::append(tx, Event::RunRequested(request)).await
}

/// The row shown until the scheduler creates the run: the SOP's nodes, none started.
fn row(sop: &Sop, request: &RunRequested) -> Result<RunRow, ApiError> {
    let person = request.requester();
    let mut state = RunState::new(sop, Some(person.clone()));
    state.status = RunStatus::Requested;
    let now = chrono::Utc::now();
    Ok(RunRow {
        id: request.run_id,
        sop: sop.name.clone(),
        sop_version: sop.version.clone(),
        params: serde_json::to_string(&sop.params_with_defaults(&request.params))?,
        requested_by: Some(person),
        status: RunStatus::Requested,
        state: serde_json::to_string(&state)?,
        revision: 0,
        parent_run: None,
        parent_node: None,
        parent_attempt: None,
        requirement_id: request.requirement_id,
        schedule: None,
        scheduled_ms: None,
        project: request.workspace.as_ref().map(|w| w.project.clone()),
        workspace: request
            .workspace
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?,
        created_at: now,
        updated_at: now,
        conversation: None,
    })
}
