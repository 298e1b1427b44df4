use chrono::{Days, NaiveDate};
use gatehouse_charts::{MAX_VALUE, Series, Style, TimeChart, Unit, svg, top_series};
use proptest::prelude::*;

/// Cheap well-formedness check: tags balance, one root `<svg>`, and every `&`
/// starts one of the five XML entities.
fn well_formed(doc: &str) -> Result<(), String> {
    if !doc.starts_with("<svg ") || !doc.ends_with("</svg>") {
        return Err("not one <svg> document".to_owned());
    }
    let mut open: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = doc;
    while let Some(start) = rest.find('<') {
        check_text(&rest[..start])?;
        let end = rest[start..].find('>').ok_or("unclosed tag")? + start;
        let tag = &rest[start + 1..end];
        check_text(tag)?;
        if let Some(name) = tag.strip_prefix('/') {
            let top = open.pop().ok_or("close without open")?;
            if top != name {
                return Err(format!("</{name}> closes <{top}>"));
            }
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().ok_or("empty tag")?;
            if open.is_empty() {
                roots += 1;
            }
            open.push(name);
        }
        rest = &rest[end + 1..];
    }
    check_text(rest)?;
    if !open.is_empty() || roots != 1 {
        return Err(format!("unbalanced: open {open:?}, roots {roots}"));
    }
    Ok(())
}

fn check_text(text: &str) -> Result<(), String> {
    if text.contains('>') && !text.contains('=') {
        return Err(format!("raw '>' in {text:?}"));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(format!("control character in {text:?}"));
    }
    for (i, _) in text.match_indices('&') {
        let entity = ["&lt;", "&gt;", "&amp;", "&quot;", "&apos;"];
        if !entity.iter().any(|e| text[i..].starts_with(e)) {
            return Err(format!("bare '&' in {text:?}"));
        }
    }
    Ok(())
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<char>(), 0..24).prop_map(String::from_iter),
        "[a-z<>&\"' ]{0,12}",
    ]
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(MAX_VALUE), 0.0..1.0, 0.0..1e4, 0.0..1e12]
}

fn chart() -> impl Strategy<Value = TimeChart> {
    let unit = prop_oneof![
        Just(Unit::Usd),
        Just(Unit::Tokens),
        Just(Unit::Runs),
        Just(Unit::Seconds)
    ];
    let style = prop_oneof![Just(Style::StackedBars), Just(Style::Lines)];
    (0usize..40, 0u64..800, prop_oneof![Just(1u64), Just(7)]).prop_flat_map(
        move |(buckets, offset, step)| {
            let start =
                NaiveDate::from_ymd_opt(2024, 1, 1).expect("valid date") + Days::new(offset);
            let dates: Vec<NaiveDate> = (0..buckets as u64)
                .map(|i| start + Days::new(i * step))
                .collect();
            let series = prop::collection::vec(
                (name(), prop::collection::vec(value(), buckets))
                    .prop_map(|(name, values)| Series { name, values }),
                0..12,
            );
            (name(), unit.clone(), series, style.clone()).prop_map(
                move |(title, unit, series, style)| TimeChart {
                    title,
                    unit,
                    buckets: dates.clone(),
                    series,
                    style,
                },
            )
        },
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn valid_input_always_renders_a_well_formed_document(
        chart in chart(),
        width in 320u32..2000,
        height in 200u32..1500,
    ) {
        let doc = svg(&chart, width, height).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(doc.contains("role=\"img\""));
        if let Err(problem) = well_formed(&doc) {
            return Err(TestCaseError::fail(format!("{problem}\n{doc}")));
        }
    }

    #[test]
    fn top_series_keeps_every_bucket_sum(
        series in prop::collection::vec(prop::collection::vec(value(), 5), 0..15)
            .prop_map(|all| all.into_iter().enumerate()
                .map(|(i, values)| Series::new(format!("s{i}"), values))
                .collect::<Vec<_>>()),
        max in 0usize..10,
    ) {
        let out = top_series(&series, max);
        prop_assert!(out.len() <= max.max(1));
        prop_assert_eq!(out.len(), series.len().min(max.max(1)));
        for bucket in 0..5 {
            let before: f64 = series.iter().map(|s| s.values[bucket]).sum();
            let after: f64 = out.iter().map(|s| s.values.get(bucket).copied().unwrap_or(0.0)).sum();
            prop_assert!(close(before, after), "bucket {}: {} vs {}", bucket, before, after);
        }
    }
}

#[test]
fn the_checker_catches_broken_documents() {
    assert!(well_formed("<svg a=\"1\"><text>x</text></svg>").is_ok());
    assert!(well_formed("<svg a=\"1\"><text>x</svg>").is_err());
    assert!(well_formed("<svg a=\"1\"><text>a & b</text></svg>").is_err());
    assert!(well_formed("<svg a=\"1\"></svg><svg b=\"2\"></svg>").is_err());
}
