//! What one attempt may reach: its gateway token and egress token, the environment that
//! points its tools at them, and the relay an isolated sandbox runs. Dropping it revokes
//! both tokens, so an attempt that ended (or whose runner died) cannot use them again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gatehouse_agent::ModelUsage;
use gatehouse_sandbox::Relay;
use secrecy::ExposeSecret;

use super::Connections;
use super::ledger::{Ledger, Refusal};
use super::meter::Meter;

/// One attempt's access to the gateway and the egress proxy.
pub(crate) struct Reach {
    pub(super) gateway: Option<gatehouse_gateway::Grant>,
    pub(super) egress: gatehouse_egress::Grant,
    /// The attempt's token for Gatehouse's tools, for an agent; dropped with the attempt.
    pub(super) tools: Option<crate::mcp::Ticket>,
    pub(super) meter: Arc<Meter>,
    /// The attempt's budgets, when its model requests go through the gateway.
    pub(super) budget: Option<Arc<Ledger>>,
    pub(super) label: Arc<str>,
    pub(super) connections: Arc<Mutex<HashMap<Arc<str>, Connections>>>,
    /// Variables for the sandbox: base URLs, tokens, proxy settings.
    pub(crate) env: Vec<(String, String)>,
    /// The relay an isolated sandbox runs; `None` when it shares the runner's network.
    pub(crate) relay: Option<Relay>,
}

impl Reach {
    /// The API the attempt's model requests speak through the gateway, which the CLI's
    /// command line is written for; `None` when they do not go through it.
    pub(crate) fn model_api(&self) -> Option<gatehouse_agent::ModelApi> {
        use gatehouse_agent::ModelApi;
        use gatehouse_gateway::ProviderKind;
        self.gateway.as_ref().map(|grant| match grant.kind() {
            ProviderKind::Anthropic => ModelApi::Anthropic,
            ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => ModelApi::OpenAi,
            ProviderKind::Gemini => ModelApi::Gemini,
        })
    }

    /// The tokens, named, to mask in output and refuse in artifacts like secrets.
    pub(crate) fn tokens(&self) -> Vec<(String, String)> {
        let mut tokens = vec![(
            "the egress proxy token".to_owned(),
            self.egress.token().to_owned(),
        )];
        if let Some(gateway) = &self.gateway {
            tokens.push((
                "the model gateway token".to_owned(),
                gateway.token().expose_secret().to_owned(),
            ));
        }
        if let Some(tools) = &self.tools {
            tokens.push((
                "Gatehouse's tools token".to_owned(),
                tools.token().to_owned(),
            ));
        }
        tokens
    }

    /// What the gateway metered for the attempt, per model; `None` when its model requests
    /// did not go through the gateway.
    pub(crate) fn usage(&self) -> Option<Vec<ModelUsage>> {
        self.gateway.as_ref().map(|_| self.meter.usage())
    }

    /// Why a budget refused one of the attempt's model requests, if one did: the
    /// attempt fails with this, not with the exit code the CLI chose.
    pub(crate) fn budget_refused(&self) -> Option<Refusal> {
        self.budget.as_ref().and_then(|b| b.refused())
    }

    /// Waits for the attempt's budget charges under way; returns the budget notes kept
    /// for the attempt to show (80 % warnings of a turn).
    pub(crate) async fn settle_budget(&self) -> Vec<String> {
        match &self.budget {
            Some(budget) => {
                budget.settle().await;
                budget.take_notes()
            }
            None => Vec::new(),
        }
    }

    /// Whether the attempt was given Gatehouse's tools.
    pub(crate) fn has_tools(&self) -> bool {
        self.tools.is_some()
    }

    /// Ends the attempt's access: its tokens stop working, and its connections so far
    /// are handed over.
    pub(crate) fn finish(&self) -> Connections {
        self.revoke();
        self.connections
            .lock()
            .ok()
            .and_then(|mut all| all.remove(&self.label))
            .unwrap_or_default()
    }

    fn revoke(&self) {
        self.egress.revoke();
        if let Some(tools) = &self.tools {
            tools.revoke();
        }
        if let Some(gateway) = &self.gateway {
            gateway.revoke();
        }
    }
}

impl Drop for Reach {
    fn drop(&mut self) {
        self.revoke();
        if let Ok(mut all) = self.connections.lock() {
            all.remove(&self.label);
        }
    }
}
