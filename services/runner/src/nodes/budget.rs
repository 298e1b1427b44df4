//! A node attempt's budgets: its role's, its run's and its project's day, as a ledger
//! its agent's model requests are admitted and charged against.

use std::sync::Arc;

use gatehouse_agent::Role;
use gatehouse_bus::HandlerError;

use super::attempt::{Attempt, Program};
use crate::network::{Ledger, NoteTo};

impl Attempt<'_> {
    /// The ledger for an agent node whose role reaches its model through the gateway;
    /// `None` for anything else or when no budget applies. Its 80 % notes go to the
    /// attempt's output.
    pub(super) async fn budget(
        &self,
        program: Program<'_>,
        role: Option<&Role>,
    ) -> Result<Option<Arc<Ledger>>, HandlerError> {
        let (Program::Agent(agent), Some(role)) = (program, role) else {
            return Ok(None);
        };
        if role.provider.is_none() {
            return Ok(None);
        }
        let (runner, job) = (&self.nodes.runner, self.job);
        let scoped = runner
            .options
            .budgets
            .for_node(
                &runner.store,
                job.run_id,
                &job.node,
                job.attempt,
                Some((agent.role.as_str(), role.budget)),
            )
            .await?;
        Ok(runner.ledger(
            scoped,
            NoteTo::Node {
                run: job.run_id,
                node: job.node.clone(),
                attempt: i32::try_from(job.attempt).unwrap_or(i32::MAX),
            },
        ))
    }
}
