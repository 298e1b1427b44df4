//! A turn's budgets: its role's per attempt and its project's day.

use std::sync::Arc;

use gatehouse_agent::Role;
use gatehouse_events::TurnDispatch;

use super::Turns;
use super::turn::Turn;
use crate::network::{Ledger, NoteTo};

impl Turns {
    /// The ledger a turn's model requests count against; `None` when no budget applies
    /// or the role reaches no model through the gateway.
    pub(super) fn turn_budget(
        &self,
        job: &TurnDispatch,
        turn: &Turn<'_>,
        role: &Role,
    ) -> Option<Arc<Ledger>> {
        role.provider.as_ref()?;
        let scoped = self.runner.options.budgets.for_turn(
            job.conversation_id,
            i64::try_from(turn.seq).unwrap_or(i64::MAX),
            turn.attempt,
            &job.workspace.project,
            (turn.role, role.budget),
        );
        // A turn's notes are kept and joined to its reply's progress at the end.
        self.runner.ledger(scoped, NoteTo::Kept)
    }
}
