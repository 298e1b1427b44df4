//! The gateway's own answers to a CLI — refusals and failures to reach the provider — in
//! the provider's error shape, so the CLI shows them as it shows the provider's errors and
//! retries exactly what it would retry from the provider.

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::json;

use crate::provider::ProviderKind;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the gateway answers with: a provider's streamed body or its own.
pub(crate) type GatewayBody = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

/// Why the gateway answers a request itself.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No live grant has this token (never granted, revoked, or its attempt ended).
    UnknownToken,
    /// The token is another provider's.
    OtherProvider,
    /// No provider is named by the path.
    NoRoute(String),
    ModelNotAllowed {
        model: String,
        allowed: Vec<String>,
    },
    Budget(String),
    TooLarge(usize),
    BadBody,
    /// The provider refused the gateway's own key; its answer (which may echo part of the
    /// key) is replaced.
    ProviderRefusedKey(String),
    Unreachable(String),
    Timeout(String),
}

impl Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Self::UnknownToken | Self::OtherProvider | Self::ProviderRefusedKey(_) => {
                StatusCode::UNAUTHORIZED
            }
            Self::NoRoute(_) => StatusCode::NOT_FOUND,
            Self::ModelNotAllowed { .. } | Self::Budget(_) => StatusCode::FORBIDDEN,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BadBody => StatusCode::BAD_REQUEST,
            Self::Unreachable(_) => StatusCode::BAD_GATEWAY,
            Self::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    fn message(&self) -> String {
        match self {
            Self::UnknownToken => {
                "Gatehouse gateway: unknown or expired token (it lives as long as its attempt)"
                    .to_owned()
            }
            Self::OtherProvider => {
                "Gatehouse gateway: this token is not valid for this provider".to_owned()
            }
            Self::NoRoute(path) => format!(
                "Gatehouse gateway: no provider at {path}; use http://<gateway>/<provider>/..."
            ),
            Self::ModelNotAllowed { model, allowed } => format!(
                "Gatehouse gateway: model `{model}` is not allowed for this role; allowed: {}",
                allowed.join(", ")
            ),
            Self::Budget(message) => message.clone(),
            Self::TooLarge(limit) => {
                format!("Gatehouse gateway: request body larger than {limit} bytes")
            }
            Self::BadBody => "Gatehouse gateway: the request body could not be read".to_owned(),
            Self::ProviderRefusedKey(provider) => format!(
                "Gatehouse gateway: provider `{provider}` refused Gatehouse's key; the operator must check it"
            ),
            Self::Unreachable(provider) => {
                format!("Gatehouse gateway: provider `{provider}` could not be reached")
            }
            Self::Timeout(provider) => {
                format!("Gatehouse gateway: provider `{provider}` did not answer in time")
            }
        }
    }

    /// Anthropic's `error.type` for this refusal.
    fn anthropic_type(&self) -> &'static str {
        match self {
            Self::UnknownToken | Self::OtherProvider | Self::ProviderRefusedKey(_) => {
                "authentication_error"
            }
            Self::NoRoute(_) => "not_found_error",
            Self::ModelNotAllowed { .. } | Self::Budget(_) => "permission_error",
            Self::TooLarge(_) => "request_too_large",
            Self::BadBody => "invalid_request_error",
            Self::Unreachable(_) => "api_error",
            Self::Timeout(_) => "timeout_error",
        }
    }

    /// OpenAI's `error.type` and `error.code` for this refusal.
    fn openai_type(&self) -> (&'static str, Option<&'static str>) {
        match self {
            Self::UnknownToken | Self::OtherProvider | Self::ProviderRefusedKey(_) => {
                ("invalid_request_error", Some("invalid_api_key"))
            }
            Self::NoRoute(_) => ("invalid_request_error", Some("unknown_url")),
            Self::ModelNotAllowed { .. } => ("invalid_request_error", Some("model_not_found")),
            Self::Budget(_) => ("insufficient_quota", Some("insufficient_quota")),
            Self::TooLarge(_) | Self::BadBody => ("invalid_request_error", None),
            Self::Unreachable(_) | Self::Timeout(_) => ("server_error", None),
        }
    }

    /// Google's `error.status` for this refusal.
    fn google_status(&self) -> &'static str {
        match self {
            Self::UnknownToken | Self::OtherProvider | Self::ProviderRefusedKey(_) => {
                "UNAUTHENTICATED"
            }
            Self::NoRoute(_) => "NOT_FOUND",
            Self::ModelNotAllowed { .. } | Self::Budget(_) => "PERMISSION_DENIED",
            Self::TooLarge(_) | Self::BadBody => "INVALID_ARGUMENT",
            Self::Unreachable(_) => "UNAVAILABLE",
            Self::Timeout(_) => "DEADLINE_EXCEEDED",
        }
    }

    /// The answer, in `kind`'s error shape.
    pub(crate) fn response(&self, kind: ProviderKind) -> Response<GatewayBody> {
        let message = self.message();
        let body = match kind {
            ProviderKind::Anthropic => json!({
                "type": "error",
                "error": {"type": self.anthropic_type(), "message": message},
            }),
            ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => {
                let (kind, code) = self.openai_type();
                json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
            }
            ProviderKind::Gemini => json!({
                "error": {
                    "code": self.status().as_u16(),
                    "message": message,
                    "status": self.google_status(),
                },
            }),
        };
        let mut response = Response::new(
            Full::new(Bytes::from(body.to_string()))
                .map_err(|never| match never {})
                .boxed_unsync(),
        );
        *response.status_mut() = self.status();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        response
    }
}
