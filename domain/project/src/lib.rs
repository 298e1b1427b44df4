//! Projects: what a team's code is and who may work on it.
//!
//! A project names its repositories (each with a branch mode), the chat channels that work
//! on it, the SOPs it allows, the settings its SOPs read, and who may run, converse and
//! approve. Every request that names code — an API or CLI start, a chat command, a GitHub
//! issue, a schedule — is resolved here into the [`RunWorkspace`] its run is frozen with,
//! or refused with a message that says what to change. A repository is reached only when a
//! project lists it.
//!
//! [`RunWorkspace`]: gatehouse_events::RunWorkspace

mod config;
mod error;
mod projects;
pub mod remote;
mod resolve;

pub use config::{ProjectConfig, RepositoryConfig, Right};
pub use error::{ConfigError, ResolveError};
pub use projects::{Project, Projects, is_branch_name};
pub use resolve::{Request, check_sop};
