//! Kilo (`@kilocode/cli` on npm), a fork of OpenCode with the same `run` command, JSON
//! events and configuration under `KILO_*` names.
//!
//! The command line is OpenCode's ([`super::opencode`] documents each flag) with `kilo` as
//! the program and the configuration in `KILO_CONFIG_CONTENT`; its output is read by
//! OpenCode's readers, which name Kilo in their messages.
//!
//! What differs is the environment. Kilo reaches for more services of its own at start
//! (presence, session ingest, codebase indexing, a background daemon) and each is turned
//! off by a variable (names read from its 7.7.7 binary). Unlike OpenCode, its retries of a
//! failed model request can be bounded: `KILO_SESSION_RETRY_LIMIT` carries the role's
//! `max_retries` (with 1, a gateway answering 500 got 2 requests, then Kilo printed its
//! `error` event and exited 1). A run takes 16–18 s against a local provider, most of it
//! before the first request.
//!
//! A role's `permissions` are enforced as OpenCode's are (`opencode/permissions.rs`): the
//! same plugin, in `~/.config/kilo/plugins/`, asking `gatehouse-acp hook kilo`, which knows
//! Kilo's own tools (`background_process` runs commands).
//!
//! Its state is `~/.local/share/kilo/` (sessions in the SQLite database `kilo.db`) and
//! `~/.config/kilo/`; sessions are rows, not files, so the runner cannot tell whether a
//! home holds one.

use super::opencode::{self, Flavour};
use super::{Call, Cli, ModelApi};
use crate::permission::hook::Hook;
use crate::role::Role;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

pub(super) struct Kilo;

/// Kilo's names for what OpenCode calls `opencode` and `OPENCODE_CONFIG_CONTENT`.
const KILO: Flavour = Flavour {
    program: "kilo",
    config_variable: "KILO_CONFIG_CONTENT",
    project_config_off: "KILO_DISABLE_PROJECT_CONFIG",
    config_dir: ".config/kilo",
    plugin_package: "@kilocode/plugin",
    hook: Hook::Kilo,
};

impl Cli for Kilo {
    fn name(&self) -> &'static str {
        "kilo"
    }

    fn program(&self) -> Option<&'static str> {
        Some("kilo")
    }

    /// Its platform package must be the same version, which npm does not always find
    /// (7.8.1's were missing); name both when pinning.
    fn install(&self) -> Option<&'static str> {
        Some("npm install -g @kilocode/cli")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::Anthropic, ModelApi::OpenAi]
    }

    /// OpenCode's switches under Kilo's names (no update, no model catalogue fetch, no
    /// sharing, no language-server download), and Kilo's own services off: its session
    /// ingest, presence, codebase indexing, telemetry and the daemon `run` would otherwise
    /// start or join. `KILO_SESSION_RETRY_LIMIT` bounds its retries of a failed request.
    fn environment(&self, role: &Role) -> Vec<(String, String)> {
        let mut variables = super::pairs(&[
            ("KILO_DISABLE_AUTOUPDATE", "true"),
            ("KILO_DISABLE_MODELS_FETCH", "true"),
            ("KILO_DISABLE_SHARE", "true"),
            ("KILO_DISABLE_LSP_DOWNLOAD", "true"),
            ("KILO_DISABLE_SESSION_INGEST", "true"),
            ("KILO_DISABLE_CODEBASE_INDEXING", "true"),
            ("KILO_DISABLE_PRESENCE", "1"),
            ("KILO_TELEMETRY_LEVEL", "off"),
            ("KILO_NO_DAEMON", "1"),
        ]);
        variables.push((
            "KILO_SESSION_RETRY_LIMIT".to_owned(),
            role.retries().to_string(),
        ));
        variables
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        opencode::command_line(&KILO, role, call)
    }

    /// OpenCode's plugin, in `~/.config/kilo/plugins/`, answered with Kilo's tool names.
    fn permission_hook(&self) -> Option<Hook> {
        Some(KILO.hook)
    }

    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"$HOME/.agents/skills\""]
    }

    fn events(&self) -> Box<dyn Events> {
        Box::new(opencode::events::Reader::new(KILO.program))
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        opencode::report::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::Kilo, text))
    }
}
