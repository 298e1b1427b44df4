//! Copilot CLI's report, read from the tail of its `--output-format json` stdout (and the usage lines after it) by the very reader
//! that traces it as it runs ([`super::events`]), so the report and the trace agree on
//! usage, failure and reply. The tail may start mid-line or mid-message: a reply whose
//! start was cut is reported from where the tail starts.

use crate::parse::objects;
use crate::trace::{Events, Shared};
use crate::usage::Report;

use super::events::Reader;

/// The attempt's report, or `None` when the tail holds no Gemini CLI event.
pub(crate) fn report(text: &str, model: &str) -> Option<Report> {
    let mut reader = Box::<Reader>::default();
    let mut shared = Shared::default();
    for event in objects(text) {
        reader.event(&event, "", 0, &mut shared, Some(model));
    }
    if !reader.recognised() {
        return None;
    }
    let ending = reader.finish(Some(model), &String::new);
    Some(Report {
        failed: ending.report.failed.clone().or(ending.failure),
        summary: ending.reply,
        ..ending.report
    })
}
