//! The model gateway. Agents in sandboxes must reach their model provider, but the provider's
//! key must never enter a sandbox, where anything the agent runs could read it and send it
//! anywhere; and Gatehouse, not the CLI, must count what a run spends and stop it at a budget.
//! So the runner fronts each provider with this gateway:
//!
//! - a sandbox gets the provider's base URL pointing at the gateway
//!   (`http://<gateway>/<provider>`) and a token of its attempt in place of the key
//!   ([`Gateway::grant`], [`Grant::environment`]); the token stops working when the grant is
//!   revoked or dropped;
//! - the gateway checks the token, the model allow-list and the [`Budget`], swaps in the
//!   real key, forwards over TLS and streams the answer back frame by frame, never buffering
//!   a whole response;
//! - it reads the token figures from the provider's answers as they pass ([`Usage`]) and
//!   hands them to the grant's totals, its budget and its [`UsageSink`].
//!
//! It also forwards to remote MCP servers ([`RemoteMcp`]), adding their secret headers the
//! same way, for the runner's tools endpoint.
//!
//! Refusals come in the provider's own error shape, so the CLI shows them as it shows the
//! provider's errors. The key appears in no log line, error, `Debug` output or response.

mod body;
mod budget;
mod config;
mod error;
mod forward;
mod gateway;
mod grant;
mod grants;
mod mcp_remote;
mod meter;
mod provider;
mod refusal;
mod serve;
mod token;
mod usage;

pub use budget::{Admission, Budget, Ticket};
pub use config::GatewayConfig;
pub use error::GatewayError;
pub use gateway::Gateway;
pub use grant::{Grant, GrantSpec};
pub use mcp_remote::{McpBody, RemoteMcp, RemoteMcpLimits};
pub use provider::{Provider, ProviderKind};
pub use serve::Listener;
pub use usage::{Metered, Totals, Usage, UsageSink};
