use chrono::NaiveDate;
use thiserror::Error;

use crate::validate::{MAX_SIDE, MAX_VALUE, MIN_HEIGHT, MIN_WIDTH};

#[derive(Debug, Clone, PartialEq, Error)]
pub enum ChartError {
    #[error(
        "chart size {width}x{height} is out of range: width {MIN_WIDTH}..={MAX_SIDE}, height {MIN_HEIGHT}..={MAX_SIDE}"
    )]
    Size { width: u32, height: u32 },

    #[error("series {series:?} needs one value per bucket ({buckets}) but has {values}")]
    LengthMismatch {
        series: String,
        values: usize,
        buckets: usize,
    },

    #[error("series {series:?}: value for bucket {bucket} is not a finite number ({value})")]
    NotFinite {
        series: String,
        bucket: NaiveDate,
        value: f64,
    },

    #[error("series {series:?}: value for bucket {bucket} is negative ({value})")]
    Negative {
        series: String,
        bucket: NaiveDate,
        value: f64,
    },

    #[error("series {series:?}: value for bucket {bucket} is too large ({value} > {MAX_VALUE})")]
    TooLarge {
        series: String,
        bucket: NaiveDate,
        value: f64,
    },

    #[error(
        "buckets must be strictly increasing: {bucket} (position {index}) does not come after {previous}"
    )]
    BucketsNotIncreasing {
        index: usize,
        previous: NaiveDate,
        bucket: NaiveDate,
    },

    /// The drawing library refused; with validated input this is a bug here.
    #[error("drawing the chart failed: {0}")]
    Draw(String),
}
