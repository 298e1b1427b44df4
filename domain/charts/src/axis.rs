//! A plotters coordinate whose marks are exactly ours: plotters' own choice of
//! "nice" numbers does not know units (dollars, thousands of tokens, minutes) or dates.
//! (plotters' `WithKeyPoints` would do, but its f64 form cannot take label formatters.)

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;

pub(crate) struct Marked {
    inner: RangedCoordf64,
    marks: Vec<f64>,
}

impl Marked {
    pub fn new(range: Range<f64>, marks: Vec<f64>) -> Self {
        Self {
            inner: range.into(),
            marks,
        }
    }
}

impl Ranged for Marked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            // Light grid lines: none.
            Vec::new()
        } else {
            self.marks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}
