//! Where the axes get their marks and what the marks say.

use chrono::{Datelike, NaiveDate};

use crate::Unit;

/// Y-axis marks from 0 to `top` (the axis end, at or above the data maximum).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ticks {
    pub values: Vec<f64>,
    pub labels: Vec<String>,
    pub top: f64,
}

/// How one unit is written at a given magnitude: `prefix`, value / `divisor`, suffix.
struct Scale {
    divisor: f64,
    prefix: &'static str,
    suffix: &'static str,
    /// Used instead of `suffix` for exactly 1 ("1 run").
    singular: &'static str,
}

impl Scale {
    const fn new(divisor: f64, prefix: &'static str, suffix: &'static str) -> Self {
        Self {
            divisor,
            prefix,
            suffix,
            singular: suffix,
        }
    }

    fn for_unit(unit: Unit, max: f64) -> Scale {
        let big = |b: Scale, m: Scale, k: Scale, one: Scale| {
            if max >= 1e9 {
                b
            } else if max >= 1e6 {
                m
            } else if max >= 1e3 {
                k
            } else {
                one
            }
        };
        match unit {
            Unit::Usd => big(
                Scale::new(1e9, "$", "B"),
                Scale::new(1e6, "$", "M"),
                Scale::new(1e3, "$", "k"),
                Scale::new(1.0, "$", ""),
            ),
            Unit::Tokens => big(
                Scale::new(1e9, "", "B tokens"),
                Scale::new(1e6, "", "M tokens"),
                Scale::new(1e3, "", "k tokens"),
                Scale {
                    singular: " token",
                    ..Scale::new(1.0, "", " tokens")
                },
            ),
            Unit::Runs => big(
                Scale::new(1e9, "", "B runs"),
                Scale::new(1e6, "", "M runs"),
                Scale::new(1e3, "", "k runs"),
                Scale {
                    singular: " run",
                    ..Scale::new(1.0, "", " runs")
                },
            ),
            Unit::Seconds if max >= 7200.0 => Scale::new(3600.0, "", " h"),
            Unit::Seconds if max >= 120.0 => Scale::new(60.0, "", " min"),
            Unit::Seconds => Scale::new(1.0, "", " s"),
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 + 1e-9 {
        1.0
    } else if fraction <= 2.0 + 1e-9 {
        2.0
    } else if fraction <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// Decimals needed to tell marks `step` apart.
fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10() - 1e-9).ceil().max(0.0) as usize
    }
}

/// About `target` marks (at least 2) from 0 up to at least `max`.
pub(crate) fn y_ticks(unit: Unit, max: f64, target: usize) -> Ticks {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let scale = Scale::for_unit(unit, max);
    let scaled_max = max / scale.divisor;
    let mut step = nice_step(scaled_max / target.max(1) as f64);
    if unit.is_count() && scale.divisor == 1.0 {
        step = step.max(1.0);
    }
    let steps = (scaled_max / step - 1e-9).ceil().max(1.0) as usize;
    let mut places = decimals(step);
    if unit == Unit::Usd && scale.divisor == 1.0 && step < 1.0 {
        places = places.max(2);
    }
    let mut values = Vec::with_capacity(steps + 1);
    let mut labels = Vec::with_capacity(steps + 1);
    for i in 0..=steps {
        let scaled = i as f64 * step;
        values.push(scaled * scale.divisor);
        labels.push(if i == 0 {
            // "$0", "0 tokens" and "0 h", not "$0.00" or "0k tokens".
            let zero = match unit {
                Unit::Seconds => scale.suffix,
                _ => Scale::for_unit(unit, 0.0).suffix,
            };
            format!("{}0{zero}", scale.prefix)
        } else {
            let number = format!("{scaled:.places$}");
            let suffix = if number == "1" {
                scale.singular
            } else {
                scale.suffix
            };
            format!("{}{number}{suffix}", scale.prefix)
        });
    }
    let top = steps as f64 * step * scale.divisor;
    Ticks {
        values,
        labels,
        top,
    }
}

/// Bucket labels: "Mar 3" within one year, ISO dates when the range crosses years.
pub(crate) fn date_labels(buckets: &[NaiveDate]) -> Vec<String> {
    let one_year = buckets.first().map(Datelike::year) == buckets.last().map(Datelike::year);
    let format = if one_year { "%b %-d" } else { "%Y-%m-%d" };
    buckets
        .iter()
        .map(|date| date.format(format).to_string())
        .collect()
}

/// Indices of the buckets that get a label, evenly spaced so labels `label_px` wide do not
/// overlap on an axis `axis_px` wide.
pub(crate) fn x_label_indices(buckets: usize, label_px: u32, axis_px: u32) -> Vec<usize> {
    if buckets == 0 {
        return Vec::new();
    }
    let fit = (axis_px / label_px.max(1)).max(1) as usize;
    let every = buckets.div_ceil(fit).max(1);
    // Weekly rhythm reads better for daily data than "every 5th day".
    let every = match every {
        1 | 2 => every,
        3..=7 if buckets > 14 => 7,
        n => n,
    };
    (0..buckets).step_by(every).collect()
}

/// "day", "week", "month", or "N days" from the spacing of the first two buckets.
pub(crate) fn period_name(buckets: &[NaiveDate]) -> Option<String> {
    let [first, second, ..] = buckets else {
        return None;
    };
    let days = (*second - *first).num_days();
    Some(match days {
        1 => "day".to_owned(),
        7 => "week".to_owned(),
        28..=31 => "month".to_owned(),
        n => format!("{n} days"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(unit: Unit, max: f64) -> String {
        y_ticks(unit, max, 5).labels.join(" | ")
    }

    #[test]
    fn tick_labels_by_unit() {
        insta::assert_snapshot!([
            labels(Unit::Usd, 1.13),
            labels(Unit::Usd, 0.004),
            labels(Unit::Usd, 87.0),
            labels(Unit::Usd, 12_400.0),
            labels(Unit::Tokens, 3.0),
            labels(Unit::Tokens, 48_000.0),
            labels(Unit::Tokens, 2_300_000.0),
            labels(Unit::Runs, 1.0),
            labels(Unit::Runs, 17.0),
            labels(Unit::Seconds, 3.4),
            labels(Unit::Seconds, 600.0),
            labels(Unit::Seconds, 30_000.0),
            labels(Unit::Usd, 0.0),
            labels(Unit::Tokens, 1e15),
        ].join("\n"), @"
        $0 | $0.50 | $1.00 | $1.50
        $0 | $0.001 | $0.002 | $0.003 | $0.004
        $0 | $20 | $40 | $60 | $80 | $100
        $0 | $5k | $10k | $15k
        0 tokens | 1 token | 2 tokens | 3 tokens
        0 tokens | 10k tokens | 20k tokens | 30k tokens | 40k tokens | 50k tokens
        0 tokens | 0.5M tokens | 1.0M tokens | 1.5M tokens | 2.0M tokens | 2.5M tokens
        0 runs | 1 run
        0 runs | 5 runs | 10 runs | 15 runs | 20 runs
        0 s | 1 s | 2 s | 3 s | 4 s
        0 min | 2 min | 4 min | 6 min | 8 min | 10 min
        0 h | 2 h | 4 h | 6 h | 8 h | 10 h
        $0 | $0.20 | $0.40 | $0.60 | $0.80 | $1.00
        0 tokens | 200000B tokens | 400000B tokens | 600000B tokens | 800000B tokens | 1000000B tokens
        ");
    }

    #[test]
    fn top_covers_the_maximum() {
        for max in [0.3, 1.0, 7.0, 99.9, 100.0, 12_345.0, 1e15] {
            let ticks = y_ticks(Unit::Usd, max, 5);
            assert!(ticks.top >= max, "{max} -> {}", ticks.top);
            assert!(ticks.top <= max * 2.6, "{max} -> {}", ticks.top);
        }
    }

    #[test]
    fn label_spacing() {
        assert_eq!(x_label_indices(5, 50, 600), vec![0, 1, 2, 3, 4]);
        assert_eq!(x_label_indices(30, 50, 600), vec![0, 7, 14, 21, 28]);
        assert_eq!(x_label_indices(0, 50, 600), Vec::<usize>::new());
        assert_eq!(
            x_label_indices(3, 500, 100),
            vec![0, 1, 2].into_iter().step_by(3).collect::<Vec<_>>()
        );
    }

    #[test]
    fn dates_and_periods() {
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).expect("valid date");
        assert_eq!(
            date_labels(&[d(2025, 3, 3), d(2025, 3, 10)]),
            ["Mar 3", "Mar 10"]
        );
        assert_eq!(
            date_labels(&[d(2024, 12, 30), d(2025, 1, 6)]),
            ["2024-12-30", "2025-01-06"]
        );
        assert_eq!(
            period_name(&[d(2025, 3, 3), d(2025, 3, 10)]).as_deref(),
            Some("week")
        );
        assert_eq!(period_name(&[d(2025, 3, 3)]), None);
    }
}
