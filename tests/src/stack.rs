//! The scheduler, the runner and the relay on one test database and data directory, driven
//! through events as the API would drive them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_bus::{Bus, InProcessBus};
use gatehouse_events::{
    Actor, Channel, Envelope, Event, GateDecision, GateDecisionKind, RunCommand, RunCommandKind,
    RunRequested,
};
use gatehouse_runner::RunnerOptions;
use gatehouse_sandbox::{ProcessSandbox, Sandbox};
use gatehouse_sop::Catalog;
use gatehouse_store::RunRow;
use uuid::Uuid;

use crate::{Backend, Services, TestDb};

/// The services on one database, as `gatehouse up` wires them.
pub struct Stack {
    /// The database.
    pub db: TestDb,
    /// The data directory: SOP files, runs' workspaces and artifacts.
    pub data: tempfile::TempDir,
    services: Services,
}

impl Stack {
    /// Starts on a new database and data directory with `sops` as SOP files.
    pub async fn start(backend: Backend, sops: &[(&str, &str)]) -> Self {
        Self::start_on(
            TestDb::new(backend).await,
            tempfile::tempdir().unwrap(),
            sops,
        )
        .await
    }

    /// Starts the services on an existing database and data directory, as a restart does.
    pub async fn start_on(db: TestDb, data: tempfile::TempDir, sops: &[(&str, &str)]) -> Self {
        Self::start_with(db, data, sops, Arc::new(ProcessSandbox::default()), |_| {}).await
    }

    /// Starts with a runner on `sandbox` whose options `configure` adjusts (roles,
    /// profiles, prices, limits).
    pub async fn start_with(
        db: TestDb,
        data: tempfile::TempDir,
        sops: &[(&str, &str)],
        sandbox: Arc<dyn Sandbox>,
        configure: impl FnOnce(&mut RunnerOptions),
    ) -> Self {
        let sop_dir = data.path().join("sops");
        std::fs::create_dir_all(&sop_dir).unwrap();
        for (name, text) in sops {
            std::fs::write(sop_dir.join(format!("{name}.yaml")), text).unwrap();
        }
        let (catalog, errors) = Catalog::load(&[&sop_dir]);
        assert!(errors.is_empty(), "{errors:?}");
        let bus: Arc<dyn Bus> = Arc::new(InProcessBus::new(db.store.clone()));
        let mut options = RunnerOptions {
            concurrency: 2,
            ack_wait: Duration::from_secs(2),
            ..RunnerOptions::new(data.path().to_owned())
        };
        configure(&mut options);
        let services = Services::start_runner(&db.store, bus, catalog, sandbox, options);
        Self { db, data, services }
    }

    /// Writes `event` to the outbox, as a service would emit it.
    pub async fn emit(&self, event: Event) {
        let mut tx = self.db.store.begin().await.unwrap();
        tx.append_outbox(&Envelope::new("test", &event, None).unwrap())
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    /// Requests a run of `sop` as bob.
    pub async fn request(&self, sop: &str) -> Uuid {
        let run_id = Uuid::now_v7();
        self.emit(Event::RunRequested(RunRequested {
            run_id,
            sop: sop.into(),
            params: BTreeMap::new(),
            requirement_id: None,
            requested_by: actor("bob"),
            schedule: None,
            parent: None,
        }))
        .await;
        run_id
    }

    /// Decides a gate as ana (a lead).
    pub async fn decide(
        &self,
        run_id: Uuid,
        node: &str,
        attempt: u32,
        decision: GateDecisionKind,
        comment: Option<&str>,
    ) {
        self.emit(Event::GateDecision(GateDecision {
            run_id,
            node: node.into(),
            attempt,
            decision,
            comment: comment.map(Into::into),
            actor: actor("ana"),
            groups: vec!["leads".into()],
        }))
        .await;
    }

    /// Sends a run command as ana.
    pub async fn command(&self, run_id: Uuid, command: RunCommandKind) {
        self.emit(Event::RunCommand(RunCommand {
            run_id,
            command,
            actor: actor("ana"),
        }))
        .await;
    }

    /// Waits until the run's state satisfies `done`.
    pub async fn wait(
        &self,
        run_id: Uuid,
        what: &str,
        done: impl Fn(&RunRow, &serde_json::Value) -> bool,
    ) -> serde_json::Value {
        for _ in 0..1500 {
            if let Some(row) = self.db.store.run(run_id).await.unwrap() {
                let state: serde_json::Value = serde_json::from_str(&row.state).unwrap();
                if done(&row, &state) {
                    return state;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let row = self.db.store.run(run_id).await.unwrap();
        panic!("timed out waiting for {what}: {row:#?}");
    }

    /// Waits until the run has `status`.
    pub async fn wait_status(&self, run_id: Uuid, status: &str) -> serde_json::Value {
        self.wait(run_id, status, |row, _| row.status == status)
            .await
    }

    /// The text of a stored artifact.
    pub fn artifact(&self, run_id: Uuid, node: &str, attempt: u32, name: &str) -> String {
        std::fs::read_to_string(
            self.data
                .path()
                .join(format!("runs/{run_id}/artifacts/{node}/{attempt}/{name}")),
        )
        .unwrap()
    }

    /// Stops the services without cleaning up, as a crash would leave things.
    pub async fn halt(self) -> (TestDb, tempfile::TempDir) {
        self.services.stop().await;
        (self.db, self.data)
    }

    /// Stops the services and drops the database.
    pub async fn stop(self) {
        let (db, _) = self.halt().await;
        db.cleanup().await;
    }
}

/// An API actor who is the person `person`.
pub fn actor(person: &str) -> Actor {
    Actor {
        channel: Channel::Api,
        handle: person.into(),
        person: Some(person.into()),
    }
}
