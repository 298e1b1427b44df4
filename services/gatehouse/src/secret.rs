//! Secrets in configuration, shared with the projects' repositories
//! ([`gatehouse_secret`]).

pub use gatehouse_secret::{Secret, SecretError};
