//! Roles: who an `agent` node's agent is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::executor::Executor;

/// `[roles.<name>]` in the configuration: the CLI an `agent` node runs, its model, the
/// standing instructions it gets and what it may reach. A run freezes its role as JSON, so
/// this round-trips through TOML and JSON alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub executor: Executor,
    /// The model to ask the CLI for; the CLI's own default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Standing instructions, given to the CLI as (part of) its system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Appended to the system prompt as a bulleted "Rules:" list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// Environment variables set for the CLI.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Names of the runner's secrets (its environment variables, e.g. `ANTHROPIC_API_KEY`)
    /// that the agent gets; no other secret reaches it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The `[providers.NAME]` the agent's model requests go to, through the runner's
    /// gateway: the sandbox gets the gateway's address and a token of its attempt, never the
    /// provider's key. Without one the CLI reaches its model on its own (with `secrets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The models the gateway lets this role ask for; any model when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// How often the CLI retries a failed model request before it gives up
    /// ([`DEFAULT_MAX_RETRIES`] unless set, at most [`MAX_RETRIES_LIMIT`]): a CLI that
    /// cannot reach its model fails in seconds, saying why, instead of retrying for
    /// minutes. Claude Code gets it as `CLAUDE_CODE_MAX_RETRIES`; Codex, for a role whose
    /// requests go through the gateway, as its provider's `request_max_retries` and
    /// `stream_max_retries`; Gemini CLI as `general.maxAttempts` (retries + 1, at most its
    /// 10). Copilot CLI has no such setting (it retries a failed request up to 5 times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Hosts this role's sandbox may reach besides its profile's `egress`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<String>,
    /// Sandbox profile for this role's nodes, overriding the SOP's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Executor `command` only: the argv to run, with the placeholders `{prompt_file}`,
    /// `{system_file}`, `{transcript_file}` (the conversation so far, for a turn of the
    /// assistant role; empty for SOP nodes) and `{model}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The CLI executors only (all but `command`): extra arguments appended to the CLI's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A conversation's `ask ROLE` runs this role on a throwaway copy of the workspace,
    /// discarded afterwards: it can read the work but changes nothing of it. SOP nodes
    /// ignore it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_only: bool,
    /// A conversation's `ask ROLE` may name this role. Off by default: a role made for
    /// SOP nodes (a deployer with its keys) is not anyone's to prompt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub askable: bool,
    /// An `ask` of this role gets its `secrets`. Off by default: an asked role runs
    /// without them, since whoever asks writes its prompt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ask_secrets: bool,
    /// What one attempt of this role may spend at the model gateway (`"$2"`,
    /// `"500k tokens"`); the gateway refuses the request past it, and the attempt fails
    /// saying so. A dollar budget needs the role's `model` priced in `[pricing]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::limit::Limit>,
    /// The `[skills.NAME]` this role's agent gets, besides its project's and the skills in
    /// its repositories' `.gatehouse/skills/`; copied into its sandbox where its CLI reads
    /// skills, and pinned with the run by content hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// The `[mcp.NAME]` servers this role's CLI gets, beside its project's and Gatehouse's
    /// own: their tools appear to the agent as `mcp__<NAME>__<tool>` (in Claude Code's
    /// terms). Executors `pi`, `aider` and `command` cannot be handed MCP servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<String>,
    /// Which tool calls the agent may make on its own, must have a person allow, or may not
    /// make (`src/permission.rs`); every call allowed when absent. Only executors that can
    /// enforce every rule take it ([`RoleError::PermissionsNotEnforced`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<crate::permission::Permissions>,
}

/// The retries a role's CLI makes of a failed model request unless `max_retries` says:
/// enough for a passing hiccup, few enough that an unreachable model fails the node in
/// seconds (the CLIs' own defaults, 10 for Claude Code, retry for minutes).
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// The most `max_retries` a role may set: past it a dead provider holds a node for many
/// minutes of back-off again.
pub const MAX_RETRIES_LIMIT: u32 = 20;

fn is_false(value: &bool) -> bool {
    !*value
}

/// Why a role cannot be used; each message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RoleError {
    /// A name in `skills` that no skill can have.
    #[error("`skills`: {0}")]
    Skill(crate::skill::SkillError),
    /// Executor `command` without an argv.
    #[error(
        "executor \"command\" needs `command`, the argv to run, e.g. \
         command = [\"my-agent\", \"--prompt\", \"{{prompt_file}}\"]"
    )]
    CommandMissing,
    /// Executor `acp` without the agent's argv.
    #[error(
        "executor \"acp\" needs `command`, the ACP agent's argv, e.g. command = [\"gemini\", \
         \"--acp\"] or [\"opencode\", \"acp\"]"
    )]
    AgentCommandMissing,
    /// A placeholder other than `{model}` in an `acp` agent's argv.
    #[error(
        "`command` argument {argument:?} uses {{{name}}}, but an \"acp\" agent's command takes \
         only {{model}}: the prompt, system text and transcript go through the protocol"
    )]
    AgentPlaceholder {
        /// The name between the braces.
        name: String,
        /// The argument it appears in.
        argument: String,
    },
    /// The argv's first element, the program, is blank.
    #[error("`command` starts with an empty program name; put the program to run first")]
    ProgramEmpty,
    /// `command` given to a CLI executor, which ignores it.
    #[error(
        "`command` is only read for executors \"command\" and \"acp\", not \"{executor}\"; \
         remove it, or use `args` to add arguments to the {executor} command line"
    )]
    CommandNotAllowed { executor: Executor },
    /// `args` given to executor `command`, which ignores it.
    #[error(
        "`args` is only read for the CLI executors (\"claude-code\", \"codex\", \"gemini\", \
         \"copilot\"); for executor \"command\", put the arguments in `command`"
    )]
    ArgsNotAllowed,
    /// A `{name}` in `command` that is not a placeholder.
    #[error(
        "`command` argument {argument:?} uses the unknown placeholder {{{name}}}; the \
         placeholders are {{prompt_file}}, {{system_file}}, {{transcript_file}} and {{model}}"
    )]
    UnknownPlaceholder {
        /// The name between the braces.
        name: String,
        /// The argument it appears in.
        argument: String,
    },
    /// `{model}` used while the role names no model.
    #[error("`command` uses {{model}} but the role has no `model`; set `model` or drop {{model}}")]
    ModelPlaceholderWithoutModel,
    /// `{system_file}` used while the role has no system text.
    #[error(
        "`command` uses {{system_file}} but the role has no `system_prompt` or `rules`; add \
         one or drop {{system_file}}"
    )]
    SystemPlaceholderWithoutSystem,
    /// `model = ""`.
    #[error("`model` is empty; remove it to use the CLI's default model")]
    ModelEmpty,
    /// `models = [..]` with a blank entry.
    #[error("`models` has an empty entry; list model names, or remove `models` to allow any")]
    ModelsEmptyEntry,
    /// `model` names a model that `models` does not allow.
    #[error("`model` {model:?} is not in the role's `models`; add it there or change `model`")]
    ModelNotAllowed {
        /// The role's model.
        model: String,
    },
    /// A `permissions` rule that does not parse, or too many.
    #[error(transparent)]
    Permission(#[from] crate::permission::PermissionsError),
    /// `permissions` on an executor whose CLI cannot enforce them.
    #[error(
        "executor \"{executor}\" cannot enforce `permissions` ({why}); use an executor \
         that can (claude-code, codex, gemini, copilot, opencode, kilo), or run the agent \
         over ACP (executor \"acp\", whose requests Gatehouse answers from the policy), or \
         remove `permissions`"
    )]
    PermissionsNotEnforced {
        executor: Executor,
        /// What the CLI lacks.
        why: &'static str,
    },
    /// A `permissions` rule the executor's CLI cannot say in its own terms.
    #[error(
        "executor \"{executor}\" cannot enforce the rule {rule:?} in `permissions.{list}`: {why}"
    )]
    PermissionRuleNotEnforced {
        executor: Executor,
        list: &'static str,
        rule: String,
        /// What to write instead.
        why: String,
    },
    /// `permissions` on an ACP agent whose `--mode` never asks, so the policy would never
    /// be consulted.
    #[error(
        "`args` sets `--mode {mode}`, in which the agent runs its tools without asking, so \
         its `permissions` would never be consulted; drop `--mode {mode}` or use a mode that \
         asks (Gemini's and Claude's `default`)"
    )]
    ModeNeverAsks { mode: String },
    /// `max_retries` over [`MAX_RETRIES_LIMIT`].
    #[error(
        "`max_retries` is {given}; at most {MAX_RETRIES_LIMIT} are allowed, since each retry \
         waits longer than the last (use a small number such as 3)"
    )]
    TooManyRetries {
        /// What the role said.
        given: u32,
    },
    /// A bad `mcp` list: a malformed, reserved or repeated name.
    #[error("`mcp`: {0}")]
    Mcp(#[from] crate::mcp::McpError),
    /// `mcp` on an executor whose CLI takes no MCP servers.
    #[error(
        "`mcp` names servers, but executor \"{executor}\" cannot be handed MCP servers; remove \
         `mcp`, or use an executor that can (claude-code, codex, gemini, copilot, opencode, \
         kilo, acp)"
    )]
    McpNotSupported { executor: Executor },
    /// A NUL character, which no command-line argument or prompt file can carry.
    #[error("`{field}` contains a NUL character; remove it")]
    Nul {
        /// The offending key.
        field: &'static str,
    },
}

impl Role {
    /// A role of `executor` with nothing else set: what a configuration naming only the
    /// executor gives, and the start of one built in code.
    pub fn new(executor: Executor) -> Self {
        Self {
            executor,
            model: None,
            system_prompt: None,
            rules: Vec::new(),
            env: BTreeMap::new(),
            secrets: Vec::new(),
            provider: None,
            max_retries: None,
            models: Vec::new(),
            egress: Vec::new(),
            sandbox: None,
            command: Vec::new(),
            args: Vec::new(),
            read_only: false,
            askable: false,
            ask_secrets: false,
            budget: None,
            skills: Vec::new(),
            mcp: Vec::new(),
            permissions: None,
        }
    }

    /// The names of the secrets a run of this role gets: all of `secrets` for an SOP node
    /// or an assistant's turn; for an `ask` (`asked`), none unless the role says
    /// `ask_secrets`.
    pub fn secrets_for(&self, asked: bool) -> &[String] {
        if asked && !self.ask_secrets {
            return &[];
        }
        &self.secrets
    }

    /// The retries the CLI makes of a failed model request: `max_retries`, else
    /// [`DEFAULT_MAX_RETRIES`].
    pub fn retries(&self) -> u32 {
        self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES)
    }

    /// The variables the CLI runs with before the role's own `env` (which wins): what
    /// its executor needs (`src/executor/`).
    pub fn cli_environment(&self) -> Vec<(String, String)> {
        self.executor.cli().environment(self)
    }

    /// The program the sandbox must have: the executor's (`claude`), or the first word of
    /// a `command` role's argv.
    pub fn program(&self) -> Option<&str> {
        self.executor
            .cli()
            .program()
            .or_else(|| self.command.first().map(String::as_str))
    }

    /// Checks what serde cannot: that the executor's own keys are consistent. Called when the
    /// configuration loads, so a role that [`crate::invocation`] would turn into a broken
    /// command line is refused before any run uses it.
    pub fn check(&self) -> Result<(), RoleError> {
        self.check_nul()?;
        if self.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(RoleError::ModelEmpty);
        }
        if let Some(given) = self.max_retries
            && given > MAX_RETRIES_LIMIT
        {
            return Err(RoleError::TooManyRetries { given });
        }
        if self.models.iter().any(|m| m.trim().is_empty()) {
            return Err(RoleError::ModelsEmptyEntry);
        }
        for skill in &self.skills {
            crate::skill::check_skill_name(skill).map_err(RoleError::Skill)?;
        }
        if let Some(model) = &self.model
            && !self.models.is_empty()
            && !self.models.contains(model)
        {
            return Err(RoleError::ModelNotAllowed {
                model: model.clone(),
            });
        }
        crate::mcp::check_mcp_list(&self.mcp)?;
        if !self.mcp.is_empty() && !self.executor.takes_mcp() {
            return Err(RoleError::McpNotSupported {
                executor: self.executor,
            });
        }
        if let Some(permissions) = &self.permissions {
            permissions.check()?;
            self.executor.cli().check_permissions(self, permissions)?;
        }
        self.executor.cli().check(self)
    }

    fn check_nul(&self) -> Result<(), RoleError> {
        let has_nul = |s: &str| s.contains('\0');
        let fields: [(&'static str, bool); 6] = [
            ("model", self.model.as_deref().is_some_and(has_nul)),
            (
                "system_prompt",
                self.system_prompt.as_deref().is_some_and(has_nul),
            ),
            ("rules", self.rules.iter().any(|r| has_nul(r))),
            ("command", self.command.iter().any(|a| has_nul(a))),
            ("args", self.args.iter().any(|a| has_nul(a))),
            ("models", self.models.iter().any(|m| has_nul(m))),
        ];
        match fields.into_iter().find(|(_, nul)| *nul) {
            Some((field, _)) => Err(RoleError::Nul { field }),
            None => Ok(()),
        }
    }

    /// The system text the agent gets: the system prompt, then the rules as a bulleted
    /// "Rules:" list. `None` when the role has neither, so no system file is written and the
    /// CLI keeps its own system prompt untouched. Has no trailing newline.
    pub fn system_text(&self) -> Option<String> {
        let prompt = self
            .system_prompt
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        let rules: Vec<&str> = self
            .rules
            .iter()
            .map(|r| r.trim())
            .filter(|r| !r.is_empty())
            .collect();
        if prompt.is_none() && rules.is_empty() {
            return None;
        }
        let mut text = prompt.unwrap_or_default().to_owned();
        if !rules.is_empty() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str("Rules:");
            for rule in rules {
                text.push_str("\n- ");
                // Continuation lines are indented so a multi-line rule stays one bullet.
                text.push_str(&rule.replace('\n', "\n  "));
            }
        }
        Some(text)
    }
}
