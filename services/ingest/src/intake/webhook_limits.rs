//! Admission of webhook requests (GitHub, Slack, Discord) before their bodies are read.
//!
//! A webhook's signature covers its whole body, so the body is read into memory before
//! anyone knows whether the sender is GitHub or an attacker. Two bounds keep that memory
//! finite: each route's `max_body_bytes` (a `Content-Length` above it is refused at once,
//! a chunked body as soon as it passes it), and one count shared by every webhook route
//! of bodies being read or held while unverified: past `max_unverified_bodies` a request
//! waits, unread, for a slot (`slot_wait`), and is answered 503 with `Retry-After` when
//! none frees in time. Together: at most `max_unverified_bodies` × the largest
//! `max_body_bytes` of unverified body. Waiting costs a connection, not a body: a burst of
//! deliveries is taken as fast as slots free, instead of most of it being sent away.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

/// How many unverified webhook bodies may be read at once.
#[derive(Debug, Clone, Copy)]
pub struct WebhookLimits {
    /// Bodies read (or held until answered) at once across the webhook routes.
    pub max_unverified_bodies: usize,
    /// How long a request waits, unread, for one of those slots before it is answered 503.
    pub slot_wait: Duration,
}

impl Default for WebhookLimits {
    fn default() -> Self {
        Self {
            max_unverified_bodies: 16,
            slot_wait: Duration::from_secs(2),
        }
    }
}

/// The body limit of a webhook route whose platform is not configured: it answers 404
/// whatever it is sent, so there is no reason to read much of it.
pub(crate) const UNCONFIGURED_BODY_BYTES: usize = 64 * 1024;

/// What busy webhooks tell the sender: Slack retries after it; GitHub records the failed
/// delivery for redelivery (and reconciliation finds missed labels).
const RETRY_AFTER_SECONDS: &str = "1";

/// The slots for unverified bodies, shared by every webhook route of one router.
#[derive(Clone)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    wait: Duration,
}

impl Admission {
    pub(crate) fn new(limits: WebhookLimits) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(limits.max_unverified_bodies.max(1))),
            wait: limits.slot_wait,
        }
    }

    /// The rule for `source`'s routes, whose bodies may be `max_body` bytes, for [`admit`].
    pub(crate) fn rule(&self, source: &'static str, max_body: usize) -> Rule {
        Rule {
            slots: self.slots.clone(),
            wait: self.wait,
            source,
            max_body,
        }
    }
}

/// What [`admit`] checks for one webhook source.
#[derive(Clone)]
pub(crate) struct Rule {
    slots: Arc<Semaphore>,
    wait: Duration,
    source: &'static str,
    max_body: usize,
}

/// Middleware: 413 at once for a declared length above the limit, 503 with `Retry-After`
/// when every slot stays taken for the wait; otherwise the request holds a slot until it
/// is answered.
pub(crate) async fn admit(State(rule): State<Rule>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let max = rule.max_body;
    if let Some(declared) = declared
        && declared > u64::try_from(max).unwrap_or(u64::MAX)
    {
        refused(rule.source, "too_large");
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, HeaderValue::from_static("close"))],
            format!("the body is {declared} bytes; at most {max} are accepted\n"),
        )
            .into_response();
    }
    // A free slot is taken at once, whatever the wait (the timer is looked at only when
    // the slot is not ready).
    let slot = tokio::time::timeout(rule.wait, rule.slots.clone().acquire_owned()).await;
    let Ok(Ok(_slot)) = slot else {
        refused(rule.source, "busy");
        tracing::warn!(
            source = rule.source,
            "webhook refused: as many unverified bodies were being read as server.max_unverified_bodies allows, for all of server.webhook_slot_wait"
        );
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (
                    header::RETRY_AFTER,
                    HeaderValue::from_static(RETRY_AFTER_SECONDS),
                ),
                (header::CONNECTION, HeaderValue::from_static("close")),
            ],
            "too many webhook requests are being read; retry shortly\n",
        )
            .into_response();
    };
    next.run(request).await
}

fn refused(source: &'static str, reason: &'static str) {
    metrics::counter!("gatehouse_webhook_rejected_total", "source" => source, "reason" => reason)
        .increment(1);
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::{Body, Bytes};
    use axum::routing::post;
    use tower::ServiceExt;

    use super::*;

    /// A route that holds its slot until told to answer.
    fn app(admission: &Admission, release: Arc<tokio::sync::Notify>) -> Router {
        Router::new()
            .route(
                "/hook",
                post(move |body: Bytes| {
                    let release = release.clone();
                    async move {
                        release.notified().await;
                        body.len().to_string()
                    }
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                admission.rule("test", 10),
                admit,
            ))
    }

    fn post_hook(body: &'static str) -> Request {
        Request::post("/hook").body(Body::from(body)).unwrap()
    }

    #[tokio::test]
    async fn past_the_slots_webhooks_are_refused_without_being_read() {
        let admission = Admission::new(WebhookLimits {
            max_unverified_bodies: 1,
            slot_wait: Duration::from_millis(50),
        });
        let release = Arc::new(tokio::sync::Notify::new());
        let app = app(&admission, release.clone());
        let first = tokio::spawn(app.clone().oneshot(post_hook("hello")));
        while admission.slots.available_permits() == 1 {
            tokio::task::yield_now().await;
        }
        let busy = app.clone().oneshot(post_hook("again")).await.unwrap();
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(busy.headers()[header::RETRY_AFTER], "1");
        release.notify_one();
        assert_eq!(first.await.unwrap().unwrap().status(), StatusCode::OK);
        // The slot is back.
        let again = tokio::spawn(app.clone().oneshot(post_hook("again")));
        release.notify_one();
        assert_eq!(again.await.unwrap().unwrap().status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_declared_length_above_the_limit_is_refused_at_once() {
        let admission = Admission::new(WebhookLimits::default());
        let app = app(&admission, Arc::new(tokio::sync::Notify::new()));
        let request = Request::post("/hook")
            .header(header::CONTENT_LENGTH, "11")
            .body(Body::from("01234567890"))
            .unwrap();
        let answer = app.oneshot(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
