//! The scheduler service.
//!
//! Its heart is the [`engine`]: a pure state machine that takes a run's state and one
//! input (a node finished, a gate decision, a person's command) and returns the new state
//! and the commands that follow (dispatch a node, open a gate, schedule a retry). It does
//! no I/O, so every rule of DESIGN.md's SOP semantics is tested directly, including with
//! random graphs and random decisions.

pub mod engine;
