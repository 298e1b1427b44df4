//! What delivering needs from the runner, whichever kind of work delivers (a `deliver`
//! node, a conversation's `deliver`): why nothing can be delivered without GitHub, and the
//! values of every secret the configuration names for the work, whose addition a delivery
//! refuses to push.

use gatehouse_bus::HandlerError;
use uuid::Uuid;

use crate::runner::Runner;
use crate::secrets::Secrets;

/// Why nothing can be delivered by a runner without GitHub.
pub(crate) const NOT_CONFIGURED: &str =
    "deliver needs [github] with a token (and git_url) in the configuration";

impl Runner {
    /// The values of the secrets configured for the work being delivered, whose addition
    /// a delivery refuses: every configured role's, every node's of `run`'s SOP as it was
    /// frozen, and `declared` (the `deliver` node's own). One that is not set in the
    /// runner's environment cannot leak from it, and is left out.
    pub(crate) async fn delivery_secrets(
        &self,
        run: Option<Uuid>,
        declared: &[String],
    ) -> Result<Secrets, HandlerError> {
        let mut names: Vec<String> = declared.to_vec();
        for role in self.options.roles.values() {
            names.extend(role.secrets.iter().cloned());
        }
        if let Some(run) = run {
            names.extend(self.sop_secrets(run).await?);
        }
        names.sort();
        names.dedup();
        // Unlike a sandbox's, an unset one is no one's mistake here: nothing to warn of.
        let values = names
            .into_iter()
            .filter_map(|name| std::env::var(&name).ok().map(|value| (name, value)));
        Ok(Secrets::new(values))
    }

    /// The secrets the nodes of `run`'s frozen SOP declare.
    async fn sop_secrets(&self, run: Uuid) -> Result<Vec<String>, HandlerError> {
        let Some(row) = self.store.run(run).await? else {
            return Ok(Vec::new());
        };
        let Some((source, body)) = self.store.sop_version_body(&row.sop_version).await? else {
            return Ok(Vec::new());
        };
        match gatehouse_sop::parse(&source, &body) {
            Ok(sop) => Ok(sop.nodes.into_iter().flat_map(|n| n.secrets).collect()),
            Err(err) => {
                tracing::warn!(%run, error = %err, "the run's frozen SOP does not parse; its secrets are not looked for in the delivery");
                Ok(Vec::new())
            }
        }
    }
}
