//! Usage, the failure and the reply of OpenCode's `run --format json` output (Kilo's too),
//! from the tail of its stdout or, through [`Tally`], from the trace's events as they come.
//!
//! ```json
//! {"type":"step_start","sessionID":"ses_db25…","part":{"type":"step-start",…}}
//! {"type":"text","sessionID":"ses_db25…","part":{"type":"text","text":"Done: I wrote hello.txt with the greeting.",…}}
//! {"type":"step_finish","sessionID":"ses_db25…","part":{"reason":"stop","tokens":{"total":15,"input":10,"output":5,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0,…}}
//! {"type":"error","sessionID":"ses_db1c…","error":{"name":"APIError","data":{"message":"…","statusCode":401,…}}}
//! ```
//!
//! Each model request is a step, and each `step_finish` carries that request's tokens:
//! usage is their sum, under the role's model (no event names it). OpenCode takes cache
//! reads and writes out of `input` and reasoning out of `output`, so reasoning is added
//! back to the output and each token falls under one price. `cost` is OpenCode's own price
//! of the step, 0 for a model it has no price for (every gateway model); a sum of 0 is not
//! reported. There is no final event: the run is over when a step finishes for a reason
//! other than `tool-calls`, and an output that ends otherwise stopped early. The reply is
//! the text of the last step that wrote any (one `text` event per text part); a failure is
//! an `error` event.

use serde_json::Value;

use crate::parse::{Object, count, objects, string};
use crate::usage::{ModelUsage, Report};

/// What the events so far say about usage, failure and reply.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    usage: ModelUsage,
    cost_usd: f64,
    failed: Option<String>,
    reply: Option<String>,
    /// Which step (counted by `step_start`) wrote the reply.
    reply_step: Option<u64>,
    step: u64,
    /// The last step finished for a reason other than calling tools.
    finished: bool,
    /// Some line was an OpenCode event.
    pub(crate) recognised: bool,
}

impl Tally {
    /// Reads one event; returns its type when it is one of OpenCode's.
    pub(crate) fn event<'a>(&mut self, event: &'a Object) -> Option<&'a str> {
        let kind = event.get("type").and_then(Value::as_str)?;
        let part = event.get("part").and_then(Value::as_object);
        match kind {
            "step_start" => {
                self.step = self.step.saturating_add(1);
                self.finished = false;
            }
            "step_finish" => {
                if let Some(part) = part {
                    self.add_step(part);
                    self.finished = string(part, "reason") != Some("tool-calls");
                }
            }
            "text" => {
                if let Some(text) = part.and_then(|part| string(part, "text")) {
                    self.text(text);
                }
            }
            "error" => self.failed = Some(error_message(event)),
            "tool_use" | "reasoning" => {}
            _ => return None,
        }
        self.recognised = true;
        Some(kind)
    }

    fn add_step(&mut self, part: &Object) {
        if let Some(tokens) = part.get("tokens").and_then(Value::as_object) {
            let cache = tokens.get("cache").and_then(Value::as_object);
            let usage = &mut self.usage;
            // Saturating: absurd counts must not panic the runner.
            usage.input_tokens = usage.input_tokens.saturating_add(count(tokens, "input"));
            usage.output_tokens = usage
                .output_tokens
                .saturating_add(count(tokens, "output"))
                .saturating_add(count(tokens, "reasoning"));
            if let Some(cache) = cache {
                usage.cache_read_tokens =
                    usage.cache_read_tokens.saturating_add(count(cache, "read"));
                usage.cache_write_tokens = usage
                    .cache_write_tokens
                    .saturating_add(count(cache, "write"));
            }
        }
        if let Some(cost) = part
            .get("cost")
            .and_then(Value::as_f64)
            .filter(|cost| cost.is_finite() && *cost > 0.0)
        {
            self.cost_usd += cost;
        }
    }

    /// A text part: it joins the reply if the same step wrote the reply so far.
    fn text(&mut self, text: &str) {
        match (&mut self.reply, self.reply_step == Some(self.step)) {
            (Some(reply), true) => {
                reply.push_str("\n\n");
                reply.push_str(text);
            }
            _ => {
                self.reply = Some(text.to_owned());
                self.reply_step = Some(self.step);
            }
        }
    }

    /// Whether the output went past its last step: a step finished for good, or an error
    /// ended the run.
    pub(crate) fn ended(&self) -> bool {
        self.finished || self.failed.is_some()
    }

    /// The report, with usage recorded under `model`.
    pub(crate) fn report(self, model: &str) -> Report {
        let usage = ModelUsage {
            model: model.to_owned(),
            ..self.usage
        };
        Report {
            usage: if usage.has_tokens() {
                vec![usage]
            } else {
                Vec::new()
            },
            reported_cost_usd: (self.cost_usd > 0.0).then_some(self.cost_usd),
            failed: self.failed,
            summary: self.reply,
        }
    }
}

/// The attempt's report, or `None` when the output holds no OpenCode event at all.
pub(crate) fn report(text: &str, model: &str) -> Option<Report> {
    let mut tally = Tally::default();
    for event in objects(text) {
        tally.event(&event);
    }
    tally.recognised.then(|| tally.report(model))
}

/// An `error` event's message: the provider's (`data.message`), else the error's name.
fn error_message(event: &Object) -> String {
    let error = event.get("error").and_then(Value::as_object);
    let data = error
        .and_then(|error| error.get("data"))
        .and_then(Value::as_object);
    data.and_then(|data| string(data, "message"))
        .or_else(|| error.and_then(|error| string(error, "name")))
        .unwrap_or("the CLI reported an error")
        .to_owned()
}
