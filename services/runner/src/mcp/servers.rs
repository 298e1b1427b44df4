//! The `[mcp.NAME]` servers a runner hands its attempts: their definitions (no secrets),
//! which ones each project attaches, and the remote servers' forwarders, which hold the
//! secrets and which the runner's tools endpoint serves at `/mcp/<NAME>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_agent::{McpDefinition, McpError, McpServer, Role};
use gatehouse_gateway::RemoteMcp;

/// `[mcp]` and the projects' `mcp` lists, as the gatehouse binary read them.
#[derive(Debug, Clone, Default)]
pub struct McpServers {
    /// Every `[mcp.NAME]`, by name.
    pub servers: BTreeMap<String, McpDefinition>,
    /// The servers each project attaches (`[[projects]] mcp`), by project name.
    pub projects: BTreeMap<String, Vec<String>>,
    /// The remote servers' forwarders, by name, secrets resolved.
    pub remotes: BTreeMap<String, Arc<RemoteMcp>>,
}

impl McpServers {
    /// The servers an attempt of `role` on `project` (empty for none) gets, besides
    /// Gatehouse's own: the role's, then the project's. Refuses a name no longer configured
    /// (a run's frozen role may name one removed since), saying which.
    pub fn for_attempt(&self, role: &Role, project: &str) -> Result<Vec<McpServer>, McpError> {
        let project = self
            .projects
            .get(project)
            .map(Vec::as_slice)
            .unwrap_or_default();
        gatehouse_agent::mcp_servers(&role.mcp, project, &self.servers)
    }

    /// The forwarder of the remote server `name`, for `/mcp/<name>`; `None` when no remote
    /// server has that name.
    pub fn remote(&self, name: &str) -> Option<&Arc<RemoteMcp>> {
        self.remotes.get(name)
    }

    /// The [`gatehouse_agent::Tools`] of an attempt, its MCP servers only (the lead's
    /// tools endpoint adds Gatehouse's own server, the permission tool and skills); for a
    /// CLI that takes no MCP servers, none. `Err`: the message failing the attempt.
    pub(crate) fn tools(
        &self,
        role: &Role,
        project: &str,
    ) -> Result<gatehouse_agent::Tools, String> {
        if !role.executor.takes_mcp() {
            return Ok(gatehouse_agent::Tools::none());
        }
        let mcp = self
            .for_attempt(role, project)
            .map_err(|e| format!("the role's MCP servers: {e}"))?;
        // The project's servers join here, so the hook's naming limits are checked again.
        gatehouse_agent::Executor::check_mcp_names(role, mcp.iter().map(|s| s.name.as_str()))
            .map_err(|e| format!("the role's MCP servers: {e}"))?;
        Ok(gatehouse_agent::Tools {
            mcp,
            ..gatehouse_agent::Tools::none()
        })
    }
}

#[cfg(test)]
mod tests {
    use gatehouse_agent::{Executor, McpTransport};

    use super::*;

    #[test]
    fn an_attempt_gets_its_roles_then_its_projects_servers() {
        let servers = McpServers {
            servers: BTreeMap::from([
                (
                    "docs".to_owned(),
                    McpDefinition::Stdio {
                        command: vec!["docs-mcp".to_owned()],
                        env: BTreeMap::new(),
                    },
                ),
                ("wiki".to_owned(), McpDefinition::Remote),
            ]),
            projects: BTreeMap::from([("api".to_owned(), vec!["wiki".to_owned()])]),
            remotes: BTreeMap::new(),
        };
        let role = Role {
            mcp: vec!["docs".to_owned()],
            ..Role::new(Executor::ClaudeCode)
        };
        let names = |project: &str| -> Vec<String> {
            servers
                .for_attempt(&role, project)
                .expect("defined")
                .into_iter()
                .map(|s| s.name)
                .collect()
        };
        assert_eq!(names("api"), ["docs", "wiki"]);
        assert_eq!(names(""), ["docs"]);
        let wiki = &servers.for_attempt(&role, "api").expect("defined")[1];
        assert!(
            matches!(&wiki.transport, McpTransport::Http { url, .. } if url == "${GATEHOUSE_TOOLS_URL}/mcp/wiki")
        );
        let gone = Role {
            mcp: vec!["gone".to_owned()],
            ..role.clone()
        };
        // A project's server whose name Codex's hook would rewrite fails a Codex attempt
        // under permissions, as the role's own would at load.
        let hooked = McpServers {
            projects: BTreeMap::from([("api".to_owned(), vec!["my-wiki".to_owned()])]),
            servers: BTreeMap::from([("my-wiki".to_owned(), McpDefinition::Remote)]),
            remotes: BTreeMap::new(),
        };
        let codex = Role {
            permissions: Some(gatehouse_agent::Permissions::default()),
            ..Role::new(Executor::Codex)
        };
        let refused = hooked.tools(&codex, "api").unwrap_err();
        assert!(refused.contains("has a `-` in its name"), "{refused}");
        let unhooked = Role {
            permissions: None,
            ..codex
        };
        assert!(hooked.tools(&unhooked, "api").is_ok());
        let error = servers.tools(&gone, "").unwrap_err();
        assert_eq!(
            error,
            "the role's MCP servers: MCP server `gone` is not configured (add [mcp.gone]); the MCP servers are docs, wiki"
        );
        let pi = Role::new(Executor::Pi);
        assert_eq!(
            servers.tools(&pi, "api"),
            Ok(gatehouse_agent::Tools::none())
        );
    }
}
