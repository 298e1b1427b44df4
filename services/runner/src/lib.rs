//! The runner service.
//!
//! Runners take `node.dispatch` jobs from the work queue, run each attempt in a sandbox,
//! store its output and artifacts, and report `node.progress` when it starts and
//! `node.finished` when it ends. A job keeps its lease alive while it runs; a job whose
//! runner died comes back and is reported as interrupted, so the engine decides whether a
//! new attempt follows; an attempt is never run twice. Runners also watch run snapshots and
//! stop attempts the scheduler no longer wants (cancel, fail-fast, send back). They run
//! conversations' turns the same way, from `turn.dispatch` jobs (see `turns`).

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
mod observe;
mod outcome;
mod patience;
mod runner;
mod scope;
mod secrets;
mod turns;
mod workspaces;

pub use deliver::Deliverer;
pub use runner::{Runner, RunnerOptions};
