use chrono::NaiveDate;
use gatehouse_charts::{ChartError, Series, Style, TimeChart, Unit, svg};

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, d).expect("valid date")
}

fn chart(buckets: Vec<NaiveDate>, series: Vec<Series>) -> TimeChart {
    TimeChart {
        title: "t".to_owned(),
        unit: Unit::Usd,
        buckets,
        series,
        style: Style::StackedBars,
    }
}

fn error(chart: &TimeChart) -> String {
    match svg(chart, 640, 320) {
        Ok(_) => "rendered".to_owned(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn values_must_match_buckets() {
    let input = chart(vec![day(1), day(2)], vec![Series::new("web", vec![1.0])]);
    insta::assert_snapshot!(error(&input), @r#"series "web" needs one value per bucket (2) but has 1"#);
    assert!(matches!(
        svg(&input, 640, 320),
        Err(ChartError::LengthMismatch {
            values: 1,
            buckets: 2,
            ..
        })
    ));
}

#[test]
fn values_must_be_finite_non_negative_and_sane() {
    let with = |v: f64| chart(vec![day(1)], vec![Series::new("web", vec![v])]);
    insta::assert_snapshot!(
        [f64::INFINITY, -0.5, 1e16]
            .map(|v| error(&with(v)))
            .join("\n"),
        @r#"
    series "web": value for bucket 2025-03-01 is not a finite number (inf)
    series "web": value for bucket 2025-03-01 is negative (-0.5)
    series "web": value for bucket 2025-03-01 is too large (10000000000000000 > 1000000000000000)
    "#
    );
    assert_eq!(error(&with(-0.0)), "rendered");
    // NaN is a bucket without a value, not an error.
    assert_eq!(error(&with(f64::NAN)), "rendered");
}

#[test]
fn buckets_must_increase() {
    let input = chart(vec![day(1), day(3), day(3)], vec![]);
    insta::assert_snapshot!(error(&input), @"buckets must be strictly increasing: 2025-03-03 (position 2) does not come after 2025-03-03");
}

#[test]
fn size_must_be_usable() {
    let input = chart(vec![], vec![]);
    let sizes = [(100, 300), (640, 50), (5000, 300)];
    for (w, h) in sizes {
        assert_eq!(
            svg(&input, w, h),
            Err(ChartError::Size {
                width: w,
                height: h
            })
        );
    }
    insta::assert_snapshot!(svg(&input, 100, 300).expect_err("too narrow").to_string(), @"chart size 100x300 is out of range: width 320..=4000, height 200..=4000");
}
