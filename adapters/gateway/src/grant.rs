//! Grants: one attempt's access to one provider through the gateway.

use std::sync::{Arc, Weak};

use secrecy::{ExposeSecret, SecretString};
use url::Url;

use crate::budget::Budget;
use crate::grants::{Granted, Grants};
use crate::provider::{self, ProviderKind};
use crate::token::TokenHash;
use crate::usage::{Totals, UsageSink};

/// What to grant.
#[derive(Clone)]
pub struct GrantSpec {
    /// Who the grant is for, in logs and usage records (the attempt id).
    pub label: String,
    /// The provider's name.
    pub provider: String,
    /// The models the grant may ask for; `None` allows any.
    pub models: Option<Vec<String>>,
    /// Asked before each request and charged after it.
    pub budget: Option<Arc<dyn Budget>>,
    /// Told of each request as it ends.
    pub sink: Option<Arc<dyn UsageSink>>,
}

impl std::fmt::Debug for GrantSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantSpec")
            .field("label", &self.label)
            .field("provider", &self.provider)
            .field("models", &self.models)
            .field("budget", &self.budget.is_some())
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

/// A live grant: its token opens the gateway to its provider until [`Grant::revoke`] or
/// until the grant is dropped, so an attempt's token dies with the attempt however it ends.
pub struct Grant {
    pub(crate) token: SecretString,
    pub(crate) hash: TokenHash,
    pub(crate) granted: Arc<Granted>,
    pub(crate) grants: Weak<Grants>,
    pub(crate) kind: ProviderKind,
    pub(crate) public_url: Url,
}

impl Grant {
    /// The token to hand the sandbox in place of the provider's key.
    pub fn token(&self) -> &SecretString {
        &self.token
    }

    /// The environment that points the executor at the gateway with this grant's token:
    /// `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` for Anthropic, `OPENAI_BASE_URL` (with
    /// `/v1`) and `OPENAI_API_KEY` for the OpenAI kinds.
    pub fn environment(&self) -> Vec<(String, String)> {
        self.environment_at(&self.public_url)
    }

    /// The same, for a sandbox that reaches the gateway at another address (a relay, a
    /// socket forwarded into a container).
    pub fn environment_at(&self, gateway: &Url) -> Vec<(String, String)> {
        provider::environment(
            self.kind,
            &self.granted.provider,
            gateway,
            self.token.expose_secret(),
        )
    }

    /// The kind of provider the token reaches, which decides the API the sandbox speaks.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// The label given at grant time.
    pub fn label(&self) -> &str {
        &self.granted.label
    }

    /// Totals of the requests so far.
    pub fn usage(&self) -> Totals {
        *self.granted.totals()
    }

    /// Stops the token working at once; requests already let through finish. Idempotent.
    pub fn revoke(&self) {
        if let Some(grants) = self.grants.upgrade() {
            grants.revoke(&self.hash);
        }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        self.revoke();
    }
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("label", &self.granted.label)
            .field("provider", &self.granted.provider)
            .field("models", &self.granted.models)
            .finish_non_exhaustive()
    }
}
