//! The problems found in one SOP file, each with its position.

use marked_yaml::{Marker, Span};

use crate::{Diagnostic, SopError};

/// Every problem found so far in `file`.
pub(super) struct Report<'a> {
    pub(super) file: &'a str,
    pub(super) diagnostics: Vec<Diagnostic>,
}

impl Report<'_> {
    pub(super) fn at(&mut self, marker: Option<&Marker>, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_owned(),
            line: marker.map_or(1, Marker::line),
            column: marker.map_or(1, Marker::column),
            message: message.into(),
        });
    }

    pub(super) fn span(&mut self, span: &Span, message: impl Into<String>) {
        self.at(span.start(), message);
    }

    pub(super) fn finish(mut self) -> SopError {
        self.diagnostics.sort_by_key(|d| (d.line, d.column));
        SopError {
            diagnostics: self.diagnostics,
        }
    }
}
