//! GitHub webhooks: verified and stored before they are answered, then turned into
//! requirements, label-triggered runs and comment commands by
//! [`process_deliveries`](crate::process_deliveries).

mod conversation;
mod delivery;
mod feedback;
mod lookup;
mod pulls;
pub(crate) mod reconcile;
mod settings;
mod triggers;
mod webhook;

pub(crate) use delivery::process;
pub(crate) use lookup::{Lookup, LookupError, lookup, needs_lookup};
pub use reconcile::{ReconcileError, reconcile_github, reconcile_once};
pub use settings::{GithubSettings, RepoPatternError, Repositories, Trigger};
pub(crate) use webhook::receive;
