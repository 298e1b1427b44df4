use chrono::NaiveDate;

/// Already-aggregated figures over equal time buckets, one value per bucket per series.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeChart {
    pub title: String,
    pub unit: Unit,
    /// Start of each bucket (a day or a week), strictly increasing.
    pub buckets: Vec<NaiveDate>,
    pub series: Vec<Series>,
    pub style: Style,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// One per bucket; NaN where the series has no value (a mean over nothing): lines
    /// break there and bars draw nothing, rather than showing a zero.
    pub values: Vec<f64>,
}

impl Series {
    pub fn new(name: impl Into<String>, values: Vec<f64>) -> Self {
        Self {
            name: name.into(),
            values,
        }
    }

    /// The sum of its values, leaving out buckets without one.
    pub fn total(&self) -> f64 {
        self.values.iter().filter(|v| !v.is_nan()).sum()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Style {
    /// Series stacked on each other per bucket: the bar height is the bucket's total.
    StackedBars,
    Lines,
}

/// What the figures count; it decides how ticks and totals are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Usd,
    Tokens,
    Runs,
    Seconds,
}

impl Unit {
    /// Plain name, e.g. for a CSV header.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Usd => "USD",
            Unit::Tokens => "tokens",
            Unit::Runs => "runs",
            Unit::Seconds => "seconds",
        }
    }

    /// Counts are whole numbers, so their ticks never fall between integers.
    pub(crate) fn is_count(self) -> bool {
        matches!(self, Unit::Tokens | Unit::Runs)
    }
}
