//! What one attempt may reach: its gateway token and egress token, the environment that
//! points its tools at them, and the relay an isolated sandbox runs. Dropping it revokes
//! both tokens, so an attempt that ended (or whose runner died) cannot use them again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gatehouse_agent::ModelUsage;
use gatehouse_sandbox::Relay;
use secrecy::ExposeSecret;

use super::Connections;
use super::meter::Meter;

/// One attempt's access to the gateway and the egress proxy.
pub(crate) struct Reach {
    pub(super) gateway: Option<gatehouse_gateway::Grant>,
    pub(super) egress: gatehouse_egress::Grant,
    pub(super) meter: Arc<Meter>,
    pub(super) label: Arc<str>,
    pub(super) connections: Arc<Mutex<HashMap<Arc<str>, Connections>>>,
    /// Variables for the sandbox: base URLs, tokens, proxy settings.
    pub(crate) env: Vec<(String, String)>,
    /// The relay an isolated sandbox runs; `None` when it shares the runner's network.
    pub(crate) relay: Option<Relay>,
}

impl Reach {
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
        tokens
    }

    /// What the gateway metered for the attempt, per model; `None` when its model requests
    /// did not go through the gateway.
    pub(crate) fn usage(&self) -> Option<Vec<ModelUsage>> {
        self.gateway.as_ref().map(|_| self.meter.usage())
    }

    /// Ends the attempt's access: both tokens stop working, and its connections so far
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
