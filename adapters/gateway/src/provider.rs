//! The model providers the gateway fronts, and where a request for one goes.

use secrecy::{ExposeSecret, SecretString};
use url::Url;

use crate::error::GatewayError;

/// The API a provider speaks, which decides how its key is sent, its error shape and the
/// environment a sandbox gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    /// Anthropic Messages; the key goes in `x-api-key`.
    Anthropic,
    /// OpenAI (Responses, Chat Completions); the key goes in `Authorization: Bearer`.
    OpenAi,
    /// A server speaking OpenAI's API elsewhere (a local model, a proxy).
    OpenAiCompatible,
    /// Google's Gemini API (`generateContent`); the key goes in `x-goog-api-key`, and the
    /// model is named in the path rather than the body.
    Gemini,
}

/// A provider as configured (`[providers.NAME]`). The key only ever leaves the gateway
/// towards `base_url`; `Debug` shows it redacted.
#[derive(Clone, Debug)]
pub struct Provider {
    /// The name in the gateway's paths: `http://<gateway>/<name>/...`.
    pub name: String,
    pub kind: ProviderKind,
    /// The provider's root, e.g. `https://api.anthropic.com`. For the OpenAI kinds a
    /// trailing `/v1` is accepted and dropped, since the CLIs put `/v1` in their own paths
    /// (Gemini's put `/v1beta`).
    pub base_url: Url,
    pub key: SecretString,
}

impl Provider {
    pub(crate) fn check(&self) -> Result<(), GatewayError> {
        let name_ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err(GatewayError::BadProviderName(self.name.clone()));
        }
        let bad = |reason| GatewayError::BadBaseUrl {
            provider: self.name.clone(),
            url: self.base_url.to_string(),
            reason,
        };
        if !matches!(self.base_url.scheme(), "http" | "https") {
            return Err(bad("only http and https are forwarded to"));
        }
        if self.base_url.host_str().is_none() {
            return Err(bad("it names no host"));
        }
        if self.base_url.query().is_some() || self.base_url.fragment().is_some() {
            return Err(bad("it has a query or a fragment"));
        }
        if !self.base_url.username().is_empty() || self.base_url.password().is_some() {
            return Err(bad("credentials belong in `key`, not in the URL"));
        }
        let key = self.key.expose_secret();
        if key.is_empty() || http::HeaderValue::from_str(key).is_err() {
            return Err(GatewayError::BadKey(self.name.clone()));
        }
        Ok(())
    }

    /// Where a request for `rest` (path and query after `/<name>`) goes.
    pub(crate) fn target(&self, rest: &str) -> String {
        let mut base = self.base_url.path().trim_end_matches('/');
        if matches!(
            self.kind,
            ProviderKind::OpenAi | ProviderKind::OpenAiCompatible
        ) {
            base = base.strip_suffix("/v1").unwrap_or(base);
        }
        let origin = self.base_url.origin().ascii_serialization();
        format!("{origin}{base}{rest}")
    }
}

/// The environment variables that point an executor at the gateway for a provider.
pub(crate) fn environment(
    kind: ProviderKind,
    name: &str,
    gateway: &Url,
    token: &str,
) -> Vec<(String, String)> {
    let root = format!("{}/{name}", gateway.as_str().trim_end_matches('/'));
    match kind {
        ProviderKind::Anthropic => vec![
            ("ANTHROPIC_BASE_URL".to_owned(), root),
            ("ANTHROPIC_API_KEY".to_owned(), token.to_owned()),
        ],
        ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => vec![
            ("OPENAI_BASE_URL".to_owned(), format!("{root}/v1")),
            ("OPENAI_API_KEY".to_owned(), token.to_owned()),
        ],
        // The Gemini CLI's SDK reads its root from `GOOGLE_GEMINI_BASE_URL`.
        ProviderKind::Gemini => vec![
            ("GOOGLE_GEMINI_BASE_URL".to_owned(), root),
            ("GEMINI_API_KEY".to_owned(), token.to_owned()),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(kind: ProviderKind, url: &str) -> Provider {
        Provider {
            name: "p".to_owned(),
            kind,
            base_url: Url::parse(url).expect("url"),
            key: SecretString::from("k"),
        }
    }

    #[test]
    fn targets_keep_the_path_and_drop_a_doubled_v1() {
        let openai = provider(ProviderKind::OpenAi, "https://api.openai.com/v1/");
        assert_eq!(
            openai.target("/v1/responses?x=1"),
            "https://api.openai.com/v1/responses?x=1"
        );
        let local = provider(ProviderKind::OpenAiCompatible, "http://127.0.0.1:8000/llm");
        assert_eq!(
            local.target("/v1/chat/completions"),
            "http://127.0.0.1:8000/llm/v1/chat/completions"
        );
        let gemini = provider(
            ProviderKind::Gemini,
            "https://generativelanguage.googleapis.com/",
        );
        assert_eq!(
            gemini.target("/v1beta/models/g:streamGenerateContent?alt=sse"),
            "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"
        );
        let anthropic = provider(ProviderKind::Anthropic, "https://api.anthropic.com");
        assert_eq!(
            anthropic.target("/v1/messages"),
            "https://api.anthropic.com/v1/messages"
        );
    }

    #[test]
    fn bad_names_and_urls_are_refused() {
        let mut p = provider(ProviderKind::Anthropic, "ftp://x");
        assert!(matches!(p.check(), Err(GatewayError::BadBaseUrl { .. })));
        p.base_url = Url::parse("https://user:pw@x").expect("url");
        assert!(matches!(p.check(), Err(GatewayError::BadBaseUrl { .. })));
        p.base_url = Url::parse("https://x").expect("url");
        p.name = "a/b".to_owned();
        assert!(matches!(p.check(), Err(GatewayError::BadProviderName(_))));
    }
}
