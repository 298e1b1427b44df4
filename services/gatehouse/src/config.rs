//! Configuration: one TOML file plus `GATEHOUSE_*` environment overrides.
//!
//! Key names are DESIGN.md's configuration surface; they are a contract with users' files,
//! so keys are added, never renamed. Unknown keys are errors, so a typo is reported rather
//! than silently ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use gatehouse_events::Prefix;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::secret::Secret;
use gatehouse_agent::{PriceTable, Role};
use gatehouse_sandbox::Profile;

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
    /// Slack bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<SlackConfig>,
    /// Discord bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discord: Option<DiscordConfig>,
    /// People and their accounts; who may decide gates comes from here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub people: Vec<Person>,
    /// Runners in this process.
    #[serde(default)]
    pub runner: RunnerConfig,
    /// Sandbox profiles.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Agent roles, referenced by `agent` nodes: executor CLI, model, system prompt, rules.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, Role>,
    /// USD per million tokens by model name, for the cost of agent attempts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pricing: PriceTable,
    /// Cron schedules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<ScheduleConfig>,
    /// Span export to an OpenTelemetry collector; off unless a collector is named.
    #[serde(default)]
    pub telemetry: crate::telemetry::TelemetryConfig,
}

/// `[server]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// HTTP listen address.
    pub listen: String,
    /// SQLite file, workspaces, artifacts, admin token (embedded mode).
    pub data_dir: PathBuf,
    /// Empty: SQLite in `data_dir`; otherwise `postgres://...` or `sqlite:...`.
    pub database_url: String,
    /// Empty: the in-process bus; otherwise `nats://...`.
    pub nats_url: String,
    /// Prefix of this deployment's streams and subjects.
    pub nats_prefix: Prefix,
    /// Directories of SOP YAML files, loaded beside the built-ins.
    pub sop_dirs: Vec<PathBuf>,
    /// Where people reach this Gatehouse (`https://gatehouse.example.com`), for links in
    /// comments; empty: no links.
    pub public_url: String,
    /// A request's headers must arrive within this long of its first byte (and a kept-alive
    /// HTTP/1 connection must start its next request within it), so a client that sends a
    /// few bytes and stalls does not hold a connection.
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this long of its headers; a client that
    /// trickles it is answered 408 and disconnected.
    #[serde(with = "humantime_serde")]
    pub body_timeout: Duration,
    /// A connection with no request in flight and no bytes either way for this long is
    /// closed (HTTP/2 connections, clients that stop reading their answer).
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// Connections open at once per listener; past it new connections wait in the kernel's
    /// listen backlog (and are refused by the kernel once that is full) until one closes.
    pub max_connections: usize,
    /// Webhook bodies (GitHub, Slack, Discord) read at once before their signature is
    /// checked; past it a webhook is answered 503 with `Retry-After` without being read.
    /// Body memory of unverified requests stays below this × the largest `max_body_bytes`.
    pub max_unverified_bodies: usize,
    /// Where `/metrics` is served instead of on `listen` (e.g. `127.0.0.1:9090`, a port
    /// only the scraper reaches); empty: on `listen`. When set, `listen` answers 404 there.
    pub metrics_listen: String,
    /// When set, `/metrics` needs `Authorization: Bearer <this>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_token: Option<Secret>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            data_dir: ".gatehouse".into(),
            database_url: String::new(),
            nats_url: String::new(),
            nats_prefix: Prefix::default(),
            sop_dirs: vec!["sops".into()],
            public_url: String::new(),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_unverified_bodies: 16,
            metrics_listen: String::new(),
            metrics_token: None,
        }
    }
}

impl ServerConfig {
    /// The database URL to use: the configured one, or the embedded SQLite file.
    pub fn effective_database_url(&self) -> String {
        if self.database_url.is_empty() {
            format!("sqlite:{}", self.data_dir.join("gatehouse.db").display())
        } else {
            self.database_url.clone()
        }
    }

    /// Checks the listener limits: a zero would refuse every request or connection.
    fn check(&self) -> Result<(), ConfigError> {
        let zero =
            |key: &str| ConfigError::Inconsistent(format!("server.{key} must be more than zero"));
        for (key, value) in [
            ("header_timeout", self.header_timeout),
            ("body_timeout", self.body_timeout),
            ("idle_timeout", self.idle_timeout),
        ] {
            if value.is_zero() {
                return Err(zero(key));
            }
        }
        if self.max_connections == 0 {
            return Err(zero("max_connections"));
        }
        if self.max_unverified_bodies == 0 {
            return Err(zero("max_unverified_bodies"));
        }
        Ok(())
    }
}

/// `[github]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubConfig {
    /// REST API root; GitHub Enterprise Server and test fakes change it.
    #[serde(default = "default_github_api")]
    pub api_url: String,
    /// A token, when not authenticating as an App.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// GitHub App id, with `private_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<u64>,
    /// GitHub App private key (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<Secret>,
    /// Webhook secrets; several are accepted at once for rotation.
    #[serde(default)]
    pub webhook_secrets: Vec<Secret>,
    /// Labels that start SOPs.
    #[serde(default)]
    pub triggers: Vec<GithubTrigger>,
    /// Repositories Gatehouse may act on besides the triggers' (`owner/name`, `owner/*`):
    /// where comment commands and chat's `on owner/name#N` may reach.
    #[serde(default)]
    pub repositories: Vec<String>,
    /// The bot's login: `@<login> command` in a comment is a command.
    #[serde(default = "default_bot_login")]
    pub bot_login: String,
    /// Deliveries larger than this are refused with 413. GitHub caps payloads at 25 MB;
    /// the events Gatehouse reads (issues, pull requests, comments) are a few KiB to a few
    /// hundred, so the default is 5 MiB.
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    /// Where repositories are cloned from and pushed to (`{git_url}/owner/name.git`);
    /// empty = derived from `api_url` (github.com, or GitHub Enterprise Server's host).
    #[serde(default)]
    pub git_url: String,
    /// The author of the commits `deliver` nodes make.
    #[serde(default = "default_commit_author")]
    pub commit_author: String,
    /// The email of that author.
    #[serde(default = "default_commit_email")]
    pub commit_email: String,
    /// How often open issues with trigger labels are checked for a missing run (labels
    /// added while Gatehouse was down).
    #[serde(default = "default_reconcile", with = "humantime_serde")]
    pub reconcile_interval: Duration,
}

fn default_commit_author() -> String {
    "Gatehouse".into()
}

fn default_commit_email() -> String {
    "gatehouse@localhost".into()
}

impl GithubConfig {
    /// Where repositories live for git: `git_url`, or github.com for the public API, or
    /// the Enterprise Server host for `https://HOST/api/v3`.
    pub fn git_base(&self) -> String {
        if !self.git_url.is_empty() {
            return self.git_url.trim_end_matches('/').to_owned();
        }
        let api = self.api_url.trim_end_matches('/');
        if api == "https://api.github.com" {
            return "https://github.com".into();
        }
        api.strip_suffix("/api/v3").unwrap_or(api).to_owned()
    }
}

fn default_reconcile() -> Duration {
    Duration::from_secs(300)
}

fn default_bot_login() -> String {
    "gatehouse".into()
}

fn default_max_body() -> usize {
    5 * 1024 * 1024
}

fn default_github_api() -> String {
    "https://api.github.com".into()
}

/// `[[github.triggers]]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubTrigger {
    /// The label.
    pub label: String,
    /// The SOP it starts.
    pub sop: String,
    /// Repository globs (`acme/*`, `acme/api`), each with a fixed owner; required, so a
    /// label starts runs only where someone chose and reconciliation searches only there.
    #[serde(default)]
    pub repos: Vec<String>,
    /// Only people known to Gatehouse may start it by labelling (GitHub issue templates
    /// apply labels for anyone who opens an issue).
    #[serde(default)]
    pub require_person: bool,
    /// Only these people and `group:` entries may start it by labelling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starters: Option<Vec<String>>,
    /// Removing the label cancels the runs it started.
    #[serde(default)]
    pub cancel_on_unlabel: bool,
    /// Pull requests from forks may start this SOP (its runs hold this deployment's
    /// credentials).
    #[serde(default)]
    pub allow_forks: bool,
}

/// `[slack]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// Web API root.
    #[serde(default = "default_slack_api")]
    pub api_url: String,
    /// Bot token (`xoxb-...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_token: Option<Secret>,
    /// Signing secret for request verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<Secret>,
    /// Default channel for approval cards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_channel: Option<String>,
    /// The SOP that free-text requests start, by channel id (`"*"`: every other channel).
    #[serde(default)]
    pub channel_sops: BTreeMap<String, String>,
    /// Largest request body accepted; larger is refused with 413.
    #[serde(default = "default_chat_body_bytes")]
    pub max_body_bytes: usize,
}

/// Slack's and Discord's requests (events, clicks, dialog submissions) are a few KiB;
/// even a message with the most blocks Slack allows stays well under 1 MiB.
fn default_chat_body_bytes() -> usize {
    1024 * 1024
}

fn default_slack_api() -> String {
    "https://slack.com/api".into()
}

/// `[discord]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// REST API root.
    #[serde(default = "default_discord_api")]
    pub api_url: String,
    /// Bot token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_token: Option<Secret>,
    /// Application id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    /// Ed25519 public key (hex) for interaction signatures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// Default channel for approval cards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_channel: Option<String>,
    /// The SOP that free-text requests start, by channel id (`"*"`: every other channel).
    #[serde(default)]
    pub channel_sops: BTreeMap<String, String>,
    /// Connect to the gateway for mentions (and clicks, when no interactions endpoint is
    /// set in the developer portal). Needs the bot token.
    #[serde(default = "default_true")]
    pub gateway: bool,
    /// Largest request body accepted; larger is refused with 413.
    #[serde(default = "default_chat_body_bytes")]
    pub max_body_bytes: usize,
}

fn default_true() -> bool {
    true
}

fn default_discord_api() -> String {
    "https://discord.com/api/v10".into()
}

/// `[[people]]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Person {
    /// Gatehouse's id for the person.
    pub id: String,
    /// GitHub login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<String>,
    /// Slack user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<String>,
    /// Discord user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discord: Option<String>,
    /// Groups, referenced by gates as `group:<name>`.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// `[runner]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunnerConfig {
    /// Node attempts run at once.
    pub concurrency: usize,
    /// A job's lease: renewed while it runs; after a crash the job comes back (and is
    /// reported as interrupted) once this has passed.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// Output stored per node attempt; the rest is counted and dropped, with a note.
    pub log_limit: bytesize::ByteSize,
    /// The largest artifact a node may leave: a larger one fails the attempt, unread.
    pub artifact_limit: bytesize::ByteSize,
    /// Names this runner among the runners sharing a data directory or a Docker engine:
    /// after a crash it cleans up only what it started itself. Default: the host name.
    pub id: String,
    /// At shutdown (SIGTERM), how long node attempts in flight may take to finish before
    /// they are stopped and reported as interrupted. Keep it below the platform's own
    /// grace (Kubernetes' `terminationGracePeriodSeconds`, compose's `stop_grace_period`).
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            concurrency: 4,
            lease: Duration::from_secs(30),
            log_limit: bytesize::ByteSize::mib(1),
            artifact_limit: bytesize::ByteSize::mib(64),
            shutdown_grace: Duration::from_secs(20),
            id: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_else(|_| "runner".into()),
        }
    }
}

/// `[sandbox]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Named profiles; SOPs, nodes and agent roles pick one by name.
    #[serde(default = "default_profiles")]
    pub profiles: BTreeMap<String, Profile>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            profiles: default_profiles(),
        }
    }
}

fn default_profiles() -> BTreeMap<String, Profile> {
    BTreeMap::from([("default".to_owned(), Profile::default())])
}

/// `[[schedules]]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Unique name.
    pub name: String,
    /// Cron expression (5 or 6 fields, or @hourly and friends).
    pub cron: String,
    /// IANA time zone.
    #[serde(default = "default_timezone")]
    pub timezone: String,
    /// SOP to run; or leave it out and give `role` and `prompt` (the agent shorthand).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sop: String,
    /// Agent shorthand: the role of the one-node SOP the schedule runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Agent shorthand: its prompt template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Parameters for the SOP.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    /// Overlap policy: skip, buffer_one, buffer_all, cancel_other or allow_all.
    #[serde(default = "default_overlap")]
    pub overlap: String,
    /// How far back missed fires are still run after downtime.
    #[serde(default = "default_catchup", with = "humantime_serde")]
    pub catchup_window: Duration,
    /// Each fire starts up to this much after its cron time (spreads schedules that share
    /// an expression).
    #[serde(default, with = "humantime_serde")]
    pub jitter: Duration,
    /// No fire before this RFC 3339 time.
    pub start: Option<String>,
    /// No fire after this RFC 3339 time.
    pub end: Option<String>,
    /// The person its runs answer to (the requester rule of gates holds them to it); the
    /// bootstrap administrator, `admin`, when not given.
    #[serde(default = "default_owner")]
    pub owner: String,
}

fn default_owner() -> String {
    "admin".into()
}

fn default_overlap() -> String {
    "skip".into()
}

fn default_timezone() -> String {
    "UTC".into()
}

fn default_catchup() -> Duration {
    Duration::from_secs(3600)
}

/// Why the configuration cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// `--config` named a file that does not exist.
    #[error("config file {0} does not exist")]
    Missing(PathBuf),
    /// A key has the wrong type, is unknown, or a file does not parse.
    #[error("{0}")]
    Invalid(#[from] Box<figment::Error>),
    /// Values that parse but contradict each other.
    #[error("{0}")]
    Inconsistent(String),
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
        let config: Config = figment.merge(env).extract().map_err(Box::new)?;
        config.validate()?;
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
        server.chain(github).chain(slack).chain(discord)
    }

    /// Checks what serde cannot: uniqueness of names and of chat identities.
    fn validate(&self) -> Result<(), ConfigError> {
        self.server.check()?;
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
                    ConfigError::Inconsistent(format!("github.triggers (label `{}`): {e}", t.label))
                })?;
            }
            gatehouse_ingest::Repositories::new(&github.repositories)
                .map_err(|e| ConfigError::Inconsistent(format!("github.repositories: {e}")))?;
        }
        for (name, profile) in &self.sandbox.profiles {
            profile
                .check()
                .map_err(|e| ConfigError::Inconsistent(format!("sandbox.profiles.{name}: {e}")))?;
        }
        for (name, role) in &self.roles {
            let invalid = |e: String| ConfigError::Inconsistent(format!("roles.{name}: {e}"));
            role.check().map_err(|e| invalid(e.to_string()))?;
            if let Some(profile) = &role.sandbox
                && !self.sandbox.profiles.contains_key(profile)
            {
                return Err(invalid(format!(
                    "sandbox profile `{profile}` is not defined under [sandbox.profiles]"
                )));
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
            s.overlap
                .parse::<gatehouse_schedule::Overlap>()
                .map_err(invalid)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads `toml` as `gatehouse.toml` with `env` set, in a private working directory.
    // figment's Jail fixes the closure's error type.
    #[allow(clippy::result_large_err)]
    fn load_with(toml: &str, env: &[(&str, &str)]) -> Result<Config, String> {
        let mut result = None;
        figment::Jail::expect_with(|jail| {
            jail.create_file("gatehouse.toml", toml)?;
            for (k, v) in env {
                jail.set_env(k, v);
            }
            result = Some(Config::load(None).map_err(|e| e.to_string()));
            Ok(())
        });
        result.unwrap()
    }

    #[test]
    fn defaults_without_a_file() {
        let c = load_with("", &[]).unwrap();
        assert_eq!(c.server.listen, "127.0.0.1:8080");
        assert_eq!(
            c.server.effective_database_url(),
            "sqlite:.gatehouse/gatehouse.db"
        );
        assert_eq!(c.server.nats_prefix.as_str(), "gatehouse");
        assert_eq!(
            c.sandbox.profiles["default"].kind,
            gatehouse_sandbox::SandboxKind::Process
        );
    }

    #[test]
    fn a_schedule_runs_an_sop_or_an_agent_task() {
        let role = "[roles.triager]\nexecutor = \"codex\"\n";
        let schedule = |target: &str| {
            format!("{role}[[schedules]]\nname = \"triage\"\ncron = \"0 3 * * *\"\n{target}")
        };
        let c = load_with(
            &schedule("role = \"triager\"\nprompt = \"Triage {{ params }}.\"\n"),
            &[],
        )
        .unwrap();
        assert_eq!(c.schedules[0].target(), "schedule-triage");
        let task = c.schedules[0].agent_task().unwrap().unwrap();
        assert_eq!(task.name, "schedule-triage");
        assert!(matches!(
            &task.node("agent").unwrap().kind,
            gatehouse_sop::NodeKind::Agent { role, .. } if role == "triager"
        ));
        for (target, error) in [
            (
                "sop = \"tick\"\nrole = \"triager\"\nprompt = \"x\"\n",
                "schedule `triage`: give either `sop` or `role` and `prompt`",
            ),
            (
                "",
                "schedule `triage`: needs `sop`, or `role` and `prompt` for an agent task",
            ),
            (
                "role = \"triager\"\n",
                "schedule `triage`: `role` and `prompt` go together",
            ),
            (
                "role = \"nobody\"\nprompt = \"x\"\n",
                "schedule `triage`: the agent role `nobody` is not configured (add [roles.nobody])",
            ),
        ] {
            assert_eq!(load_with(&schedule(target), &[]).unwrap_err(), error);
        }
        let bad = load_with(
            &schedule("role = \"triager\"\nprompt = \"{{ nope }}\"\n"),
            &[],
        );
        assert!(
            bad.unwrap_err().contains("`nope` is undefined"),
            "a bad prompt is refused at load"
        );
    }

    #[test]
    fn the_documented_example_parses() {
        let c = load_with(include_str!("../../../deploy/gatehouse.example.toml"), &[]).unwrap();
        let github = c.github.unwrap();
        assert_eq!(github.triggers[0].label, "sop:bug-fix");
        assert_eq!(github.webhook_secrets.len(), 1);
        assert_eq!(c.people[0].groups, vec!["leads"]);
        assert_eq!(c.schedules[0].catchup_window, Duration::from_secs(3600));
        assert_eq!(c.schedules[0].overlap, "skip");
        assert_eq!(c.sandbox.profiles["default"].pids, Some(256));
        assert_eq!(
            c.slack.unwrap().approvals_channel.as_deref(),
            Some("C0123456")
        );
    }

    #[test]
    fn environment_overrides_the_file() {
        let c = load_with(
            "[server]\ndatabase_url = \"sqlite:file.db\"\n[github]\n",
            &[
                ("GATEHOUSE_DATABASE_URL", "postgres://root@db/gatehouse"),
                ("GATEHOUSE_SERVER__NATS_PREFIX", "staging"),
                ("GATEHOUSE_GITHUB__API_URL", "http://127.0.0.1:9000"),
                ("GATEHOUSE_TOKEN", "a CLI token, not a config key"),
            ],
        )
        .unwrap();
        assert_eq!(c.server.database_url, "postgres://root@db/gatehouse");
        assert_eq!(c.server.nats_prefix.as_str(), "staging");
        assert_eq!(c.github.unwrap().api_url, "http://127.0.0.1:9000");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = load_with("[server]\ndatabse_url = \"x\"\n", &[]).unwrap_err();
        assert!(err.contains("databse_url"), "{err}");
        let err = load_with("[server]\nnats_prefix = \"a.b\"\n", &[]).unwrap_err();
        assert!(err.contains("invalid subject prefix `a.b`"), "{err}");
        let err = load_with("[[schedules]]\nname = \"n\"\ncron = \"* * * * *\"\nsop = \"s\"\ncatchup_window = \"soon\"\n", &[]).unwrap_err();
        assert!(err.contains("catchup_window"), "{err}");
    }

    #[test]
    fn duplicates_are_refused() {
        let err = load_with(
            "[[people]]\nid = \"ana\"\nslack = \"U1\"\n[[people]]\nid = \"bo\"\nslack = \"U1\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(err, "Slack id `U1` is defined twice");
    }

    #[test]
    fn schedules_are_checked_when_loaded() {
        let schedule = |cron: &str, tz: &str| {
            format!(
                "[[schedules]]\nname = \"n\"\ncron = \"{cron}\"\ntimezone = \"{tz}\"\nsop = \"s\"\n"
            )
        };
        assert_eq!(
            load_with(&schedule("0 3 * * *", "Mars/Base"), &[]).unwrap_err(),
            "schedule `n`: timezone `Mars/Base` is not a known IANA time zone (e.g. Europe/Berlin, UTC)"
        );
        assert_eq!(
            load_with(&schedule("0 0 30 2 *", "UTC"), &[]).unwrap_err(),
            "schedule `n`: cron `0 0 30 2 *` never fires: no date matches it"
        );
        assert!(load_with(&schedule("0 3 * * *", "Europe/Berlin"), &[]).is_ok());
        let windowed = |start: &str, end: &str| {
            format!(
                "{}start = \"{start}\"\nend = \"{end}\"\n",
                schedule("0 3 * * *", "UTC")
            )
        };
        assert_eq!(
            load_with(
                &windowed("2026-12-01T04:00:00Z", "2026-12-01T05:00:00Z"),
                &[]
            )
            .unwrap_err(),
            "schedule `n`: cron `0 3 * * *` never fires before the schedule's end 2026-12-01T05:00:00Z"
        );
        assert_eq!(
            load_with(&windowed("tomorrow", "2026-12-01T05:00:00Z"), &[]).unwrap_err(),
            "schedule `n`: `tomorrow` is not an RFC 3339 time with offset (e.g. 2026-03-29T00:00:00+01:00)"
        );
        assert!(
            load_with(
                &windowed("2026-12-01T00:00:00Z", "2027-01-01T00:00:00+01:00"),
                &[]
            )
            .is_ok()
        );
    }

    #[test]
    fn github_app_keys_go_together() {
        assert_eq!(
            load_with("[github]\napp_id = 12345\n", &[]).unwrap_err(),
            "github.app_id and github.private_key go together: a GitHub App needs both"
        );
        let app = load_with(
            "[github]\napp_id = 12345\nprivate_key = { file = \"app.pem\" }\n",
            &[],
        )
        .unwrap();
        assert_eq!(app.github.unwrap().app_id, Some(12345));
    }

    #[test]
    fn a_trigger_names_the_repositories_it_may_reach() {
        let trigger = |extra: &str| {
            load_with(
                &format!(
                    "[github]\n[[github.triggers]]\nlabel = \"bug\"\nsop = \"bug-fix\"\n{extra}"
                ),
                &[],
            )
        };
        assert_eq!(
            trigger("").unwrap_err(),
            "github.triggers (label `bug`): no `repos`: write repos = [\"owner/*\"] (or list the repositories, e.g. [\"acme/api\"]) so the label starts runs only there and reconciliation searches only there"
        );
        assert_eq!(
            trigger("repos = [\"*/api\"]").unwrap_err(),
            "github.triggers (label `bug`): `*/api` has a wildcard owner; name the owner (`acme/*`), so GitHub is searched only there"
        );
        assert_eq!(
            trigger("repos = [\"acme/..\"]").unwrap_err(),
            "github.triggers (label `bug`): `acme/..` has a `.` or `..` segment"
        );
        assert_eq!(
            trigger("repos = [\"acme/*\"]\nstarters = [\"group:\"]").unwrap_err(),
            "github.triggers (label `bug`): starters: `group:` names no group; write group:<name>"
        );
        let ok =
            trigger("repos = [\"acme/*\"]\nrequire_person = true\nstarters = [\"group:leads\"]")
                .unwrap();
        let t = &ok.github.unwrap().triggers[0];
        assert!(t.require_person);
        assert_eq!(t.starters.as_deref(), Some(&["group:leads".to_owned()][..]));
    }

    #[test]
    fn listener_limits_take_durations_and_refuse_zero() {
        let c = load_with("", &[]).unwrap();
        assert_eq!(c.server.header_timeout, Duration::from_secs(10));
        assert_eq!(c.server.body_timeout, Duration::from_secs(60));
        assert_eq!(c.server.idle_timeout, Duration::from_secs(60));
        assert_eq!(c.server.max_connections, 1024);
        let c = load_with(
            "[server]\nheader_timeout = \"2s\"\nbody_timeout = \"1m 30s\"\nmax_connections = 8\n",
            &[("GATEHOUSE_SERVER__IDLE_TIMEOUT", "5s")],
        )
        .unwrap();
        assert_eq!(c.server.header_timeout, Duration::from_secs(2));
        assert_eq!(c.server.body_timeout, Duration::from_secs(90));
        assert_eq!(c.server.idle_timeout, Duration::from_secs(5));
        assert_eq!(c.server.max_connections, 8);
        assert_eq!(
            load_with("[server]\nheader_timeout = \"0s\"\n", &[]).unwrap_err(),
            "server.header_timeout must be more than zero"
        );
        assert_eq!(
            load_with("[server]\nmax_connections = 0\n", &[]).unwrap_err(),
            "server.max_connections must be more than zero"
        );
    }

    #[test]
    fn webhook_bodies_are_bounded_by_default() {
        let c = load_with("[github]\n[slack]\n[discord]\n", &[]).unwrap();
        assert_eq!(c.server.max_unverified_bodies, 16);
        assert_eq!(c.github.unwrap().max_body_bytes, 5 * 1024 * 1024);
        assert_eq!(c.slack.unwrap().max_body_bytes, 1024 * 1024);
        assert_eq!(c.discord.unwrap().max_body_bytes, 1024 * 1024);
        assert_eq!(
            load_with("[server]\nmax_unverified_bodies = 0\n", &[]).unwrap_err(),
            "server.max_unverified_bodies must be more than zero"
        );
    }

    #[test]
    fn the_metrics_token_is_a_secret_config_check_reads() {
        let c = load_with(
            "[server]\nmetrics_listen = \"127.0.0.1:9090\"\nmetrics_token = { env = \"GATEHOUSE_TEST_METRICS\" }\n",
            &[],
        )
        .unwrap();
        assert_eq!(c.server.metrics_listen, "127.0.0.1:9090");
        let secrets: Vec<String> = c.secrets().map(|(key, s)| format!("{key}: {s}")).collect();
        assert_eq!(
            secrets,
            ["server.metrics_token: environment variable GATEHOUSE_TEST_METRICS"]
        );
    }

    #[test]
    fn an_explicit_file_must_exist() {
        let err = Config::load(Some(Path::new("/nonexistent/gatehouse.toml"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config file /nonexistent/gatehouse.toml does not exist"
        );
    }
}
