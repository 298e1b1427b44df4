//! The one process harness of the binary-level tests, shared by each test binary as
//! `mod harness;`: the real `gatehouse` started, probed, driven through its CLI, restarted,
//! stopped and killed as an operator would.
//!
//! - [`Up`]: one `gatehouse up`, built with [`Up::builder`] (configuration text, SOPs,
//!   environment, a given directory, README's defaults), then driven by its verbs.
//! - [`Deployment`]: the processes of one distributed deployment (`gatehouse serve`).
//!
//! Both start and stop their processes with [`process`] and wait for them with [`http`].

#![allow(dead_code, unused_imports)] // each test binary uses a part

mod cli;
mod deployment;
pub mod http;
pub mod process;
mod up;

pub use deployment::Deployment;
pub use up::{Up, UpBuilder};
