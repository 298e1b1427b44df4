use crate::Series;

/// Most series a chart draws (one colour each); `svg` folds the rest with
/// [`top_series`], and a table next to the chart should group with the same number.
pub const MAX_SERIES: usize = 8;

/// Name of the series that sums everything [`top_series`] did not keep.
pub const OTHER: &str = "other";

/// Keeps the largest series by total and sums the rest into one "other" series,
/// so the chart and the caller's table or CSV group alike.
///
/// The result has at most `max_series` series (at least 1): the biggest first
/// (ties keep input order), then "other" when anything was folded. Every bucket's
/// sum is preserved. If a kept series is itself called "other", the folded one is
/// named "other (rest)" so the two stay apart.
pub fn top_series(series: &[Series], max_series: usize) -> Vec<Series> {
    group(series, max_series).0
}

/// Like [`top_series`], also saying whether the last series is the folded "other".
pub(crate) fn group(series: &[Series], max_series: usize) -> (Vec<Series>, bool) {
    let max_series = max_series.max(1);
    let mut order: Vec<usize> = (0..series.len()).collect();
    // Stable sort: equal totals keep their input order.
    order.sort_by(|&a, &b| series[b].total().total_cmp(&series[a].total()));

    if series.len() <= max_series {
        let kept = order.into_iter().map(|i| series[i].clone()).collect();
        return (kept, false);
    }

    let (keep, fold) = order.split_at(max_series - 1);
    let mut kept: Vec<Series> = keep.iter().map(|&i| series[i].clone()).collect();
    let len = fold
        .iter()
        .map(|&i| series[i].values.len())
        .max()
        .unwrap_or(0);
    let mut values = vec![0.0; len];
    // Sum in input order so the result does not depend on the ranking.
    let mut folded: Vec<usize> = fold.to_vec();
    folded.sort_unstable();
    for i in folded {
        for (sum, value) in values.iter_mut().zip(&series[i].values) {
            if !value.is_nan() {
                *sum += value;
            }
        }
    }
    let name = if kept.iter().any(|s| s.name == OTHER) {
        format!("{OTHER} (rest)")
    } else {
        OTHER.to_owned()
    };
    kept.push(Series { name, values });
    (kept, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(series: &[Series]) -> Vec<&str> {
        series.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn few_series_are_only_sorted() {
        let input = vec![
            Series::new("a", vec![1.0]),
            Series::new("b", vec![3.0]),
            Series::new("c", vec![1.0]),
        ];
        let out = top_series(&input, 8);
        assert_eq!(names(&out), ["b", "a", "c"]);
    }

    #[test]
    fn the_rest_is_summed_per_bucket() {
        let input = vec![
            Series::new("small", vec![1.0, 0.0]),
            Series::new("big", vec![10.0, 10.0]),
            Series::new("mid", vec![2.0, 3.0]),
            Series::new("tiny", vec![0.0, 0.5]),
        ];
        let out = top_series(&input, 3);
        assert_eq!(names(&out), ["big", "mid", "other"]);
        assert_eq!(out[2].values, vec![1.0, 0.5]);
    }

    #[test]
    fn zero_means_everything_in_other() {
        let input = vec![Series::new("a", vec![1.0]), Series::new("b", vec![2.0])];
        let out = top_series(&input, 0);
        assert_eq!(names(&out), ["other"]);
        assert_eq!(out[0].values, vec![3.0]);
    }

    #[test]
    fn a_kept_series_named_other_is_not_confused() {
        let input = vec![
            Series::new("other", vec![9.0]),
            Series::new("a", vec![1.0]),
            Series::new("b", vec![1.0]),
        ];
        let out = top_series(&input, 2);
        assert_eq!(names(&out), ["other", "other (rest)"]);
    }

    #[test]
    fn ragged_input_pads_with_zero() {
        let input = vec![
            Series::new("a", vec![5.0, 5.0]),
            Series::new("b", vec![1.0]),
            Series::new("c", vec![1.0, 2.0, 3.0]),
        ];
        let out = top_series(&input, 2);
        assert_eq!(out[1].values, vec![2.0, 2.0, 3.0]);
    }
}
