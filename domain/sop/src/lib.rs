//! SOP definitions.
//!
//! A standard operating procedure is a YAML file: a graph of `script`, `gate`, `sop`,
//! `agent` and `deliver` nodes joined by `needs`, with send-back edges from gates (from
//! failing nodes, and from a deliver node's rules for feedback on its pull request) to
//! earlier nodes. This crate parses that format, validates it with
//! messages that carry file, line and column, versions each definition by a hash of its
//! content, and holds the SOPs built into the binary. It does no I/O beyond reading the
//! directories it is given.

mod artifact;
mod catalog;
mod definition;
mod diagnostic;
mod feedback;
mod graph;
mod library;
mod param;
mod parse;
mod people;
mod quote;
mod raw;

pub use artifact::check_artifact_name;
pub use catalog::Catalog;
pub use definition::{
    DeliverMode, Gate, Node, NodeKind, OnExpire, OnFailure, OnInterrupt, Retry, Sop,
};
pub use diagnostic::{Diagnostic, SopError};
pub use feedback::{FeedbackRule, FeedbackRules};
pub use library::{FilesStamp, Library, Loader, Reloaded};
pub use param::{Param, ParamType, Pattern};
pub use parse::parse;
pub use people::{check_person_or_group, names_person};
