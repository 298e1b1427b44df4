//! Bodies of `/sops`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An SOP that can be started.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SopView {
    /// Name.
    pub name: String,
    /// Title.
    pub title: String,
    /// Version.
    pub version: String,
    /// Where it came from.
    pub source: String,
    /// How many nodes it has.
    #[serde(default)]
    pub nodes: usize,
    /// Why it cannot start now, if it cannot.
    pub unavailable: Option<String>,
}

/// An SOP file that was left out: it starts nothing until it is fixed.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InvalidSopView {
    /// The file.
    pub file: String,
    /// Each problem as `FILE:LINE:COLUMN: message`.
    pub problems: Vec<String>,
}

/// What `POST /sops/reload` found.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReloadView {
    /// SOPs offered now.
    pub sops: usize,
    /// SOPs not offered before.
    pub added: Vec<String>,
    /// SOPs offered before with another version.
    pub changed: Vec<String>,
    /// SOPs no longer offered.
    pub removed: Vec<String>,
    /// The files left out, with their problems.
    pub invalid: Vec<InvalidSopView>,
}
