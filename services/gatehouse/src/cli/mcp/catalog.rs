//! Every tool of `gatehouse mcp` in one list: its name, what it does, its parameters'
//! schema, the scope the API wants for it, and whether only a person's own token is
//! offered it. `tools/list` shows those the token can use; `tools/call` dispatches here.

use std::sync::Arc;

use gatehouse_ingest::views::{Scope, WhoAmI};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use super::answer::Outcome;
use super::{artifacts, checks, gates, requirements, runs};
use crate::cli::client::Client;

/// One tool.
pub(crate) struct Spec {
    name: &'static str,
    description: &'static str,
    /// The scope the API wants for what it calls.
    needs: Scope,
    /// Offered only to a token of a person's own, never one made for an agent.
    person_only: bool,
    /// Only reads.
    read_only: bool,
    schema: fn() -> Arc<JsonObject>,
    call: Call,
}

/// Which function a tool runs.
#[derive(Clone, Copy)]
enum Call {
    ListRuns,
    ShowRun,
    RunLogs,
    ListArtifacts,
    ReadArtifact,
    ListRequirements,
    ShowRequirement,
    ListGates,
    StartRun,
    SendCommand,
    DecideGate,
}

/// The tools, in the order `tools/list` shows them.
pub(crate) const ALL: &[Spec] = &[
    Spec {
        name: "list_runs",
        description: "List Gatehouse runs, newest first, optionally by status, project or SOP.",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<runs::ListRuns>,
        call: Call::ListRuns,
    },
    Spec {
        name: "show_run",
        description: "Show a run: its nodes with status and attempts, the tools its agents called, its artifacts and gate decisions.",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<runs::OneRun>,
        call: Call::ShowRun,
    },
    Spec {
        name: "run_logs",
        description: "The last lines of a run's output (of one node when given), bounded.",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<runs::RunLogs>,
        call: Call::RunLogs,
    },
    Spec {
        name: "list_artifacts",
        description: "List the files a run's nodes produced (reports, diffs, results).",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<runs::OneRun>,
        call: Call::ListArtifacts,
    },
    Spec {
        name: "read_artifact",
        description: "Read a run's text artifact, cut to a bound; binary artifacts are refused.",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<artifacts::ReadArtifact>,
        call: Call::ReadArtifact,
    },
    Spec {
        name: "list_requirements",
        description: "List requirements (what people asked for: GitHub issues, chat threads), newest first.",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<requirements::ListRequirements>,
        call: Call::ListRequirements,
    },
    Spec {
        name: "show_requirement",
        description: "Show a requirement with its runs, pull requests, conversations and usage.",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<requirements::ShowRequirement>,
        call: Call::ShowRequirement,
    },
    Spec {
        name: "list_gates",
        description: "List approval gates waiting for a decision: by default those you may decide now.",
        needs: Scope::Read,
        person_only: false,
        read_only: true,
        schema: schema_for_type::<gates::ListGates>,
        call: Call::ListGates,
    },
    Spec {
        name: "start_run",
        description: "Start a run of an SOP with parameters, on a project.",
        needs: Scope::Run,
        person_only: false,
        read_only: false,
        schema: schema_for_type::<runs::StartRunArgs>,
        call: Call::StartRun,
    },
    Spec {
        name: "send_command",
        description: "Steer a run: cancel, pause or resume it, or retry a node with everything after it.",
        needs: Scope::Run,
        person_only: false,
        read_only: false,
        schema: schema_for_type::<runs::SendCommand>,
        call: Call::SendCommand,
    },
    Spec {
        name: "decide_gate",
        description: "Decide an approval gate as yourself: approve, reject, or send the work back to an earlier node, with a comment for the record. Read what the gate asks about first.",
        needs: Scope::Decide,
        person_only: true,
        read_only: false,
        schema: schema_for_type::<gates::DecideGate>,
        call: Call::DecideGate,
    },
];

/// The tool named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Spec> {
    ALL.iter().find(|spec| spec.name == name)
}

/// Every tool's name, for a message.
pub(crate) fn names() -> String {
    ALL.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

impl Spec {
    /// Whether `tools/list` shows it to this token: it has the scope, and for a
    /// person-only tool it was not made for an agent.
    pub(crate) fn offered_to(&self, who: &WhoAmI) -> bool {
        who.scopes.contains(&self.needs) && !(self.person_only && who.for_agent)
    }

    /// As MCP lists it.
    pub(crate) fn tool(&self) -> Tool {
        Tool::new(self.name, self.description, (self.schema)()).with_annotations(
            ToolAnnotations::new()
                .read_only(self.read_only)
                .destructive(!self.read_only)
                .open_world(false),
        )
    }

    /// Runs it with these arguments.
    pub(crate) async fn call(&self, client: &Client, arguments: Value) -> Outcome {
        use checks::arguments as args;
        match self.call {
            Call::ListRuns => runs::list(client, args(arguments)?).await,
            Call::ShowRun => runs::show(client, args(arguments)?).await,
            Call::RunLogs => runs::logs(client, args(arguments)?).await,
            Call::ListArtifacts => artifacts::list(client, args(arguments)?).await,
            Call::ReadArtifact => artifacts::read(client, args(arguments)?).await,
            Call::ListRequirements => requirements::list(client, args(arguments)?).await,
            Call::ShowRequirement => requirements::show(client, args(arguments)?).await,
            Call::ListGates => gates::list(client, args(arguments)?).await,
            Call::StartRun => runs::start(client, args(arguments)?).await,
            Call::SendCommand => runs::command(client, args(arguments)?).await,
            Call::DecideGate => gates::decide(client, args(arguments)?).await,
        }
    }
}
