//! The gateway: its providers, its live grants and the client it forwards with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use secrecy::SecretString;

use crate::config::GatewayConfig;
use crate::error::GatewayError;
use crate::grant::{Grant, GrantSpec};
use crate::grants::{Granted, Grants};
use crate::provider::Provider;
use crate::token;
use crate::usage::Totals;

pub(crate) type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

pub(crate) struct Inner {
    pub(crate) config: GatewayConfig,
    pub(crate) providers: HashMap<String, Provider>,
    pub(crate) grants: Arc<Grants>,
    pub(crate) client: HttpClient,
}

/// The model gateway. Cheap to clone: clones share providers and grants.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<_> = self.inner.providers.keys().collect();
        names.sort();
        f.debug_struct("Gateway")
            .field("config", &self.inner.config)
            .field("providers", &names)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway fronting `providers`. Refuses a provider whose name cannot be a path
    /// segment, whose base URL is not plain http(s), or that is configured twice.
    pub fn new(config: GatewayConfig, providers: Vec<Provider>) -> Result<Self, GatewayError> {
        let mut by_name = HashMap::new();
        for provider in providers {
            provider.check()?;
            if by_name.contains_key(&provider.name) {
                return Err(GatewayError::DuplicateProvider(provider.name));
            }
            by_name.insert(provider.name.clone(), provider);
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(config.connect_timeout));
        // Ring only, named here: the process may hold other rustls providers, and the
        // default would then be ambiguous.
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())?
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                providers: by_name,
                grants: Arc::new(Grants::default()),
                client,
            }),
        })
    }

    /// Grants `spec.provider` to one attempt: a fresh token, valid until the returned
    /// [`Grant`] is revoked or dropped.
    pub fn grant(&self, spec: GrantSpec) -> Result<Grant, GatewayError> {
        let provider = self
            .inner
            .providers
            .get(&spec.provider)
            .ok_or_else(|| GatewayError::UnknownProvider(spec.provider.clone()))?;
        let token = token::fresh();
        let hash = token::hash(&token);
        let granted = Arc::new(Granted {
            label: spec.label,
            provider: spec.provider,
            models: spec.models,
            budget: spec.budget,
            sink: spec.sink,
            totals: Mutex::new(Totals::default()),
        });
        self.inner.grants.insert(hash, granted.clone());
        Ok(Grant {
            token: SecretString::from(token),
            hash,
            granted,
            grants: Arc::downgrade(&self.inner.grants),
            kind: provider.kind,
            public_url: self.inner.config.public_url.clone(),
        })
    }
}
