//! `gatehouse mcp`: Gatehouse's API as MCP tools on standard input and output, for a
//! person's own assistant (Claude Code, Codex, any MCP client), acting with the person's
//! token exactly as the other client verbs do.
//!
//! - Which tools are offered follows the token: `GET /whoami` names its scopes, and a tool
//!   whose scope the token lacks is not listed; `decide_gate` is listed only for a token
//!   of a person's own (never one made with `token create --for-agent`).
//! - Hiding is a courtesy, not the check: every call goes to the API, which decides as it
//!   does for any client (a hidden tool called anyway is refused there, and its refusal,
//!   naming the missing scope, comes back as the tool's error).
//! - Arguments are checked before anything is sent (ids, names, sizes), and what comes
//!   back is bounded (logs and artifacts cut with a note).
//!
//! One file per family of tools: [`runs`], [`artifacts`], [`requirements`], [`gates`];
//! [`catalog`] lists them with the scope each needs, [`answer`] shapes what a call returns
//! and [`checks`] reads the arguments.

mod answer;
mod artifacts;
mod catalog;
mod checks;
mod gates;
mod requirements;
mod runs;

use std::sync::Arc;

use gatehouse_ingest::views::WhoAmI;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::cli::client::Client;

pub(crate) use answer::Answer;

/// Serves the tools on stdin/stdout until the client closes them. Nothing but MCP
/// messages is written to stdout; logs go to stderr.
pub async fn serve(client: Client) -> anyhow::Result<()> {
    let server = Tools {
        client: Arc::new(client),
        who: OnceCell::new(),
    };
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("the MCP client did not start a session: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| anyhow::anyhow!("the MCP session ended badly: {e}"))?;
    Ok(())
}

/// The MCP server: the API client and, once asked, who its token is.
struct Tools {
    client: Arc<Client>,
    who: OnceCell<WhoAmI>,
}

impl Tools {
    /// Who the token acts for and what it may do, asked of the API once per session (a
    /// token's scopes never change; a revoked one fails every call anyway).
    async fn who(&self) -> Result<&WhoAmI, ErrorData> {
        self.who
            .get_or_try_init(|| async { self.client.get::<WhoAmI>("/whoami").await })
            .await
            .map_err(|e| {
                ErrorData::internal_error(
                    format!(
                        "cannot learn who this token is from the Gatehouse server at {}: {}",
                        self.client.server(),
                        answer::chain(&e)
                    ),
                    None,
                )
            })
    }
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("gatehouse", env!("CARGO_PKG_VERSION")).with_title("Gatehouse"),
            )
            .with_instructions(
                "Gatehouse runs SOPs (scripts, agents, approval gates) on requirements. \
                 These tools read runs, logs, artifacts, requirements and gates, start runs, \
                 steer them and decide gates, as the person whose token this is. Ids are \
                 full UUIDs as list_runs and list_gates show them; a gate is RUN/NODE.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let who = self.who().await?;
        Ok(ListToolsResult::with_all_items(
            catalog::ALL
                .iter()
                .filter(|tool| tool.offered_to(who))
                .map(catalog::Spec::tool)
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(spec) = catalog::find(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "there is no tool `{}`; the tools are {}",
                    checks::shown(&request.name),
                    catalog::names()
                ),
                None,
            ));
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let answer = match spec.call(&self.client, arguments).await {
            Ok(answer) => answer,
            Err(failure) => Answer::failed(&failure),
        };
        Ok(answer.into_result().into())
    }
}
