//! A role's `permissions` for OpenCode and Kilo: a plugin that asks Gatehouse before every
//! tool call.
//!
//! Neither CLI runs a command before a tool call, but both load JS plugins from
//! `{plugin,plugins}/*.{ts,js}` in their configuration folder and await each plugin's
//! `"tool.execute.before"` before a call (built-in tools, MCP tools and MCP resources
//! alike); a throw refuses the call, and its message is the tool result the model reads.
//! The plugin ([`PLUGIN`], `permissions.js`) sends `{"tool", "args", "mcp"}` to
//! [`Hook::command`] and throws unless the answer is an allow (`hook/opencode.rs` reads
//! the event and writes the answer).
//!
//! What the command line changes when a role has `permissions` (all read from the pinned
//! binaries, and tested with them):
//!
//! - No `--pure`: it skips every plugin, ours too.
//! - `*_DISABLE_PROJECT_CONFIG=true`: without `--pure` the workspace's `.opencode/plugins`
//!   (`.kilo/`, `.kilocode/`) and `opencode.json` `plugin` entries would load as well —
//!   code of the workspace's, or of the agent's own making, running in the CLI's process
//!   after our hook. The workspace's `AGENTS.md` is then not read either.
//! - `permission: {"*": "deny"}` in the configuration, which the plugin's `config` hook
//!   turns into allow when it loads: a plugin that does not load leaves no tool to call.
//!   OpenCode's own asks are answered by `--auto` (`opencode run` rejects them without
//!   it); after the plugin's allow nothing else is in the way.
//! - Before loading a plugin it installs `@opencode-ai/plugin` into the folder and waits
//!   for that install; in a sandbox without a network it took 71 s to fail. It skips the
//!   install when `node_modules/` exists and `package-lock.json` lists the package, so the
//!   command line writes both (the plugin imports nothing from it).
//! - Other plugin files in the folder are removed first: only Gatehouse's runs.

use serde_json::{Value, json};

use super::Flavour;
use crate::McpServer;
use crate::executor::home_file;

/// The plugin, with its command and MCP servers still to fill in.
const PLUGIN: &str = include_str!("permissions.js");

/// Where the plugin goes, in the configuration folder.
const PLUGIN_FILE: &str = "plugins/gatehouse-permissions.js";

/// OpenCode's `permission` before the plugin loads: no tool.
pub(super) fn deny_all() -> Value {
    json!({"*": "deny"})
}

/// The shell steps that write the plugin (and what spares the install) under `$HOME`.
pub(super) fn setup(flavour: &Flavour, servers: &[McpServer]) -> String {
    let dir = flavour.config_dir;
    let lock = json!({"packages": {"": {"dependencies": {flavour.plugin_package: "*"}}}});
    [
        format!(
            "rm -rf \"$HOME\"/{}/plugin \"$HOME\"/{}/plugins",
            crate::invocation::quote(dir),
            crate::invocation::quote(dir)
        ),
        format!(
            "mkdir -p \"$HOME\"/{}/node_modules",
            crate::invocation::quote(dir)
        ),
        home_file(&format!("{dir}/package-lock.json"), &lock.to_string(), &[]),
        home_file(
            &format!("{dir}/{PLUGIN_FILE}"),
            &plugin(flavour, servers),
            &[],
        ),
    ]
    .join(" && ")
}

/// The plugin's source for `flavour` with `servers` (whose tools are `SERVER_TOOL`).
fn plugin(flavour: &Flavour, servers: &[McpServer]) -> String {
    let names: Vec<&str> = servers.iter().map(|server| server.name.as_str()).collect();
    PLUGIN
        .replace(
            "__GATEHOUSE_COMMAND__",
            &Value::String(flavour.hook.command()).to_string(),
        )
        .replace("__GATEHOUSE_MCP__", &json!(names).to_string())
}
