use crate::{ChartError, TimeChart};

pub const MIN_WIDTH: u32 = 320;
pub const MIN_HEIGHT: u32 = 200;
pub const MAX_SIDE: u32 = 4000;
/// Far above any real cost or token count; keeps stacked sums and tick maths finite.
pub const MAX_VALUE: f64 = 1e15;

pub(crate) fn validate(chart: &TimeChart, width: u32, height: u32) -> Result<(), ChartError> {
    if !(MIN_WIDTH..=MAX_SIDE).contains(&width) || !(MIN_HEIGHT..=MAX_SIDE).contains(&height) {
        return Err(ChartError::Size { width, height });
    }
    for (index, pair) in chart.buckets.windows(2).enumerate() {
        if pair[1] <= pair[0] {
            return Err(ChartError::BucketsNotIncreasing {
                index: index + 1,
                previous: pair[0],
                bucket: pair[1],
            });
        }
    }
    for series in &chart.series {
        if series.values.len() != chart.buckets.len() {
            return Err(ChartError::LengthMismatch {
                series: series.name.clone(),
                values: series.values.len(),
                buckets: chart.buckets.len(),
            });
        }
        for (&value, &bucket) in series.values.iter().zip(&chart.buckets) {
            let series = || series.name.clone();
            // No value for this bucket: a gap, not a zero.
            if value.is_nan() {
                continue;
            }
            if !value.is_finite() {
                return Err(ChartError::NotFinite {
                    series: series(),
                    bucket,
                    value,
                });
            }
            if value < 0.0 {
                return Err(ChartError::Negative {
                    series: series(),
                    bucket,
                    value,
                });
            }
            if value > MAX_VALUE {
                return Err(ChartError::TooLarge {
                    series: series(),
                    bucket,
                    value,
                });
            }
        }
    }
    Ok(())
}
