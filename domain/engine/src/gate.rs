//! The one place that says which gate people decide at a node of a run: the engine holds
//! decisions to it, the scheduler opens it, and every card, inbox, list and status comment
//! shows it, so none of them names someone who cannot decide that opening.

use std::borrow::Cow;

use gatehouse_sop::{Gate, Node, NodeKind};

use crate::NodeState;

/// The gate in force at node `def` of a run, in state `node`: a gate node's own, an agent
/// node's ask to raise its budget, or a deliver node's while it answers failing checks or
/// a conflict, held to that kind's rule (its approvers, its target). `None` for a node
/// people never decide, and for a deliver node answering nothing a person decides (no
/// feedback, or a review).
pub fn gate_in_force<'a>(def: &'a Node, node: &NodeState) -> Option<Cow<'a, Gate>> {
    match &def.kind {
        NodeKind::Deliver { feedback, .. } => {
            let answering = node.answering.as_ref()?;
            feedback.gate_for(answering.kind).map(Cow::Owned)
        }
        _ => def.gate().map(Cow::Borrowed),
    }
}
