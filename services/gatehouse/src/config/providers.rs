//! `[providers.NAME]`: the model providers agents reach through the runner's gateway, and
//! the keys only the gateway holds.

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// One model provider. A role names it with `provider = "NAME"`; its sandbox then gets the
/// gateway's address and a token of its attempt, and the gateway alone sends `key`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Which API the provider speaks.
    pub kind: ProviderKindConfig,
    /// Where the provider is; `https://api.anthropic.com` and `https://api.openai.com/v1`
    /// for `anthropic` and `openai`, required for `openai-compatible`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The provider's API key, usually `{ env = "ANTHROPIC_API_KEY" }`: read by the runner,
    /// never given to a sandbox.
    pub key: Secret,
}

/// `kind` as the configuration writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKindConfig {
    /// Anthropic's Messages API (Claude Code).
    Anthropic,
    /// OpenAI's Responses and Chat Completions APIs (Codex).
    Openai,
    /// A server speaking OpenAI's API elsewhere (a local model, a company proxy).
    OpenaiCompatible,
    /// Google's Gemini API (the Gemini CLI).
    Gemini,
}

impl ProviderKindConfig {
    /// The name the configuration uses, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Openai => "openai",
            Self::OpenaiCompatible => "openai-compatible",
            Self::Gemini => "gemini",
        }
    }

    /// The API its clients speak.
    pub fn api(self) -> gatehouse_agent::ModelApi {
        match self {
            Self::Anthropic => gatehouse_agent::ModelApi::Anthropic,
            Self::Openai | Self::OpenaiCompatible => gatehouse_agent::ModelApi::OpenAi,
            Self::Gemini => gatehouse_agent::ModelApi::Gemini,
        }
    }

    /// The provider's public address, when it has one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::Anthropic => Some("https://api.anthropic.com"),
            Self::Openai => Some("https://api.openai.com/v1"),
            Self::OpenaiCompatible => None,
            Self::Gemini => Some("https://generativelanguage.googleapis.com"),
        }
    }
}

impl ProviderConfig {
    /// The base URL the gateway forwards to, or why there is none usable.
    pub fn base_url(&self) -> Result<url::Url, String> {
        let text = match (&self.base_url, self.kind.default_base_url()) {
            (Some(url), _) => url.as_str(),
            (None, Some(url)) => url,
            (None, None) => {
                return Err(format!(
                    "a provider of kind \"{}\" needs `base_url`, e.g. base_url = \"http://127.0.0.1:8000/v1\"",
                    self.kind.as_str()
                ));
            }
        };
        let url = url::Url::parse(text).map_err(|e| {
            format!(
                "base_url {text:?} is not a URL ({e}); write e.g. \"https://api.example.com/v1\""
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "base_url {text:?} must be an http:// or https:// address with a host"
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "base_url {text:?} carries credentials; put the key in `key` instead"
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "base_url {text:?} has a query or fragment; remove it"
            ));
        }
        Ok(url)
    }
}
