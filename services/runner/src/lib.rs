//! The runner service.
//!
//! Runners take jobs from the work queue and run them in a sandbox. The queue loop
//! ([`queue`]) takes every kind of work ([`work::Work`]) the same way: one durable consumer
//! per kind, the job slots shared, each job's lease kept alive while it runs, then settled;
//! a job that cannot be read is parked. The kinds of work are:
//!
//! - node jobs ([`nodes`]): `node.dispatch`, each running one attempt of a node, storing its
//!   output and artifacts, and reporting `node.progress` when it starts and `node.finished`
//!   when it ends. A job whose runner died comes back and is reported as interrupted, so the
//!   engine decides whether a new attempt follows; an attempt is never run twice. Runners
//!   also watch run snapshots and stop attempts the scheduler no longer wants (cancel,
//!   fail-fast, send back).
//! - conversations' turns ([`turns`]): `turn.dispatch`, run the same way.
//!
//! Both use the services at the crate root rather than each other: what a job works on
//! ([`scope`]), the secrets it declares ([`secrets`]), what delivering needs
//! ([`delivering`], [`deliver`]), the workspaces' names ([`workspaces`]) and their
//! checkpoints ([`checkpoint`]), where their files live ([`files`]). The [`runner`] holds
//! what every kind shares and is how the service is built.

mod agent;
mod artifacts;
#[doc(hidden)]
pub mod bench;
mod checkpoint;
mod deliver;
mod delivering;
mod durably;
mod files;
mod git;
mod gitdir;
mod logs;
mod nodes;
mod observe;
mod outcome;
mod patience;
mod queue;
mod runner;
mod scope;
mod scratch;
mod secrets;
mod turns;
mod work;
mod workspaces;

pub use deliver::Deliverer;
pub use runner::{Runner, RunnerOptions};
