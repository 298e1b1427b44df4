//! What a test logged: a `tracing` layer that keeps every closed span and every log line
//! with the fields of the spans it was logged in, for tests of trace propagation.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// A name (of a span, or a log line's message) with fields.
pub type Named = (String, BTreeMap<String, String>);

/// The layer; clones share what was captured.
#[derive(Clone, Default)]
pub struct Captured {
    spans: Arc<Mutex<Vec<Named>>>,
    lines: Arc<Mutex<Vec<Named>>>,
}

impl Captured {
    /// Spans that have closed, by name with their fields.
    pub fn closed_spans(&self) -> Vec<Named> {
        self.spans.lock().expect("captured spans").clone()
    }

    /// Log lines, by message with the fields of every span around them.
    pub fn lines(&self) -> Vec<Named> {
        self.lines.lock().expect("captured lines").clone()
    }
}

/// A span's or a line's fields as text.
#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> tracing_subscriber::Layer<S> for Captured
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut own = Fields::default();
        event.record(&mut own);
        let mut around = BTreeMap::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<Fields>() {
                    around.extend(fields.0.clone());
                }
            }
        }
        let message = own.0.remove("message").unwrap_or_default();
        self.lines
            .lock()
            .expect("captured lines")
            .push((message, around));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let fields = span
                .extensions()
                .get::<Fields>()
                .map(|f| f.0.clone())
                .unwrap_or_default();
            self.spans
                .lock()
                .expect("captured spans")
                .push((span.name().to_owned(), fields));
        }
    }
}
