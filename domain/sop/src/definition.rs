//! A validated SOP: the types the engine and the API work with.

use std::collections::BTreeMap;
use std::time::Duration;

pub use gatehouse_events::DeliverMode;
use indexmap::IndexMap;
use serde::Serialize;

use crate::feedback::FeedbackRules;
use crate::people;
use crate::{FeedbackRule, Param};

/// A validated SOP definition at one version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sop {
    /// Unique name, used to start it.
    pub name: String,
    /// One-line title for cards and listings.
    pub title: String,
    pub description: String,
    /// Default sandbox profile for its nodes.
    pub sandbox: String,
    /// Declared parameters, in file order.
    pub params: IndexMap<String, Param>,
    /// Who may start it (person ids and `group:<name>`), beside having run rights in the
    /// project; `None` when the file does not say, and then anyone with run rights may.
    pub starters: Option<Vec<String>>,
    /// What one run of it may spend at the model gateway (`budget: "$5"`), over all its
    /// agents' requests; the request past it is refused and its node fails saying so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<gatehouse_agent::Limit>,
    /// Nodes in file order.
    pub nodes: Vec<Node>,
    /// `sha256:<hex>` of the file's content: a run freezes this.
    pub version: String,
    /// Where it came from (a path or `builtin:<name>`).
    pub source: String,
    /// The YAML text the version hashes; stored with runs so they can be reloaded.
    #[serde(skip)]
    pub text: String,
    /// Why runs of it cannot start in this deployment (an agent role it names is not
    /// configured); set by [`crate::Catalog::require_roles`].
    #[serde(skip)]
    pub unavailable: Option<String>,
}

impl Sop {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Whether a run can start with `params`: required parameters given, no unknown ones,
    /// every value one its parameter's type accepts, and every agent role it names
    /// configured (when the catalog was told the roles). The message says what to change.
    pub fn check_start(&self, params: &BTreeMap<String, String>) -> Result<(), String> {
        if let Some(why) = &self.unavailable {
            return Err(why.clone());
        }
        let missing: Vec<&str> = self
            .params
            .iter()
            .filter(|(name, p)| p.required && p.default.is_none() && !params.contains_key(*name))
            .map(|(name, _)| name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "`{}` needs the parameters: {}",
                self.name,
                missing.join(", ")
            ));
        }
        if let Some(unknown) = params.keys().find(|k| !self.params.contains_key(*k)) {
            return Err(format!("`{}` has no parameter `{unknown}`", self.name));
        }
        for (name, param) in &self.params {
            if let Some(value) = params.get(name) {
                param.check(name, value)?;
            }
        }
        Ok(())
    }

    /// Whether `person`, a member of `groups`, may start it: anyone when it names no
    /// `starters`, else only those named directly or through a group. Run rights in the
    /// project are checked apart from this.
    pub fn may_start(&self, person: &str, groups: &[String]) -> bool {
        self.starters
            .as_ref()
            .is_none_or(|starters| people::names_person(starters, person, groups))
    }

    /// The parameters a run gets: the given ones over the declared defaults.
    pub fn params_with_defaults(
        &self,
        given: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        let mut params: BTreeMap<String, String> = self
            .params
            .iter()
            .filter_map(|(k, p)| p.default.clone().map(|d| (k.clone(), d)))
            .collect();
        params.extend(given.clone());
        params
    }

    /// The deliver node feedback on a run's pull request answers to, with its rules: the
    /// last `mode: pr` deliver node in file order (validation refuses rules on another).
    pub fn pull_request_node(&self) -> Option<(&Node, &FeedbackRules)> {
        self.nodes.iter().rev().find_map(|n| match &n.kind {
            NodeKind::Deliver {
                mode: DeliverMode::Pr,
                feedback,
                ..
            } => Some((n, feedback)),
            _ => None,
        })
    }

    /// The rule of the run's pull request node for `kind`, with that node.
    pub fn feedback_rule(
        &self,
        kind: gatehouse_events::FeedbackKind,
    ) -> Option<(&Node, &FeedbackRule)> {
        let (node, rules) = self.pull_request_node()?;
        rules.rule(kind).map(|rule| (node, rule))
    }

    /// The first 12 hex digits of the version, for people.
    pub fn short_version(&self) -> &str {
        let hex = self.version.trim_start_matches("sha256:");
        &hex[..hex.len().min(12)]
    }
}

/// Retries of a failing node before it counts as failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Retry {
    /// Extra attempts after the first.
    pub max: u32,
    /// Delay before the first retry; doubles for each further one.
    pub backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            max: 0,
            backoff: Duration::from_secs(5),
        }
    }
}

/// Rework on failure: send the work back to an earlier node instead of failing the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OnFailure {
    /// The earlier node to redo.
    pub send_back: String,
    /// How many times this may happen before the node fails for good.
    pub max: u32,
}

/// What happens when the infrastructure loses an attempt (its runner killed, its lease
/// run out, a shutdown past its grace) rather than the node failing on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnInterrupt {
    /// Run it again as a new attempt, up to `runner.interrupt_retries` times in a row,
    /// without counting against `retry`.
    #[default]
    Retry,
    /// Fail the attempt, as any failure: for a node whose effects must not happen twice.
    Fail,
}

/// One step of an SOP.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    /// Unique id within the SOP.
    pub id: String,
    /// Display title (the id when not given).
    pub title: String,
    /// Nodes that must succeed before this one is ready.
    pub needs: Vec<String>,
    /// Wall-clock limit per attempt.
    pub timeout: Option<Duration>,
    pub retry: Retry,
    /// Files under `$GATEHOUSE_ARTIFACTS` kept as outputs.
    pub artifacts: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Secrets the node may read.
    pub secrets: Vec<String>,
    pub on_failure: Option<OnFailure>,
    /// For work a runner does (script, agent, deliver); `retry` for the others, which no
    /// runner holds.
    pub on_interrupt: OnInterrupt,
    /// Sandbox profile override.
    pub sandbox: Option<String>,
    /// For an agent node, what happens when a budget refuses its model request: `None`,
    /// the node fails (`on_budget: fail`, the default); a gate, it waits for a person to
    /// raise the budget once (`on_budget: ask`), and runs again if one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_budget: Option<Gate>,
    pub kind: NodeKind,
}

impl Node {
    /// The gate this node's definition alone fixes: a gate node's own, or an agent
    /// node's ask to raise a budget (`on_budget: ask`). A deliver node's gate depends on
    /// what its pull request sent back, so it is not here: what shows or decides gates
    /// reads the gate in force from the engine (`gatehouse_engine::gate_in_force`).
    pub fn gate(&self) -> Option<&Gate> {
        match &self.kind {
            NodeKind::Gate(gate) => Some(gate),
            NodeKind::Deliver { .. } => None,
            _ => self.on_budget.as_ref(),
        }
    }

    /// Whether people may ever decide at this node: it has a [gate](Node::gate), or it is
    /// a deliver node whose failing checks or conflicts open one past their rule's `max`.
    pub fn has_gate(&self) -> bool {
        match &self.kind {
            NodeKind::Deliver { feedback, .. } => feedback.opens_gate(),
            _ => self.gate().is_some(),
        }
    }

    /// Whether this node is a gate node (not an agent node that may ask for a budget).
    pub fn is_gate(&self) -> bool {
        matches!(self.kind, NodeKind::Gate(_))
    }
}

/// What a node does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeKind {
    /// A shell script in the sandbox.
    Script {
        /// The script, run with `sh -c`.
        run: String,
    },
    /// People decide: approve, send back, reject.
    Gate(Gate),
    /// A child run of another SOP.
    Sop {
        /// The child SOP's name.
        sop: String,
        /// Parameters for the child.
        params: BTreeMap<String, String>,
        /// Child artifacts (`node/file`) copied into this node's artifacts.
        import: Vec<String>,
    },
    /// A coding agent (a configured role) given a prompt template.
    Agent {
        /// The role from the configuration.
        role: String,
        /// The prompt template.
        prompt: String,
    },
    /// Push the work branch and open or update a PR, or merge directly.
    Deliver {
        mode: DeliverMode,
        /// The target (base) branch; the repository default when not given.
        branch: Option<String>,
        /// With `mode: pr`: what a review, failing checks or a conflict on the pull
        /// request sends back (`on_review`, `on_checks_failed`, `on_conflict`).
        #[serde(skip_serializing_if = "FeedbackRules::is_empty")]
        feedback: FeedbackRules,
    },
}

impl NodeKind {
    /// The YAML name of the kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Script { .. } => "script",
            Self::Gate(_) => "gate",
            Self::Sop { .. } => "sop",
            Self::Agent { .. } => "agent",
            Self::Deliver { .. } => "deliver",
        }
    }
}

/// A human approval gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gate {
    /// Who may decide: person ids or `group:<name>`.
    pub approvers: Vec<String>,
    /// Distinct approvals needed.
    pub min_approvals: u32,
    /// Earlier nodes a reviewer may send the work back to.
    pub send_back: Vec<String>,
    /// Whether the requester may approve their own requirement.
    pub allow_requester: bool,
    /// The gate expires this long after it opens.
    pub expires_in: Option<Duration>,
    pub on_expire: OnExpire,
    /// How many times this gate may send work back before only approve or reject remain.
    pub max_rework: u32,
    /// Chat channels for the approval card, beside the default one.
    pub channels: Vec<String>,
    /// The artifacts people see where they decide, as `NODE/FILE` of upstream nodes: the
    /// gate's `evidence`, or else every artifact of the nodes it needs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

impl Gate {
    /// Whether `person` (with `groups`) may decide this gate: named directly, or through
    /// `group:<name>`. A gate without approvers may be decided by anyone known.
    pub fn allows(&self, person: &str, groups: &[String]) -> bool {
        self.approvers.is_empty() || people::names_person(&self.approvers, person, groups)
    }
}

/// What happens when a gate expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExpire {
    /// The run fails.
    Reject,
    /// The run continues.
    Approve,
}
