//! The scheduler and its step: a run created, an input applied to a stored run and what
//! follows recorded, a child run's imports.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use gatehouse_bus::{Bus, Consumer, ConsumerOptions, ConsumerSpec};
use gatehouse_engine::{Input, Rejection, RunState, apply};
use gatehouse_events::{Artifact, RunRequested, RunStatus, TraceParent};
use gatehouse_project::Projects;
use gatehouse_sop::{Library, NodeKind, Sop};
use gatehouse_store::{ArtifactRow, RunRow, Store, Tx};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::observe::{Measured, Meter, stamp_opened_gates};
use crate::{AssistantSettings, SchedulerError};

/// The scheduler: cheap to clone, shared by its consumers and its timer loop.
#[derive(Clone)]
pub struct Scheduler {
    pub(crate) store: Store,
    pub(crate) catalog: Arc<Library>,
    /// The projects schedules name.
    pub(crate) projects: Arc<Projects>,
    /// Run durations and gate waits.
    pub(crate) meter: Meter,
    /// `[assistant]`; without it conversation events are ignored (ingest opens none).
    pub(crate) assistant: Option<AssistantSettings>,
    /// `runner.interrupt_retries`: attempts lost to the infrastructure run again this
    /// many times per node before they count as failures.
    pub(crate) interrupt_retries: u32,
}

/// Events a scheduler consumer applies in one transaction when they are waiting together.
const BATCH: usize = 64;

/// The events the scheduler consumes, one durable consumer each.
const CONSUMERS: [(&str, &str); 8] = [
    ("scheduler-requests", "run.requested"),
    ("scheduler-commands", "run.command"),
    ("scheduler-decisions", "gate.decision"),
    ("scheduler-progress", "node.progress"),
    ("scheduler-results", "node.finished"),
    ("scheduler-conversations", "conversation.input"),
    ("scheduler-turn-progress", "turn.progress"),
    ("scheduler-turn-results", "turn.finished"),
];

impl Scheduler {
    /// A scheduler over `store`, starting runs of the SOPs of `catalog` as they are when
    /// each run is requested.
    pub fn new(store: Store, catalog: Arc<Library>) -> Self {
        Self {
            store,
            catalog,
            projects: Arc::default(),
            meter: Meter::default(),
            assistant: None,
            interrupt_retries: 2,
        }
    }

    /// How many attempts lost to the infrastructure a node runs again (default 2).
    pub fn with_interrupt_retries(mut self, retries: u32) -> Self {
        self.interrupt_retries = retries;
        self
    }

    /// Runs conversations with `[assistant]`.
    pub fn with_assistant(mut self, assistant: AssistantSettings) -> Self {
        self.assistant = Some(assistant);
        self
    }

    /// Resolves the projects schedules name (`[[projects]]`).
    pub fn with_projects(mut self, projects: Arc<Projects>) -> Self {
        self.projects = projects;
        self
    }

    /// Consumes events and fires timers until `shutdown` is cancelled.
    pub async fn run(self, bus: Arc<dyn Bus>, shutdown: CancellationToken) {
        let mut tasks = tokio::task::JoinSet::new();
        for (name, filter) in CONSUMERS {
            // Every effect of the scheduler's step is in its transaction: events waiting
            // together are applied in one commit.
            let options = ConsumerOptions {
                retry_delay: Duration::from_millis(200),
                batch: BATCH,
                ..ConsumerOptions::new(ConsumerSpec::new(name, filter))
            };
            let consumer = Consumer::new(bus.clone(), self.store.clone(), options);
            let (handler, shutdown) = (self.clone(), shutdown.clone());
            tasks.spawn(async move { consumer.run(&handler, shutdown).await });
        }
        tasks.spawn(self.clone().fire_timers(shutdown));
        while tasks.join_next().await.is_some() {}
    }

    /// The definition the run was frozen with.
    pub(crate) async fn definition(&self, run: &RunRow) -> Result<Arc<Sop>, SchedulerError> {
        self.store
            .sop_definition(&run.sop_version)
            .await?
            .ok_or_else(|| SchedulerError::Corrupt {
                run: run.id,
                message: format!("SOP version {} is not stored", run.sop_version),
            })
    }

    /// Creates the run a `run.requested` asks for and starts it. A request for an SOP
    /// that does not exist or cannot run is logged and dropped: the API refuses those
    /// before they get here.
    pub(crate) async fn create(
        &self,
        tx: &mut Tx,
        request: &RunRequested,
        trace: Option<&TraceParent>,
        measured: &mut Measured,
    ) -> Result<(), SchedulerError> {
        let Some(sop) = self.catalog.get(&request.sop) else {
            tracing::error!(run = %request.run_id, sop = %request.sop, "run requested for an unknown SOP; dropped");
            let why = format!("this scheduler has no SOP named `{}`", request.sop);
            return self.refuse(tx, request.run_id, why).await;
        };
        if let Err(why) = sop.check_start(&request.params) {
            tracing::error!(run = %request.run_id, sop = %request.sop, %why, "run cannot start; dropped");
            return self.refuse(tx, request.run_id, why).await;
        }
        let params = sop.params_with_defaults(&request.params);
        let person = request.requester();
        let mut state = RunState::new(&sop, Some(person.clone()));
        // The requirement's author is held to the requester rule too.
        if let Some(id) = request.requirement_id {
            state.requirement_author = self.store.requirement(id).await?.map(|r| r.requested_by);
        }
        // And so is the owner of the schedule that fired it, whoever triggered it.
        state.schedule_owner = request.schedule.as_ref().and_then(|f| f.owner.clone());
        let now = Utc::now();
        let row = RunRow {
            id: request.run_id,
            sop: sop.name.clone(),
            sop_version: sop.version.clone(),
            params: json(&params),
            requested_by: Some(person),
            status: state.status,
            state: json(&state),
            revision: 0,
            parent_run: request.parent.as_ref().map(|p| p.run_id),
            parent_node: request.parent.as_ref().map(|p| p.node.clone()),
            parent_attempt: request
                .parent
                .as_ref()
                .map(|p| i32::try_from(p.attempt).unwrap_or(i32::MAX)),
            requirement_id: request.requirement_id,
            schedule: request.schedule.as_ref().map(|f| f.schedule.clone()),
            scheduled_ms: request
                .schedule
                .as_ref()
                .map(|f| f.scheduled_time.timestamp_millis()),
            project: request.workspace.as_ref().map(|w| w.project.clone()),
            workspace: request.workspace.as_ref().map(json),
            created_at: now,
            updated_at: now,
            conversation: None,
        };
        tx.save_sop_version(&sop.version, &sop.name, &sop.source, &sop.text)
            .await?;
        let Some(row) = tx.create_run(&row).await? else {
            return Ok(());
        };
        self.store.keep_sop_definition(sop);
        // Started in a conversation's thread: the run holds its workspace until it ends.
        if let Some(conversation) = row.conversation {
            let took = gatehouse_conversation::Input::RunTookWorkspace {
                run: request.run_id.to_string(),
            };
            self.converse(tx, conversation, took, trace).await?;
        }
        let _ = self.step(tx, row, Input::Start, trace, measured).await?;
        Ok(())
    }

    /// Ends a request that cannot become a run: the row ingest showed it by (status
    /// `requested`), if any, becomes a failed run saying why. A run already created is
    /// left alone.
    async fn refuse(&self, tx: &mut Tx, run_id: Uuid, why: String) -> Result<(), SchedulerError> {
        let Some(row) = tx.load_run(run_id).await? else {
            return Ok(());
        };
        if row.status != RunStatus::Requested {
            return Ok(());
        }
        let mut state = stored_state(run_id, &row.state)?;
        state.failure = Some(why);
        state.status = RunStatus::Failed;
        state.revision += 1;
        let revision = i64::try_from(state.revision).unwrap_or(i64::MAX);
        tx.update_run(run_id, state.status, &json(&state), row.revision, revision)
            .await?;
        Ok(())
    }

    /// Applies `input` to a stored run and records everything that follows. A refusal is
    /// returned, not an error: the input was valid to receive but not to apply. What the
    /// step means for the metrics goes into `measured`, to be recorded once `tx` commits.
    pub(crate) async fn advance(
        &self,
        tx: &mut Tx,
        run_id: Uuid,
        input: Input,
        trace: Option<&TraceParent>,
        measured: &mut Measured,
    ) -> Result<Result<(), Rejection>, SchedulerError> {
        let Some(row) = tx.load_run(run_id).await? else {
            tracing::warn!(run = %run_id, ?input, "event for an unknown run; ignored");
            return Ok(Ok(()));
        };
        self.step(tx, row, input, trace, measured).await
    }

    /// [`Scheduler::advance`] on `row`, read (or written) in `tx`.
    async fn step(
        &self,
        tx: &mut Tx,
        row: RunRow,
        input: Input,
        trace: Option<&TraceParent>,
        measured: &mut Measured,
    ) -> Result<Result<(), Rejection>, SchedulerError> {
        let run_id = row.id;
        let sop = self.definition(&row).await?;
        let mut state = stored_state(run_id, &row.state)?;
        let (revision, before) = (state.revision, state.status);
        let effects = match apply(&sop, &mut state, input) {
            Ok(effects) => effects,
            Err(rejection) => return Ok(Err(rejection)),
        };
        if state.revision == revision {
            return Ok(Ok(()));
        }
        stamp_opened_gates(&mut state, &effects);
        let stored = tx
            .update_run(
                run_id,
                state.status,
                &json(&state),
                row.revision,
                row.revision + 1,
            )
            .await?;
        if !stored {
            return Err(SchedulerError::Corrupt {
                run: run_id,
                message: "changed by another writer; retrying".into(),
            });
        }
        let params: BTreeMap<String, String> =
            serde_json::from_str(&row.params).unwrap_or_default();
        let imports = match (state.status, row.parent_run) {
            (RunStatus::Succeeded, Some(parent)) => Some(self.import(tx, &row, parent).await?),
            _ => None,
        };
        let context = crate::effects::Context {
            run: &row,
            sop: &sop,
            state: &state,
            params: &params,
            imports,
            trace,
        };
        context.carry_out(tx, &effects).await?;
        // A run started from a conversation gives it the workspace back when it ends.
        if state.status.is_terminal()
            && !before.is_terminal()
            && let Some(conversation) = row.conversation
        {
            let released = gatehouse_conversation::Input::RunReleasedWorkspace {
                run: run_id.to_string(),
            };
            self.converse(tx, conversation, released, trace).await?;
        }
        measured.step(row.created_at, before, &state, &effects);
        Ok(Ok(()))
    }
}

impl Scheduler {
    /// Records, for the parent's `sop` node, the child artifacts it declares in `import`
    /// (`node/file`). An artifact the child did not produce fails the parent's node.
    async fn import(
        &self,
        tx: &mut Tx,
        child: &RunRow,
        parent: Uuid,
    ) -> Result<Result<Vec<Artifact>, String>, SchedulerError> {
        let (Some(node), Some(attempt)) = (&child.parent_node, child.parent_attempt) else {
            return Ok(Ok(Vec::new()));
        };
        let Some(parent_row) = self.store.run(parent).await? else {
            return Ok(Err(format!("parent run {parent} is gone")));
        };
        let parent_sop = self.definition(&parent_row).await?;
        let Some(NodeKind::Sop { import, .. }) = parent_sop.node(node).map(|n| &n.kind) else {
            return Ok(Ok(Vec::new()));
        };
        let available = self.store.artifacts(child.id).await?;
        let mut imported = Vec::new();
        for entry in import {
            let (from_node, file) = entry.split_once('/').unwrap_or(("", entry.as_str()));
            let Some(found) = available
                .iter()
                .filter(|a| a.node == from_node && a.name == file)
                .max_by_key(|a| a.attempt)
            else {
                return Ok(Err(format!(
                    "child run {} produced no artifact `{entry}` to import",
                    child.id
                )));
            };
            tx.record_artifact(&ArtifactRow {
                run_id: parent,
                node: node.clone(),
                attempt,
                name: file.to_owned(),
                sha256: found.sha256.clone(),
                size: found.size,
                location: found.location.clone(),
            })
            .await?;
            imported.push(Artifact {
                name: file.to_owned(),
                sha256: found.sha256.clone(),
                size: u64::try_from(found.size).unwrap_or(0),
            });
        }
        Ok(Ok(imported))
    }
}

/// A run's state as the store holds it.
fn stored_state(run: Uuid, state: &str) -> Result<RunState, SchedulerError> {
    serde_json::from_str(state).map_err(|e| SchedulerError::Corrupt {
        run,
        message: format!("stored state does not decode: {e}"),
    })
}

pub(crate) fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}
