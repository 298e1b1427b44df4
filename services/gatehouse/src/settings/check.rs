//! What a start refuses beyond what loading the configuration refuses: unreadable secrets,
//! settings that do not become clients, SOPs the configuration names that do not exist,
//! blobs kept in NATS without NATS. `up`, `serve` and `config check` all ask [`refusals`],
//! so a configuration the check passes is one a start accepts. None of it needs the
//! database, NATS, Docker or the network: the host (Docker and its images, the runner's
//! `runner.relay` and `runner.acp` binaries) is `gatehouse doctor`'s to check.

use gatehouse_sop::Catalog;

use crate::config::{BlobBackend, Config};
use crate::secret::SecretError;

/// Every problem that would stop a start with `config` and the SOPs of `catalog`, each on
/// its own line: empty when a start would go ahead.
pub fn refusals(config: &Config, catalog: &Catalog) -> Vec<String> {
    let mut problems: Vec<String> = config
        .secrets()
        .filter_map(|(key, secret)| secret.resolve().err().map(|e| format!("{key}: {e}")))
        .collect();
    if config.storage.backend(&config.server.nats_url) == BlobBackend::Nats
        && config.server.nats_url.is_empty()
    {
        problems.push(
            "storage.blobs = \"nats\" needs NATS: set server.nats_url (or --nats, \
             GATEHOUSE_NATS_URL), or keep blobs in the data directory with blobs = \"local\""
                .into(),
        );
    }
    problems.extend(unknown_sops(config, catalog));
    problems.extend(super::remotes::refusals(config));
    // What the services are built from; an unreadable secret is reported above already.
    let mut built = |result: anyhow::Result<()>| {
        if let Err(error) = result
            && !error.chain().any(|cause| cause.is::<SecretError>())
        {
            problems.push(format!("{error:#}"));
        }
    };
    if let Some(github) = &config.github {
        built(super::github::client(github).map(drop));
        built(super::github::ingest(github, &config.projects).map(drop));
    }
    let slack = super::chat::slack_client(config);
    built(super::chat::settings(config, slack.as_ref().ok().and_then(Option::as_ref)).map(drop));
    built(slack.map(drop));
    built(super::chat::outputs(config, None).map(drop));
    built(super::chat::discord_gateway(config).map(drop));
    built(super::console(config).map(drop));
    built(super::remotes::remotes(config).map(drop));
    built(super::gateway::providers(config).map(drop));
    built(super::mcp::servers(config).map(drop));
    problems
}

/// The SOPs `[[schedules]]`, `[[github.triggers]]` and chat channels start that are
/// neither built in nor in `server.sop_dirs`: each would start nothing, every time.
fn unknown_sops(config: &Config, catalog: &Catalog) -> Vec<String> {
    let known = || {
        let names: Vec<&str> = catalog.iter().map(|s| s.name.as_str()).collect();
        format!(
            "the SOPs are {} (built in, and from server.sop_dirs)",
            names.join(", ")
        )
    };
    let mut named: Vec<(String, &str)> = Vec::new();
    for s in config.schedules.iter().filter(|s| s.role.is_none()) {
        named.push((format!("schedule `{}`", s.name), &s.sop));
    }
    if let Some(github) = &config.github {
        for t in github.triggers.iter().filter(|t| !t.sop.is_empty()) {
            named.push((format!("github.triggers ({})", t.describe()), &t.sop));
        }
    }
    let channels = config
        .slack
        .iter()
        .map(|s| ("slack", &s.channel_sops))
        .chain(config.discord.iter().map(|d| ("discord", &d.channel_sops)));
    for (platform, sops) in channels {
        for (channel, sop) in sops {
            named.push((format!("{platform}.channel_sops ({channel})"), sop));
        }
    }
    named
        .into_iter()
        .filter(|(_, sop)| catalog.get(sop).is_none())
        .map(|(owner, sop)| format!("{owner}: no SOP named `{sop}`; {}", known()))
        .collect()
}
