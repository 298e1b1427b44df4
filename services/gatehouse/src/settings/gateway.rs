//! `[providers]` turned into what the runner's model gateway forwards to: each provider's
//! address and its key, read now so a missing key stops the start rather than a node.

use anyhow::Context;
use gatehouse_gateway::{Provider, ProviderKind};

use crate::config::{Config, ProviderKindConfig};

/// Every configured provider with its key resolved.
pub fn providers(config: &Config) -> anyhow::Result<Vec<Provider>> {
    config
        .providers
        .iter()
        .map(|(name, p)| {
            let base_url = p
                .base_url()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("providers.{name}"))?;
            let key = p
                .key
                .resolve()
                .with_context(|| format!("providers.{name}.key"))?;
            Ok(Provider {
                name: name.clone(),
                kind: match p.kind {
                    ProviderKindConfig::Anthropic => ProviderKind::Anthropic,
                    ProviderKindConfig::Openai => ProviderKind::OpenAi,
                    ProviderKindConfig::OpenaiCompatible => ProviderKind::OpenAiCompatible,
                },
                base_url,
                key,
            })
        })
        .collect()
}
