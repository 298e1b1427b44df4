//! What a `node.dispatch` asks for, as the runner reads it.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::agent::AgentSpec;

/// The script and agent part of [`gatehouse_events::NodeDispatch::spec`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ScriptSpec {
    /// The script.
    pub run: String,
    /// Files the node must leave under `$GATEHOUSE_ARTIFACTS`.
    pub artifacts: Vec<String>,
    /// Upstream nodes and the attempt whose artifacts are this node's inputs.
    pub inputs: BTreeMap<String, u32>,
    /// The reviewer's comment for this attempt.
    pub rework_comment: Option<String>,
    /// The run's parameters.
    pub params: BTreeMap<String, String>,
    /// For agent nodes: the role and the prompt template.
    pub agent: Option<AgentSpec>,
}
