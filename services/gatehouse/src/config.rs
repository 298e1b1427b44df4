//! Configuration: one TOML file plus `GATEHOUSE_*` environment overrides.
//!
//! Key names are DESIGN.md's configuration surface; they are a contract with users' files,
//! so keys are added, never renamed. Unknown keys are errors, so a typo is reported rather
//! than silently ignored.
//!
//! This module is the file's shape only. What a section becomes for the services (secrets
//! resolved, clients built, globs compiled) is in `crate::settings`, in a file of the same
//! name where the section needs one: `[slack]` and `[discord]` are `config/chat.rs` here
//! and `settings/chat.rs` there, `[github]` is `config/github.rs` and `settings/github.rs`.

mod assistant;
mod budget;
mod chat;
mod console;
mod forges;
mod github;
mod load_errors;
mod locate;
mod mcp;
mod providers;
mod schedules;
mod server;
mod skills;
mod storage;
#[cfg(test)]
mod tests;

pub use assistant::AssistantConfig;
pub use budget::BudgetConfig;
pub use chat::{DiscordConfig, SlackConfig};
pub use console::ConsoleConfig;
pub use forges::ForgeConfig;
pub use github::{GithubConfig, GithubTrigger};
pub use mcp::McpConfig;
pub use providers::{ProviderConfig, ProviderKindConfig};
pub use schedules::ScheduleConfig;
pub use server::{RunnerConfig, SandboxConfig, ServerConfig};
pub use skills::SkillsConfig;
pub use storage::{BlobBackend, StorageConfig};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::secret::Secret;
use gatehouse_agent::{PriceTable, Role};

/// The whole configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Listener, storage and bus.
    #[serde(default)]
    pub server: ServerConfig,
    /// GitHub App or token, webhook secrets, label triggers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<GithubConfig>,
    /// GitLab and Gitea (Forgejo) servers, by name: where the merge requests of the
    /// repositories that name them open.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub forges: BTreeMap<String, ForgeConfig>,
    /// Slack bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<SlackConfig>,
    /// Discord bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discord: Option<DiscordConfig>,
    /// People and their accounts; who may decide gates comes from here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub people: Vec<gatehouse_ingest::Person>,
    /// Projects: the repositories runs work on, their channels, SOPs, settings and rights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<gatehouse_project::ProjectConfig>,
    /// Runners in this process.
    #[serde(default)]
    pub runner: RunnerConfig,
    /// Where artifacts and workspace checkpoints are kept.
    #[serde(default)]
    pub storage: StorageConfig,
    /// Sandbox profiles.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Model providers agents reach through the runner's gateway, with their keys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// MCP servers roles and projects attach: programs run inside the sandbox, or remote
    /// servers the runner forwards to with their secrets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, McpConfig>,
    /// Agent roles, referenced by `agent` nodes: executor CLI, model, system prompt, rules.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, Role>,
    /// Skills (folders with a `SKILL.md`) that roles and projects attach by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: SkillsConfig,
    /// Conversations in chat threads: the role that runs each turn, and their limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assistant: Option<AssistantConfig>,
    /// USD per million tokens by model name, for the cost of agent attempts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pricing: PriceTable,
    /// Cron schedules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<ScheduleConfig>,
    /// Spend limits per project and day, beside roles', SOPs', projects' and schedules'.
    #[serde(default)]
    pub budget: BudgetConfig,
    /// Signing in to the web console.
    #[serde(default)]
    pub console: ConsoleConfig,
    /// Span export to an OpenTelemetry collector; off unless a collector is named.
    #[serde(default)]
    pub telemetry: crate::telemetry::TelemetryConfig,
}

/// Why the configuration cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// `--config` named a file that does not exist.
    #[error("config file {0} does not exist")]
    Missing(PathBuf),
    /// A key has the wrong type, is unknown, or a file does not parse: in Gatehouse's
    /// words, with the key's line in the file.
    #[error("{0}")]
    Invalid(String),
    /// Values that parse but contradict each other.
    #[error("{0}")]
    Inconsistent(String),
    /// A role's permission rule that does not parse; `load` names its line in the file.
    #[error("{located}{}: {problem}", place.key())]
    Rule {
        place: locate::RulePlace,
        /// The rule as written and what is wrong with it.
        problem: String,
        /// `file:line: `, or empty when the rule is not in the file.
        located: String,
    },
}

/// Environment variables that belong to the command line, not to the file's keys.
const CLI_ONLY_ENV: [&str; 5] = ["config", "log", "log_format", "token", "server"];
/// `[server]` keys that may also be set without the section, e.g. `GATEHOUSE_DATABASE_URL`.
const SERVER_SHORTHANDS: [&str; 6] = [
    "listen",
    "data_dir",
    "database_url",
    "nats_url",
    "nats_prefix",
    "sop_dirs",
];

impl Config {
    /// Loads `file` (required when given explicitly; `gatehouse.toml` when present
    /// otherwise), then `GATEHOUSE_*` variables: `GATEHOUSE_SECTION__KEY` for any key
    /// (`GATEHOUSE_GITHUB__API_URL`), and `GATEHOUSE_KEY` for `[server]` keys
    /// (`GATEHOUSE_DATABASE_URL`).
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        let read = file.map(Path::to_path_buf).or_else(|| {
            let default = PathBuf::from("gatehouse.toml");
            default.exists().then_some(default)
        });
        match file {
            Some(path) if !path.exists() => return Err(ConfigError::Missing(path.to_owned())),
            Some(path) => figment = figment.merge(Toml::file_exact(path)),
            None if Path::new("gatehouse.toml").exists() => {
                figment = figment.merge(Toml::file_exact("gatehouse.toml"));
            }
            None => {}
        }
        let env = Env::prefixed("GATEHOUSE_")
            .ignore(&CLI_ONLY_ENV)
            .map(|key| {
                let key = key.as_str().to_ascii_lowercase();
                if SERVER_SHORTHANDS.contains(&key.as_str()) {
                    format!("server.{key}").into()
                } else {
                    key.replace("__", ".").into()
                }
            });
        let mut config: Config = figment
            .merge(env)
            .extract()
            .map_err(|e| ConfigError::Invalid(load_errors::describe(e, read.as_deref())))?;
        let base = match file {
            Some(path) => path.parent().map(Path::to_owned).unwrap_or_default(),
            None => PathBuf::new(),
        };
        let base = if base.as_os_str().is_empty() {
            std::env::current_dir().unwrap_or_default()
        } else {
            base
        };
        config.resolve_skill_paths(&base);
        config.validate().map_err(|error| match (error, &read) {
            (ConfigError::Rule { place, problem, .. }, Some(path)) => ConfigError::Rule {
                located: locate::prefix(path, &place),
                place,
                problem,
            },
            (error, _) => error,
        })?;
        Ok(config)
    }

    /// Every secret the configuration references, with its key, for `config check`.
    pub fn secrets(&self) -> impl Iterator<Item = (String, &Secret)> {
        let github = self.github.iter().flat_map(|g| {
            let named = [
                ("github.token", &g.token),
                ("github.private_key", &g.private_key),
            ]
            .into_iter()
            .filter_map(|(k, s)| s.as_ref().map(|s| (k.to_owned(), s)));
            let hooks = g
                .webhook_secrets
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("github.webhook_secrets[{i}]"), s));
            named.chain(hooks)
        });
        let slack = self.slack.iter().flat_map(|s| {
            [
                ("slack.bot_token", &s.bot_token),
                ("slack.signing_secret", &s.signing_secret),
            ]
            .into_iter()
            .filter_map(|(k, s)| s.as_ref().map(|s| (k.to_owned(), s)))
        });
        let discord = self.discord.iter().flat_map(|d| {
            d.bot_token
                .as_ref()
                .map(|s| ("discord.bot_token".to_owned(), s))
        });
        let server = self
            .server
            .metrics_token
            .iter()
            .map(|s| ("server.metrics_token".to_owned(), s));
        let console = self
            .console
            .github_client_secret
            .iter()
            .map(|s| ("console.github_client_secret".to_owned(), s));
        let providers = self
            .providers
            .iter()
            .map(|(name, p)| (format!("providers.{name}.key"), &p.key));
        let forges = self
            .forges
            .iter()
            .map(|(name, f)| (format!("forges.{name}.token"), &f.token));
        let repositories = self.projects.iter().flat_map(|p| {
            p.repositories.iter().flat_map(move |r| {
                [("token", &r.token), ("deploy_key", &r.deploy_key)]
                    .into_iter()
                    .filter_map(move |(key, s)| {
                        s.as_ref().map(|s| {
                            (
                                format!("projects.{}.repositories.{}.{key}", p.name, r.repo),
                                s,
                            )
                        })
                    })
            })
        });
        let mcp = self.mcp.iter().flat_map(|(name, m)| {
            m.secret_headers()
                .into_iter()
                .map(move |(_, _, secret, key)| (format!("mcp.{name}.{key}"), secret))
        });
        server
            .chain(github)
            .chain(slack)
            .chain(discord)
            .chain(console)
            .chain(providers)
            .chain(forges)
            .chain(repositories)
            .chain(mcp)
    }

    /// What `config check` and a start say about a configuration they accept: settings
    /// that work but give away more than they seem to (a sandbox on a whole network, a role
    /// handed a provider's key as a secret).
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .sandbox
            .profiles
            .iter()
            .flat_map(|(name, p)| {
                p.warnings()
                    .into_iter()
                    .map(move |w| format!("sandbox.profiles.{name}: {w}"))
            })
            .collect();
        let keys: BTreeSet<&str> = self
            .providers
            .values()
            .filter_map(|p| match &p.key {
                Secret::Env { env } => Some(env.as_str()),
                _ => None,
            })
            .collect();
        for (name, role) in &self.roles {
            for secret in role.secrets.iter().filter(|s| keys.contains(s.as_str())) {
                warnings.push(format!(
                    "roles.{name}: `secrets` hands the agent {secret}, a provider's key, which \
                     anything it runs can read; name the provider with `provider` instead and \
                     drop it from `secrets`"
                ));
            }
        }
        warnings.extend(self.budget_warnings());
        warnings.extend(self.plain_http_warnings());
        warnings
    }

    /// A token sent over plain `http://`, which anyone on the way can read: a repository's
    /// own, or a forge's.
    fn plain_http_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for (name, forge) in &self.forges {
            if forge.api_url.starts_with("http://") {
                warnings.push(format!(
                    "forges.{name}: api_url is plain http://, so its token crosses the network unencrypted; use https://"
                ));
            }
        }
        for project in &self.projects {
            for r in project.repositories.iter().filter(|r| r.token.is_some()) {
                if r.url.as_deref().is_some_and(|u| u.starts_with("http://")) {
                    warnings.push(format!(
                        "projects.{}.repositories.{}: its url is plain http://, so its token crosses the network unencrypted; use https://",
                        project.name, r.repo
                    ));
                }
            }
        }
        warnings
    }

    /// Checks what serde cannot: uniqueness of names and of chat identities.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        self.server.check()?;
        if self.storage.checkpoint_pack_limit.as_u64() == 0 {
            return Err(ConfigError::Inconsistent(
                "storage.checkpoint_pack_limit must be more than zero: no workspace could be checkpointed".into(),
            ));
        }
        let people = || self.people.iter();
        unique("person", people().map(|p| p.id.as_str()))?;
        unique("GitHub login", people().filter_map(|p| p.github.as_deref()))?;
        unique("Slack id", people().filter_map(|p| p.slack.as_deref()))?;
        unique("Discord id", people().filter_map(|p| p.discord.as_deref()))?;
        unique("schedule", self.schedules.iter().map(|s| s.name.as_str()))?;
        if let Some(github) = &self.github
            && github.app_id.is_some() != github.private_key.is_some()
        {
            return Err(ConfigError::Inconsistent(
                "github.app_id and github.private_key go together: a GitHub App needs both".into(),
            ));
        }
        if let Some(github) = &self.github {
            for t in &github.triggers {
                t.to_trigger().map_err(|e| {
                    ConfigError::Inconsistent(format!("github.triggers ({}): {e}", t.describe()))
                })?;
                if t.conversation && self.assistant.is_none() {
                    return Err(ConfigError::Inconsistent(format!(
                        "github.triggers ({}): `conversation = true` needs [assistant], whose role works in conversations",
                        t.describe()
                    )));
                }
            }
            gatehouse_ingest::Repositories::new(&github.repositories)
                .map_err(|e| ConfigError::Inconsistent(format!("github.repositories: {e}")))?;
        }
        let projects = gatehouse_project::Projects::new(self.projects.clone())
            .map_err(|e| ConfigError::Inconsistent(e.to_string()))?;
        for s in &self.schedules {
            if let Some(project) = &s.project
                && projects.get(project).is_none()
            {
                return Err(ConfigError::Inconsistent(format!(
                    "schedule `{}`: no project named `{project}`; the projects are {}",
                    s.name,
                    projects.names()
                )));
            }
        }
        for (name, profile) in &self.sandbox.profiles {
            profile
                .check()
                .map_err(|e| ConfigError::Inconsistent(format!("sandbox.profiles.{name}: {e}")))?;
        }
        for (name, provider) in &self.providers {
            let invalid = |e: String| ConfigError::Inconsistent(format!("providers.{name}: {e}"));
            let name_ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !name_ok {
                return Err(invalid(
                    "a provider's name may hold only letters, digits, `-` and `_`".into(),
                ));
            }
            provider.base_url().map_err(invalid)?;
        }
        for (name, role) in &self.roles {
            let invalid = |e: String| ConfigError::Inconsistent(format!("roles.{name}: {e}"));
            role.check().map_err(|e| match e {
                gatehouse_agent::RoleError::Permission(
                    gatehouse_agent::PermissionsError::Rule {
                        list,
                        index,
                        rule,
                        problem,
                    },
                ) => ConfigError::Rule {
                    place: locate::RulePlace {
                        role: name.clone(),
                        list: list.as_str(),
                        index,
                    },
                    problem: format!("{rule:?}: {problem}"),
                    located: String::new(),
                },
                e => invalid(e.to_string()),
            })?;
            if let Some(provider) = &role.provider {
                let Some(config) = self.providers.get(provider) else {
                    let known = if self.providers.is_empty() {
                        "none is configured".to_owned()
                    } else {
                        format!(
                            "the providers are {}",
                            self.providers
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    return Err(invalid(format!(
                        "provider `{provider}` is not configured (add [providers.{provider}]); {known}"
                    )));
                };
                let apis = role.executor.model_apis();
                if !apis.is_empty() && !apis.contains(&config.kind.api()) {
                    let spoken: Vec<&str> = apis.iter().map(|a| a.as_str()).collect();
                    return Err(invalid(format!(
                        "executor \"{}\" speaks {}, but provider `{provider}` is of kind \"{}\"",
                        role.executor,
                        spoken.join(" or "),
                        config.kind.as_str()
                    )));
                }
            }
            if let Some(profile) = role
                .sandbox
                .as_ref()
                .and_then(|p| self.sandbox.profiles.get(p))
            {
                profile
                    .egress_policy(&role.egress)
                    .map_err(|e| invalid(e.to_string()))?;
            } else if !role.egress.is_empty() {
                gatehouse_sandbox::Profile::default()
                    .egress_policy(&role.egress)
                    .map_err(|e| invalid(e.to_string()))?;
            }
            if let Some(profile) = &role.sandbox
                && !self.sandbox.profiles.contains_key(profile)
            {
                return Err(invalid(format!(
                    "sandbox profile `{profile}` is not defined under [sandbox.profiles]"
                )));
            }
        }
        // After the roles' own checks, which refuse a malformed or reserved name first.
        self.check_mcp()?;
        self.check_skills()?;
        self.check_budgets()?;
        let console = &self.console;
        match (
            console.github_client_id.is_empty(),
            &console.github_client_secret,
        ) {
            (true, None) => {}
            (false, Some(_)) if self.server.public_url.is_empty() => {
                return Err(ConfigError::Inconsistent(
                    "console.github_client_id needs server.public_url: GitHub sends people back to {public_url}/auth/github/callback".into(),
                ));
            }
            (false, Some(_)) => {}
            _ => {
                return Err(ConfigError::Inconsistent(
                    "console.github_client_id and console.github_client_secret go together: GitHub sign-in needs both".into(),
                ));
            }
        }
        let year = std::time::Duration::from_secs(366 * 24 * 3600);
        for (key, ttl) in [
            ("session_ttl", console.session_ttl),
            ("login_link_ttl", console.login_link_ttl),
        ] {
            if ttl.is_zero() || ttl > year {
                return Err(ConfigError::Inconsistent(format!(
                    "console.{key} must be longer than nothing and at most a year"
                )));
            }
        }
        if let Some(assistant) = &self.assistant {
            let invalid = |e: String| ConfigError::Inconsistent(format!("assistant: {e}"));
            if !self.roles.contains_key(&assistant.role) {
                return Err(invalid(format!(
                    "the role `{}` is not configured (add [roles.{}])",
                    assistant.role, assistant.role
                )));
            }
            if assistant.max_queue == 0 {
                return Err(invalid(
                    "max_queue must be at least 1, or no message could wait for a turn".into(),
                ));
            }
        }
        for s in &self.schedules {
            let invalid =
                |e: String| ConfigError::Inconsistent(format!("schedule `{}`: {e}", s.name));
            match (&s.role, &s.prompt, s.sop.is_empty()) {
                (Some(_), Some(_), true) | (None, None, false) => {}
                (Some(_), Some(_), false) => {
                    return Err(invalid("give either `sop` or `role` and `prompt`".into()));
                }
                (None, None, true) => {
                    return Err(invalid(
                        "needs `sop`, or `role` and `prompt` for an agent task".into(),
                    ));
                }
                _ => return Err(invalid("`role` and `prompt` go together".into())),
            }
            if let Some(role) = &s.role
                && !self.roles.contains_key(role)
            {
                return Err(invalid(format!(
                    "the agent role `{role}` is not configured (add [roles.{role}])"
                )));
            }
            if let Some(Err(e)) = s.agent_task() {
                return Err(invalid(e.to_string()));
            }
            s.timing().map_err(|e| invalid(e.to_string()))?;
            s.overlap_policy().map_err(invalid)?;
        }
        Ok(())
    }
}

impl Config {
    /// `[mcp.NAME]` sections and the names roles and projects attach: each section usable,
    /// each name attached configured.
    fn check_mcp(&self) -> Result<(), ConfigError> {
        for (name, server) in &self.mcp {
            let invalid = |e: String| ConfigError::Inconsistent(format!("mcp.{name}: {e}"));
            gatehouse_agent::check_mcp_name(name).map_err(|e| invalid(e.to_string()))?;
            server.definition().map_err(invalid)?;
        }
        let attached = self
            .roles
            .iter()
            .map(|(name, role)| (format!("roles.{name}"), &role.mcp))
            .chain(
                self.projects
                    .iter()
                    .map(|p| (format!("project `{}`", p.name), &p.mcp)),
            );
        for (owner, names) in attached {
            if let Some(name) = names.iter().find(|n| !self.mcp.contains_key(*n)) {
                return Err(ConfigError::Inconsistent(format!(
                    "{owner}: `mcp`: {}",
                    gatehouse_agent::unknown_mcp(name, &self.mcp)
                )));
            }
        }
        Ok(())
    }
}

fn unique<'a>(what: &str, mut names: impl Iterator<Item = &'a str>) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    match names.find(|n| !seen.insert(*n)) {
        Some(n) => Err(ConfigError::Inconsistent(format!(
            "{what} `{n}` is defined twice"
        ))),
        None => Ok(()),
    }
}
