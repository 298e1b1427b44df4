//! `[mcp]` and the projects' `mcp` lists turned into what the runner hands attempts: the
//! definitions without secrets, and a forwarder per remote server with its secret headers
//! read now, so a missing secret stops the start rather than an agent's tool call.

use anyhow::Context;
use gatehouse_gateway::RemoteMcp;
use gatehouse_runner::McpServers;
use secrecy::{ExposeSecret, SecretString};

use crate::config::Config;

/// Every `[mcp.NAME]`, remote ones' secrets resolved.
pub fn servers(config: &Config) -> anyhow::Result<McpServers> {
    let mut servers = McpServers::default();
    for (name, server) in &config.mcp {
        let definition = server
            .definition()
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("mcp.{name}"))?;
        if matches!(definition, gatehouse_agent::McpDefinition::Remote) {
            let url = server
                .url()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("mcp.{name}"))?;
            let mut headers = Vec::new();
            for (header, prefix, secret, key) in server.secret_headers() {
                let value = secret
                    .resolve()
                    .with_context(|| format!("mcp.{name}.{key}"))?;
                let value = SecretString::from(format!("{prefix}{}", value.expose_secret()));
                headers.push((header, value));
            }
            let remote =
                RemoteMcp::new(name, url, headers).with_context(|| format!("mcp.{name}"))?;
            servers
                .remotes
                .insert(name.clone(), std::sync::Arc::new(remote));
        }
        servers.servers.insert(name.clone(), definition);
    }
    servers.projects = config
        .projects
        .iter()
        .filter(|p| !p.mcp.is_empty())
        .map(|p| (p.name.clone(), p.mcp.clone()))
        .collect();
    Ok(servers)
}
