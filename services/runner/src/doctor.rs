//! `gatehouse doctor`, and the same checks logged when a runner starts: for every agent
//! role, on the runner's real sandboxes and network,
//!
//! - its CLI is in its sandbox (`command -v` run as a job in the role's profile, [`cli`]);
//! - so are its stdio MCP servers' programs, checked as an attempt's script checks them
//!   before its CLI starts ([`mcp`]);
//! - it reaches its provider through the gateway: a real request (the model list) sent to
//!   the runner's gateway with a token of the check's own, which the gateway swaps for the
//!   provider's real key as it does for a node; the key is never printed ([`http`]);
//! - a host it may not reach is refused: a `CONNECT` through the egress proxy to a host
//!   its allow-list does not name, and a warning when the profile's sandbox shares the
//!   runner's network (so the allow-list can be walked around).
//!
//! Each finding is one line naming the role, the profile and what to change.

mod cli;
mod http;
mod job;
mod mcp;
mod run;

use std::fmt;
use std::time::Duration;

use gatehouse_agent::Role;
use gatehouse_sandbox::Profile;
use tokio_util::sync::CancellationToken;

use crate::network::{Network, Reach, Wants};
use crate::runner::Runner;

/// How long the gateway and the egress proxy have to answer a check.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// Hosts to show refused, the first one the role's allow-list does not name.
const BLOCKED_CANDIDATES: [&str; 3] = ["example.com", "example.org", "gatehouse-doctor.invalid"];
/// The profile of a role that names none, as an SOP node without `sandbox` gets.
const DEFAULT_PROFILE: &str = "default";

/// What was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The role's CLI is in its sandbox.
    Cli,
    /// The role's stdio MCP servers' programs are in its sandbox.
    Mcp,
    /// The role reaches its provider through the gateway.
    Provider,
    /// A host outside the role's allow-list is refused.
    Egress,
    /// The role's CLI answered a one-word prompt for real (`gatehouse role check`).
    Run,
}

impl Check {
    /// The check's name in a finding's line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cli => "cli",
            Self::Mcp => "mcp",
            Self::Provider => "provider",
            Self::Egress => "egress",
            Self::Run => "run",
        }
    }
}

/// How a check went; the text says what was found or what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed(String),
    /// Works, but not as safely or as surely as it could.
    Warning(String),
    /// A node of the role would fail (or run unsafely): what to change.
    Failed(String),
}

/// One check of one role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub role: String,
    /// The sandbox profile the role runs in.
    pub profile: String,
    pub check: Check,
    pub outcome: Outcome,
}

impl Finding {
    /// Whether it is a failure.
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed(_))
    }
}

/// `FAIL role coder, profile agents, provider: …`: one line, as `gatehouse doctor` prints
/// it and the runner logs it.
impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (mark, text) = match &self.outcome {
            Outcome::Passed(text) => ("ok  ", text),
            Outcome::Warning(text) => ("warn", text),
            Outcome::Failed(text) => ("FAIL", text),
        };
        write!(
            f,
            "{mark} role {}, profile {}, {}: {text}",
            self.role,
            self.profile,
            self.check.as_str()
        )
    }
}

/// Every finding of a check-up, role by role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkup {
    pub findings: Vec<Finding>,
}

impl Checkup {
    /// Whether any check failed: `gatehouse doctor` then exits non-zero.
    pub fn failed(&self) -> bool {
        self.findings.iter().any(Finding::failed)
    }
}

impl Runner {
    /// Checks every configured role as [`crate::doctor`] describes, starting the gateway
    /// and egress proxy for the purpose if this runner has not (they stop with `stop`,
    /// as do the checks' sandbox jobs). Never takes a job. A runner built only to check
    /// should have an `id` of its own, so its sockets are not a serving runner's.
    pub async fn doctor(mut self, stop: CancellationToken) -> Checkup {
        if self.network.is_err() {
            self.start_network(&stop).await;
        }
        let checkup = self.checkup(&stop).await;
        stop.cancel();
        let sockets = self.options.data_dir.join("sockets").join(&self.options.id);
        let _ = std::fs::remove_dir_all(sockets);
        checkup
    }

    /// `gatehouse role check NAME`: the role's checks as [`Runner::doctor`] makes them,
    /// then its CLI run once for real on a one-word prompt in its sandbox, through the
    /// gateway ([`run`]). `Err` when no role has that name.
    pub async fn check_role_for_real(
        mut self,
        name: &str,
        stop: CancellationToken,
    ) -> Result<Checkup, String> {
        let Some(role) = self.options.roles.get(name).cloned() else {
            let known: Vec<&str> = self.options.roles.keys().map(String::as_str).collect();
            return Err(format!(
                "no role is named `{name}`; the configured roles are: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        };
        if self.network.is_err() {
            self.start_network(&stop).await;
        }
        let mut findings = self.check_role(name, &role, &stop).await;
        let profile_name = role.sandbox.as_deref().unwrap_or(DEFAULT_PROFILE);
        // A role whose CLI or profile is missing has said so; running it would only fail
        // the same way.
        if !findings.iter().any(Finding::failed)
            && let Some(profile) = self.options.profiles.get(profile_name)
        {
            findings.push(Finding {
                role: name.to_owned(),
                profile: profile_name.to_owned(),
                check: Check::Run,
                outcome: run::check(&self, name, &role, profile, &stop).await,
            });
        }
        stop.cancel();
        let sockets = self.options.data_dir.join("sockets").join(&self.options.id);
        let _ = std::fs::remove_dir_all(sockets);
        Ok(Checkup { findings })
    }

    /// Runs the checks and logs each finding, failures as errors, warnings as warnings:
    /// what a runner does as it starts, without holding its start up.
    pub(crate) async fn log_checkup(self, stop: CancellationToken) {
        let checkup = self.checkup(&stop).await;
        for finding in &checkup.findings {
            match finding.outcome {
                Outcome::Failed(_) => tracing::error!("doctor: {finding}"),
                Outcome::Warning(_) => tracing::warn!("doctor: {finding}"),
                Outcome::Passed(_) => tracing::info!("doctor: {finding}"),
            }
        }
        if checkup.failed() {
            tracing::error!(
                "doctor: some roles cannot work as configured; `gatehouse doctor` repeats the checks"
            );
        }
    }

    async fn checkup(&self, stop: &CancellationToken) -> Checkup {
        let mut findings = Vec::new();
        for (name, role) in &self.options.roles {
            if stop.is_cancelled() {
                break;
            }
            findings.extend(self.check_role(name, role, stop).await);
        }
        Checkup { findings }
    }

    async fn check_role(&self, name: &str, role: &Role, stop: &CancellationToken) -> Vec<Finding> {
        let profile_name = role.sandbox.as_deref().unwrap_or(DEFAULT_PROFILE);
        let finding = |check, outcome| Finding {
            role: name.to_owned(),
            profile: profile_name.to_owned(),
            check,
            outcome,
        };
        let Some(profile) = self.options.profiles.get(profile_name) else {
            return vec![finding(
                Check::Cli,
                Outcome::Failed(format!(
                    "the sandbox profile `{profile_name}` is not configured: add \
                     [sandbox.profiles.{profile_name}] or change the role's `sandbox`"
                )),
            )];
        };
        let mut findings = vec![finding(
            Check::Cli,
            cli::check(self, name, role, profile, stop).await,
        )];
        if let Some(outcome) = mcp::check(self, name, role, profile, stop).await {
            findings.push(finding(Check::Mcp, outcome));
        }
        if gatehouse_agent::Executor::needs_shim(role) && self.options.acp.is_none() {
            findings.push(finding(
                Check::Cli,
                Outcome::Failed(crate::acp::MISSING.to_owned()),
            ));
        }
        let opened = self.open_for_checks(name, role, role.provider.as_deref(), profile);
        if role.provider.is_some()
            && let Some(problem) = self.relay_problem(profile)
        {
            findings.push(finding(Check::Provider, Outcome::Failed(problem)));
        }
        if let Some(outcome) = self.check_provider(role, &opened).await {
            findings.push(finding(Check::Provider, outcome));
        }
        // A provider the gateway cannot grant is the provider check's failure; the egress
        // proxy is checked all the same.
        let opened = match opened {
            Err(_) if role.provider.is_some() => self.open_for_checks(name, role, None, profile),
            opened => opened,
        };
        for outcome in self.check_egress(role, profile, &opened).await {
            findings.push(finding(Check::Egress, outcome));
        }
        findings
    }

    /// The access a node of the role would get, opened for the checks on the runner's
    /// loopback; `Ok(None)`: it gets none.
    fn open_for_checks(
        &self,
        name: &str,
        role: &Role,
        provider: Option<&str>,
        profile: &Profile,
    ) -> Result<Option<Reach>, String> {
        let network = self
            .network
            .as_ref()
            .map_err(|why| format!("the gateway and egress proxy are not running: {why}"))?;
        let wants = Wants {
            label: format!("doctor role {name}"),
            provider: provider.map(|p| (p, role.models.as_slice())),
            role_egress: &role.egress,
            profile,
            // A check spends next to nothing and is nobody's run.
            budget: None,
            tools: None,
        };
        let Some(policy) = Network::wanted(&wants)? else {
            return Ok(None);
        };
        network.open(wants, policy, false).map(Some)
    }

    /// The model list through the gateway; `None` for a `command` role without a
    /// provider, which may need no model at all.
    async fn check_provider(
        &self,
        role: &Role,
        opened: &Result<Option<Reach>, String>,
    ) -> Option<Outcome> {
        let Some(provider) = role.provider.as_deref() else {
            return (!role.executor.model_apis().is_empty()).then(|| {
                Outcome::Warning(
                    "the role names no `provider`: its CLI reaches its model on its own, with \
                     a key in the sandbox; set provider = \"NAME\" and [providers.NAME] so the \
                     gateway holds the key"
                        .to_owned(),
                )
            });
        };
        let Some(configured) = self.options.providers.iter().find(|p| p.name == provider) else {
            return Some(Outcome::Failed(format!(
                "the provider `{provider}` is not configured: add [providers.{provider}] with \
                 kind, base_url and key"
            )));
        };
        let reach = match opened {
            Ok(Some(reach)) => reach,
            Ok(None) => return Some(Outcome::Failed("no gateway access was granted".to_owned())),
            Err(why) => return Some(Outcome::Failed(why.clone())),
        };
        let env = |name: &str| reach.env.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        let (base, header, token) = match (
            env("ANTHROPIC_BASE_URL"),
            env("OPENAI_BASE_URL"),
            env("GOOGLE_GEMINI_BASE_URL"),
        ) {
            (Some(base), _, _) => (base, http::KeyHeader::Anthropic, env("ANTHROPIC_API_KEY")),
            (_, Some(base), _) => (base, http::KeyHeader::Bearer, env("OPENAI_API_KEY")),
            (_, _, Some(base)) => (base, http::KeyHeader::Google, env("GEMINI_API_KEY")),
            (None, None, None) => {
                return Some(Outcome::Failed("the gateway gave no base URL".to_owned()));
            }
        };
        let Some(token) = token else {
            return Some(Outcome::Failed("the gateway gave no token".to_owned()));
        };
        let base_url = configured.base_url.as_str().trim_end_matches('/');
        let answer = match http::list_models(base, header, token, ANSWER_WITHIN).await {
            Ok(answer) => answer,
            Err(why) => {
                return Some(Outcome::Failed(format!(
                    "the runner's gateway did not answer: {why}"
                )));
            }
        };
        let said = if answer.message.is_empty() {
            String::new()
        } else {
            format!(" ({})", answer.message)
        };
        Some(match answer.status {
            200..=299 => Outcome::Passed(format!(
                "`{provider}` ({base_url}) answered through the gateway with its key: {} listing models",
                answer.status
            )),
            401 | 403 => Outcome::Failed(format!(
                "`{provider}` ({base_url}) refused the key{said}: check [providers.{provider}] key"
            )),
            404 | 405 => Outcome::Warning(format!(
                "`{provider}` ({base_url}) answered {} to a model list{said}: it is reached, but \
                 whether it takes the key is not known until a node asks it",
                answer.status
            )),
            429 => Outcome::Warning(format!(
                "`{provider}` ({base_url}) is reached but rate-limits the key{said}"
            )),
            502 | 504 => Outcome::Failed(format!(
                "`{provider}` cannot be reached at {base_url}{said}: check [providers.{provider}] \
                 base_url and that the runner's host can reach it"
            )),
            status => Outcome::Failed(format!(
                "`{provider}` ({base_url}) answered {status}{said}: check [providers.{provider}] \
                 and the provider's status"
            )),
        })
    }

    /// A sandbox with a network of its own reaches the gateway only through the relay.
    fn relay_problem(&self, profile: &Profile) -> Option<String> {
        if !self.sandbox.isolates_network(profile) {
            return None;
        }
        match &self.options.relay {
            None => Some(
                "the sandbox has no route out, and reaching the gateway needs the \
                 gatehouse-relay binary: build it with deploy/sandbox/build-relay.sh and set \
                 [runner] relay to its path"
                    .to_owned(),
            ),
            Some(path) if !path.is_file() => Some(format!(
                "[runner] relay is {}, which is not a file: build it with \
                 deploy/sandbox/build-relay.sh",
                path.display()
            )),
            Some(_) => None,
        }
    }

    /// A host outside the allow-list refused by the proxy, and whether the sandbox could
    /// go around the proxy.
    async fn check_egress(
        &self,
        role: &Role,
        profile: &Profile,
        opened: &Result<Option<Reach>, String>,
    ) -> Vec<Outcome> {
        let policy = match profile.egress_policy(&role.egress) {
            Ok(policy) => policy,
            Err(e) => return vec![Outcome::Failed(format!("{e}"))],
        };
        let mut outcomes = Vec::new();
        let Some(host) = BLOCKED_CANDIDATES
            .into_iter()
            .find(|host| !policy.allows(host, 443))
        else {
            outcomes.push(Outcome::Warning(
                "the allow-list lets every host tried through (a `*` entry?); list the hosts \
                 the role needs instead"
                    .to_owned(),
            ));
            return outcomes;
        };
        let proxy = match opened {
            Ok(Some(reach)) => reach
                .env
                .iter()
                .find(|(k, _)| k == "HTTPS_PROXY")
                .map(|(_, v)| v.clone()),
            Ok(None) => None,
            Err(why) => {
                outcomes.push(Outcome::Failed(why.clone()));
                None
            }
        };
        match proxy {
            None if opened.is_ok() => outcomes.push(Outcome::Passed(
                "the role may reach no host: its sandbox gets no egress proxy".to_owned(),
            )),
            None => {}
            Some(proxy) => outcomes.push(
                match http::connect(&proxy, host, 443, ANSWER_WITHIN).await {
                    Ok(answer) if answer.status == 403 => Outcome::Passed(format!(
                        "{host}:443, not in the allow-list, is refused by the egress proxy"
                    )),
                    Ok(answer) if (200..300).contains(&answer.status) => Outcome::Failed(format!(
                        "the egress proxy let {host}:443 through though the allow-list does not \
                     name it: check the profile's and the role's egress"
                    )),
                    Ok(answer) => Outcome::Failed(format!(
                        "the egress proxy answered {} to {host}:443 where 403 was expected ({})",
                        answer.status, answer.message
                    )),
                    Err(why) => Outcome::Failed(format!("the egress proxy did not answer: {why}")),
                },
            ),
        }
        if !self.sandbox.isolates_network(profile) {
            outcomes.push(Outcome::Warning(
                "the sandbox shares the runner's network: what the agent runs can reach any \
                 host directly, around the allow-list; use a Docker profile with network = \
                 \"none\", or a process profile on a host where user namespaces work"
                    .to_owned(),
            ));
        }
        outcomes.extend(profile.warnings().into_iter().map(Outcome::Warning));
        outcomes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_one_line_naming_the_role_the_profile_and_the_check() {
        let finding = Finding {
            role: "coder".into(),
            profile: "agents".into(),
            check: Check::Provider,
            outcome: Outcome::Failed("`model` refused the key".into()),
        };
        assert_eq!(
            finding.to_string(),
            "FAIL role coder, profile agents, provider: `model` refused the key"
        );
        let checkup = Checkup {
            findings: vec![
                Finding {
                    outcome: Outcome::Warning("w".into()),
                    ..finding.clone()
                },
                finding,
            ],
        };
        assert!(checkup.failed());
        assert!(!Checkup::default().failed());
    }
}
