//! The configuration file turned into what each service takes. The services know nothing of
//! `gatehouse.toml`: they take typed settings, and every conversion from the one to the
//! other is here (chat, GitHub and sandboxes in their own files), so `up`, `serve` and
//! `config check` read the configuration the same way.

pub mod chat;
pub mod check;
pub mod gateway;
pub mod github;
pub mod mcp;
pub mod remotes;
pub mod sandbox;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use gatehouse_github::GithubClient;
use gatehouse_ingest::People;
use gatehouse_project::Projects;
use gatehouse_runner::{Runner, RunnerOptions};
use gatehouse_sop::{Catalog, Library};
use gatehouse_store::{ScheduleRow, Store};

use crate::config::{Config, ScheduleConfig};

/// The SOPs of `server.sop_dirs` (invalid files are skipped with a warning) and the agent
/// tasks of `[[schedules]]`, checked against `[roles]`; loaded the same way again whenever
/// the files change.
pub fn catalog(config: &Config) -> anyhow::Result<Arc<Library>> {
    let mut tasks = Vec::new();
    for task in config.schedules.iter().filter_map(|s| s.agent_task()) {
        tasks.push(task.context("an agent task of [[schedules]]")?);
    }
    let dirs = config.server.sop_dirs.clone();
    let roles: Vec<String> = config.roles.keys().cloned().collect();
    let read = dirs.clone();
    let library = Library::loading(
        dirs,
        Box::new(move || {
            let (mut catalog, invalid) = Catalog::load(&read);
            for task in &tasks {
                catalog.insert(task.clone());
            }
            catalog.require_roles(roles.iter().map(String::as_str));
            (catalog, invalid)
        }),
    );
    for error in library.invalid().iter() {
        tracing::warn!("skipped an invalid SOP file:\n{error}");
    }
    Ok(Arc::new(library))
}

/// How the console signs people in: `[console]`, with `server.public_url` for links and
/// GitHub's return, and `[github]`'s addresses for GitHub sign-in.
pub fn console(config: &Config) -> anyhow::Result<gatehouse_ingest::ConsoleSettings> {
    let console = &config.console;
    let public_url =
        Some(config.server.public_url.trim_end_matches('/').to_owned()).filter(|u| !u.is_empty());
    let github = match &console.github_client_secret {
        Some(secret) if !console.github_client_id.is_empty() => {
            let (web, api) = match &config.github {
                Some(g) => (g.web_base(), g.api_url.clone()),
                None => ("https://github.com".into(), "https://api.github.com".into()),
            };
            let secret = secret.resolve().context("console.github_client_secret")?;
            Some(gatehouse_github::OAuthApp::new(
                &web,
                &api,
                &console.github_client_id,
                secret,
            ))
        }
        _ => None,
    };
    Ok(gatehouse_ingest::ConsoleSettings {
        public_url,
        session_ttl: console.session_ttl,
        login_link_ttl: console.login_link_ttl,
        github,
    })
}

/// `[[projects]]`, checked when the configuration was loaded; an SOP a project names that
/// is not in the catalog is warned about (SOP files come and go), as schedules' are.
pub fn projects(config: &Config, catalog: &Catalog) -> anyhow::Result<Arc<Projects>> {
    let projects = Projects::new(config.projects.clone())?;
    for project in projects.iter() {
        let named = project
            .config()
            .sops
            .iter()
            .chain(&project.config().default_sop);
        for sop in named.filter(|sop| catalog.get(sop).is_none()) {
            tracing::warn!(project = %project.name(), %sop, "a project names an SOP that does not exist");
        }
    }
    Ok(Arc::new(projects))
}

/// `[assistant]` as the scheduler runs conversations with it, and every role with whether
/// `ask` may name it.
pub fn assistant(
    config: &Config,
) -> Option<(
    gatehouse_scheduler::AssistantSettings,
    BTreeMap<String, bool>,
)> {
    let assistant = config.assistant.as_ref()?;
    let settings = gatehouse_scheduler::AssistantSettings {
        role: assistant.role.clone(),
        rules: gatehouse_conversation::Settings {
            max_queue: assistant.max_queue,
            idle_timeout: assistant.idle_timeout,
        },
        turn_timeout: assistant.turn_timeout,
    };
    let roles = config
        .roles
        .iter()
        .map(|(name, role)| (name.clone(), role.askable))
        .collect();
    Some((settings, roles))
}

/// What the HTTP listeners allow a client.
pub fn limits(server: &crate::config::ServerConfig) -> gatehouse_fleet::Limits {
    gatehouse_fleet::Limits {
        header_timeout: server.header_timeout,
        body_timeout: server.body_timeout,
        idle_timeout: server.idle_timeout,
        max_connections: server.max_connections,
    }
}

/// `[[people]]` as the API and the webhooks see them.
pub fn people(config: &Config) -> People {
    People::new(config.people.clone())
}

/// A runner on this process's sandboxes (what a crash left behind is cleaned up first),
/// delivering to GitHub when a client is configured, and to the projects' own remotes and
/// forges. `data_dir` is absolute: scripts run in
/// their workspace, so the paths they are given must not be relative.
pub async fn runner(
    config: &Config,
    store: &Store,
    data_dir: &Path,
    github: Option<&GithubClient>,
) -> anyhow::Result<Runner> {
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
    let sandbox = sandbox::sandboxes(config, data_dir).await?;
    let delivery = remotes::deliverer(config, github)?;
    let relay = gateway::relay(config)?;
    let acp = gateway::acp(config, relay.as_deref())?;
    let options = RunnerOptions {
        concurrency: config.runner.concurrency,
        ack_wait: config.runner.lease,
        data_dir: data_dir.to_owned(),
        delivery,
        profiles: config.sandbox.profiles.clone(),
        roles: config.roles.clone(),
        providers: gateway::providers(config)?,
        mcp: mcp::servers(config)?,
        relay,
        acp,
        prices: config.pricing.clone(),
        budgets: budgets(config),
        log_limit: usize::try_from(config.runner.log_limit.as_u64()).unwrap_or(usize::MAX),
        shutdown_grace: config.runner.shutdown_grace,
        id: config.runner.id.clone(),
        check_at_start: true,
        home_limit: config.storage.conversation_home_limit.as_u64(),
        skills: config.skill_sources(),
        project_skills: config.project_skills(),
    };
    Ok(Runner::new(store.clone(), Arc::new(sandbox), options)
        .with_artifact_limit(config.runner.artifact_limit.as_u64())
        .with_checkpoint_pack_limit(config.storage.checkpoint_pack_limit.as_u64()))
}

/// The budgets beside roles' own, as runners apply them.
fn budgets(config: &Config) -> gatehouse_runner::Budgets {
    gatehouse_runner::Budgets {
        daily: config.budget.daily,
        projects: config
            .projects
            .iter()
            .filter(|p| p.budget.is_some() || p.daily_budget.is_some())
            .map(|p| {
                let budget = gatehouse_runner::ProjectBudget {
                    run: p.budget,
                    daily: p.daily_budget,
                };
                (p.name.clone(), budget)
            })
            .collect(),
        schedules: config
            .schedules
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.budget?)))
            .collect(),
        ..gatehouse_runner::Budgets::default()
    }
}

/// A runner for `gatehouse doctor`: the configured roles, profiles, providers and relay on
/// this host's sandboxes, under an id of its own (`<id>-doctor-<pid>`: its sockets and
/// containers are not a serving runner's), over an in-memory store: the database is
/// neither needed nor touched. It only checks ([`Runner::doctor`]); it takes no job.
pub async fn doctor_runner(config: &Config, data_dir: &Path) -> anyhow::Result<Runner> {
    let id = format!("{}-doctor-{}", config.runner.id, std::process::id());
    let sandbox = sandbox::sandboxes_for_checks(config, data_dir, &id).await?;
    // The checks record nothing: a store of their own, in memory, never the server's.
    let store = Store::connect_lazy("sqlite::memory:").context("an in-memory store")?;
    let relay = gateway::relay(config)?;
    let acp = gateway::acp(config, relay.as_deref())?;
    let options = RunnerOptions {
        profiles: config.sandbox.profiles.clone(),
        roles: config.roles.clone(),
        providers: gateway::providers(config)?,
        mcp: mcp::servers(config)?,
        relay,
        acp,
        id,
        ..RunnerOptions::new(data_dir.to_owned())
    };
    Ok(Runner::new(store, Arc::new(sandbox), options))
}

/// A schedule of `[[schedules]]` as the store keeps it, owing its first fire at once (the
/// scheduler works out when that is).
pub fn schedule_row(
    s: &ScheduleConfig,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<ScheduleRow> {
    let ms = |t: &Option<String>| -> anyhow::Result<Option<i64>> {
        Ok(t.as_deref()
            .map(gatehouse_schedule::parse_time)
            .transpose()?
            .map(|t| t.as_millisecond()))
    };
    Ok(ScheduleRow {
        name: s.name.clone(),
        cron: s.cron.clone(),
        timezone: s.timezone.clone(),
        sop: s.target(),
        params: serde_json::to_string(&s.params)?,
        overlap: s.overlap_policy().map_err(anyhow::Error::msg)?,
        catchup_window_ms: i64::try_from(s.catchup_window.as_millis()).unwrap_or(i64::MAX),
        jitter_ms: i64::try_from(s.jitter.as_millis()).unwrap_or(i64::MAX),
        starts_ms: ms(&s.start)?,
        ends_ms: ms(&s.end)?,
        next_due_ms: Some(0),
        revision: 0,
        paused: false,
        pause_note: None,
        source: "config".into(),
        owner: s.owner.clone(),
        project: s.project.clone(),
        since_ms: now.timestamp_millis(),
        created_at: now,
        updated_at: now,
    })
}

impl ScheduleConfig {
    /// The SOP the schedule starts: `sop`, or `schedule-<name>` for the agent shorthand.
    pub fn target(&self) -> String {
        match &self.role {
            Some(_) => format!("schedule-{}", self.name),
            None => self.sop.clone(),
        }
    }

    /// For the agent shorthand, the one-node SOP it runs (`schedule-<name>`, its node
    /// `agent`), validated as any SOP file is.
    pub fn agent_task(&self) -> Option<Result<gatehouse_sop::Sop, gatehouse_sop::SopError>> {
        let (role, prompt) = self.role.as_ref().zip(self.prompt.as_ref())?;
        // JSON is YAML: the SOP parser reads it, and serde_json does the quoting.
        let text = serde_json::json!({
            "name": self.target(),
            "title": format!("Scheduled agent task · {}", self.name),
            "nodes": { "agent": { "kind": "agent", "role": role, "prompt": prompt } },
        })
        .to_string();
        Some(gatehouse_sop::parse(
            &format!("schedules.{}", self.name),
            &text,
        ))
    }

    /// The overlap policy `overlap` names.
    pub fn overlap_policy(&self) -> Result<gatehouse_schedule::Overlap, String> {
        self.overlap.parse()
    }

    /// The schedule's timing, checked: the same check the API applies to a created one.
    pub fn timing(&self) -> Result<gatehouse_schedule::Timing, gatehouse_schedule::ScheduleError> {
        let time =
            |t: &Option<String>| t.as_deref().map(gatehouse_schedule::parse_time).transpose();
        gatehouse_schedule::Timing::new(
            &self.name,
            &self.cron,
            &self.timezone,
            self.jitter,
            time(&self.start)?,
            time(&self.end)?,
        )
    }
}
