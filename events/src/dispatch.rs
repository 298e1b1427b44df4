//! `node.dispatch`: the job a runner executes, typed per kind of node, so the scheduler
//! that writes it and the runner that reads it agree on it at compile time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `node.dispatch`: a job for a runner. It carries everything the runner needs, so runners
/// never read the scheduler's tables.
///
/// Jobs written before the spec was typed (a top-level `kind` beside an untyped `spec`) may
/// still be in a work queue when Gatehouse is upgraded; they are read as well (see
/// [`Wire`]), so an upgrade loses no queued work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Wire")]
pub struct NodeDispatch {
    pub run_id: Uuid,
    pub node: String,
    /// Attempt being dispatched; a runner reports results under it.
    pub attempt: u32,
    /// Sandbox profile name, frozen with the run.
    pub sandbox: String,
    /// What to run; its `kind` says which of the node kinds runners execute it is.
    pub spec: NodeSpec,
    /// Environment the node declared, already rendered.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of secrets the node declared; values are resolved by the runner.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Wall-clock limit in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// The work of a node, one variant per kind of node runners execute. Gates and `sop` nodes
/// are the scheduler's own and never dispatched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeSpec {
    /// A shell script in the sandbox.
    Script(ScriptSpec),
    /// A coding agent in the sandbox, on a prompt rendered from the node's template.
    Agent(AgentSpec),
    /// The workspace handed to the requirement's repository.
    Deliver(DeliverSpec),
}

impl NodeSpec {
    /// The node kind's name (`script`, `agent`, `deliver`), as the SOP and the wire spell
    /// it; metrics label attempts with it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Script(_) => "script",
            Self::Agent(_) => "agent",
            Self::Deliver(_) => "deliver",
        }
    }
}

/// What a node run in the sandbox (a script or an agent) works with, whichever it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxWork {
    /// Files the node must leave under `$GATEHOUSE_ARTIFACTS`.
    pub artifacts: Vec<String>,
    /// Upstream nodes and the attempt whose artifacts are this node's inputs.
    pub inputs: BTreeMap<String, u32>,
    /// The reviewer's comment for this attempt, when work was sent back to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rework_comment: Option<String>,
    /// The run's parameters.
    pub params: BTreeMap<String, String>,
}

/// A `script` node's job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptSpec {
    /// The script, run with `sh -c`.
    pub run: String,
    /// Its artifacts, inputs, rework comment and parameters.
    #[serde(flatten)]
    pub work: SandboxWork,
}

/// An `agent` node's job: the role's CLI is what runs, on the rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// The role's name under `[roles]`, looked up (and frozen) by the runner.
    pub role: String,
    /// The prompt template, rendered by the runner over what the node knows.
    pub prompt: String,
    /// Its artifacts, inputs, rework comment and parameters.
    #[serde(flatten)]
    pub work: SandboxWork,
}

/// A `deliver` node's job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliverSpec {
    /// How the work is handed over.
    pub mode: DeliverMode,
    /// The target (base) branch; the repository's default when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The feedback this delivery answers (the run was sent back by it): once pushed, the
    /// pull request is told what changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<crate::Feedback>,
}

/// How a `deliver` node hands over the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliverMode {
    /// Push a work branch and open or update a pull request.
    Pr,
    /// Merge into the branch after a conflict check.
    Direct,
}

/// `node.dispatch` as it is read: today's shape, or the earlier one where `kind` stood
/// beside a `spec` of the runner's loose fields (an agent's `role` and `prompt` under
/// `agent`, a delivery's options under `deliver`).
#[derive(Deserialize)]
struct Wire {
    run_id: Uuid,
    node: String,
    attempt: u32,
    sandbox: String,
    #[serde(default)]
    kind: Option<String>,
    spec: serde_json::Value,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// The `agent` part of an earlier script-shaped spec.
#[derive(Deserialize)]
struct EarlierAgent {
    role: String,
    prompt: String,
}

impl TryFrom<Wire> for NodeDispatch {
    type Error = serde_json::Error;

    fn try_from(wire: Wire) -> Result<Self, Self::Error> {
        let spec = match wire.kind.as_deref() {
            None => serde_json::from_value(wire.spec)?,
            Some("deliver") => NodeSpec::Deliver(serde_json::from_value(
                wire.spec.get("deliver").cloned().unwrap_or_default(),
            )?),
            Some(_) => match wire.spec.get("agent").filter(|a| !a.is_null()).cloned() {
                Some(agent) => {
                    let EarlierAgent { role, prompt } = serde_json::from_value(agent)?;
                    let work = serde_json::from_value(wire.spec)?;
                    NodeSpec::Agent(AgentSpec { role, prompt, work })
                }
                None => NodeSpec::Script(serde_json::from_value(wire.spec)?),
            },
        };
        Ok(Self {
            run_id: wire.run_id,
            node: wire.node,
            attempt: wire.attempt,
            sandbox: wire.sandbox,
            spec,
            env: wire.env,
            secrets: wire.secrets,
            timeout_secs: wire.timeout_secs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs queued by the release before typed specs: a script, an agent and a delivery.
    #[test]
    fn earlier_jobs_are_read() {
        let job = |kind: &str, spec: serde_json::Value| -> NodeDispatch {
            serde_json::from_value(serde_json::json!({
                "run_id": "0190a1b2-0000-7000-8000-000000000001", "node": "n", "attempt": 2,
                "sandbox": "default", "kind": kind, "spec": spec,
            }))
            .unwrap()
        };
        let script = job(
            "script",
            serde_json::json!({ "run": "make", "artifacts": ["a.md"], "inputs": { "up": 1 },
                "params": { "repo": "acme/app" }, "rework_comment": "again" }),
        );
        let NodeSpec::Script(s) = &script.spec else {
            panic!("{script:?}")
        };
        assert_eq!(s.run, "make");
        assert_eq!(s.work.artifacts, ["a.md"]);
        assert_eq!(s.work.inputs["up"], 1);
        assert_eq!(s.work.params["repo"], "acme/app");
        assert_eq!(s.work.rework_comment.as_deref(), Some("again"));
        let agent = job(
            "agent",
            serde_json::json!({ "run": "", "agent": { "role": "coder", "prompt": "Fix it." },
                "artifacts": ["plan.md"] }),
        );
        assert_eq!(
            agent.spec,
            NodeSpec::Agent(AgentSpec {
                role: "coder".into(),
                prompt: "Fix it.".into(),
                work: SandboxWork {
                    artifacts: vec!["plan.md".into()],
                    ..SandboxWork::default()
                },
            })
        );
        let deliver = job(
            "deliver",
            serde_json::json!({ "deliver": { "mode": "direct", "branch": "main" } }),
        );
        assert_eq!(
            deliver.spec,
            NodeSpec::Deliver(DeliverSpec {
                mode: DeliverMode::Direct,
                branch: Some("main".into()),
                answer: None,
            })
        );
        // Today's jobs read back as they were written.
        let today = serde_json::to_value(&deliver).unwrap();
        assert!(today.get("kind").is_none(), "{today}");
        assert_eq!(
            serde_json::from_value::<NodeDispatch>(today).unwrap(),
            deliver
        );
    }

    #[test]
    fn kind_is_the_wire_tag() {
        let specs = [
            NodeSpec::Script(ScriptSpec::default()),
            NodeSpec::Agent(AgentSpec {
                role: "coder".into(),
                prompt: "Do it.".into(),
                work: SandboxWork::default(),
            }),
            NodeSpec::Deliver(DeliverSpec {
                mode: DeliverMode::Pr,
                branch: None,
                answer: None,
            }),
        ];
        for spec in specs {
            let wire = serde_json::to_value(&spec).unwrap();
            assert_eq!(wire["kind"], spec.kind());
            assert_eq!(serde_json::from_value::<NodeSpec>(wire).unwrap(), spec);
        }
    }
}
