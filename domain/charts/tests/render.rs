//! Whole documents: snapshots, escaping of hostile names, the empty chart.

use chrono::{Days, NaiveDate};
use gatehouse_charts::{Series, Style, TimeChart, Unit, svg, svg_uncaptioned};

fn weeks(count: u64) -> Vec<NaiveDate> {
    let start = NaiveDate::from_ymd_opt(2025, 3, 3).expect("valid date");
    (0..count).map(|i| start + Days::new(7 * i)).collect()
}

fn chart(style: Style, unit: Unit, series: Vec<Series>, buckets: u64) -> TimeChart {
    TimeChart {
        title: "Cost by project".to_owned(),
        unit,
        buckets: weeks(buckets),
        series,
        style,
    }
}

/// The accessible header: everything up to the first drawn element.
fn header(svg: &str) -> String {
    svg.lines().take(3).collect::<Vec<_>>().join("\n")
}

#[test]
fn stacked_bars_document() {
    let series = vec![
        Series::new("web", vec![1.2, 0.0]),
        Series::new("api", vec![0.3, 0.9]),
    ];
    let out = svg(&chart(Style::StackedBars, Unit::Usd, series, 2), 320, 200).expect("renders");
    insta::assert_snapshot!(out, @r##"
    <svg role="img" width="320" height="200" viewBox="0 0 320 200" xmlns="http://www.w3.org/2000/svg">
    <title>Cost by project</title>
    <desc>Stacked bars of USD over 2 weeks from 2025-03-03 to 2025-03-10. Totals: web $1.20; api $1.20. Overall: $2.40.</desc>
    <rect x="0" y="0" width="320" height="200" opacity="1" fill="#FFFFFF" stroke="none"/>
    <text x="160" y="15" dy="0.76em" text-anchor="middle" font-family="sans-serif" font-size="14" opacity="1" fill="#333333">
    Cost by project
    </text>
    <line opacity="1" stroke="#E4E4E4" stroke-width="1" x1="34" y1="141" x2="309" y2="141"/>
    <line opacity="1" stroke="#E4E4E4" stroke-width="1" x1="34" y1="88" x2="309" y2="88"/>
    <line opacity="1" stroke="#E4E4E4" stroke-width="1" x1="34" y1="34" x2="309" y2="34"/>
    <polyline fill="none" opacity="1" stroke="#888888" stroke-width="1" points="33,34 33,141 "/>
    <text x="24" y="141" dy="0.5ex" text-anchor="end" font-family="sans-serif" font-size="11" opacity="1" fill="#333333">
    $0
    </text>
    <polyline fill="none" opacity="1" stroke="#888888" stroke-width="1" points="28,141 33,141 "/>
    <text x="24" y="88" dy="0.5ex" text-anchor="end" font-family="sans-serif" font-size="11" opacity="1" fill="#333333">
    $1
    </text>
    <polyline fill="none" opacity="1" stroke="#888888" stroke-width="1" points="28,88 33,88 "/>
    <text x="24" y="34" dy="0.5ex" text-anchor="end" font-family="sans-serif" font-size="11" opacity="1" fill="#333333">
    $2
    </text>
    <polyline fill="none" opacity="1" stroke="#888888" stroke-width="1" points="28,34 33,34 "/>
    <polyline fill="none" opacity="1" stroke="#888888" stroke-width="1" points="34,142 309,142 "/>
    <text x="102" y="152" dy="0.76em" text-anchor="middle" font-family="sans-serif" font-size="11" opacity="1" fill="#333333">
    Mar 3
    </text>
    <polyline fill="none" opacity="1" stroke="#888888" stroke-width="1" points="102,142 102,147 "/>
    <text x="240" y="152" dy="0.76em" text-anchor="middle" font-family="sans-serif" font-size="11" opacity="1" fill="#333333">
    Mar 10
    </text>
    <polyline fill="none" opacity="1" stroke="#888888" stroke-width="1" points="240,142 240,147 "/>
    <rect x="47" y="77" width="110" height="64" opacity="1" fill="#332288" stroke="none"/>
    <rect x="47" y="61" width="110" height="16" opacity="1" fill="#DDCC77" stroke="none"/>
    <rect x="185" y="93" width="110" height="48" opacity="1" fill="#DDCC77" stroke="none"/>
    <rect x="10" y="179" width="12" height="12" opacity="1" fill="#332288" stroke="none"/>
    <text x="27" y="185" dy="0.5ex" text-anchor="start" font-family="sans-serif" font-size="11" opacity="1" fill="#333333">
    web
    </text>
    <rect x="63" y="179" width="12" height="12" opacity="1" fill="#DDCC77" stroke="none"/>
    <text x="80" y="185" dy="0.5ex" text-anchor="start" font-family="sans-serif" font-size="11" opacity="1" fill="#333333">
    api
    </text>
    </svg>
    "##);
}

#[test]
fn lines_document_header_and_lines() {
    let series = vec![
        Series::new("claude", vec![1200.0, 45_000.0, 30_000.0]),
        Series::new("local", vec![0.0, 2000.0, 9000.0]),
    ];
    let out = svg(&chart(Style::Lines, Unit::Tokens, series, 3), 480, 240).expect("renders");
    let drawn: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("stroke-width=\"2\"") || l.ends_with(" tokens"))
        .collect();
    insta::assert_snapshot!(format!("{}\n{}", header(&out), drawn.join("\n")), @r##"
    <svg role="img" width="480" height="240" viewBox="0 0 480 240" xmlns="http://www.w3.org/2000/svg">
    <title>Cost by project</title>
    <desc>Lines of tokens over 3 weeks from 2025-03-03 to 2025-03-17. Totals: claude 76.2k tokens; local 11k tokens. Overall: 87.2k tokens.</desc>
    0 tokens
    20k tokens
    40k tokens
    60k tokens
    <circle cx="149" cy="179" r="3" opacity="1" fill="#332288" stroke="none" stroke-width="2"/>
    <circle cx="277" cy="71" r="3" opacity="1" fill="#332288" stroke="none" stroke-width="2"/>
    <circle cx="405" cy="108" r="3" opacity="1" fill="#332288" stroke="none" stroke-width="2"/>
    <polyline fill="none" opacity="1" stroke="#332288" stroke-width="2" points="149,179 277,71 405,108 "/>
    <circle cx="149" cy="181" r="3" opacity="1" fill="#DDCC77" stroke="none" stroke-width="2"/>
    <circle cx="277" cy="177" r="3" opacity="1" fill="#DDCC77" stroke="none" stroke-width="2"/>
    <circle cx="405" cy="159" r="3" opacity="1" fill="#DDCC77" stroke="none" stroke-width="2"/>
    <polyline fill="none" opacity="1" stroke="#DDCC77" stroke-width="2" points="149,181 277,177 405,159 "/>
    "##);
}

#[test]
fn no_buckets_says_no_data() {
    let out = svg(&chart(Style::Lines, Unit::Runs, vec![], 0), 320, 200).expect("renders");
    insta::assert_snapshot!(out, @r##"
    <svg role="img" width="320" height="200" viewBox="0 0 320 200" xmlns="http://www.w3.org/2000/svg">
    <title>Cost by project</title>
    <desc>No data (no time buckets).</desc>
    <rect x="0" y="0" width="320" height="200" opacity="1" fill="#FFFFFF" stroke="none"/>
    <text x="160" y="10" dy="0.76em" text-anchor="middle" font-family="sans-serif" font-size="14" opacity="1" fill="#333333">
    Cost by project
    </text>
    <rect x="10" y="40" width="300" height="150" opacity="1" fill="none" stroke="#888888"/>
    <text x="160" y="115" dy="0.5ex" text-anchor="middle" font-family="sans-serif" font-size="14" opacity="1" fill="#333333">
    No data
    </text>
    </svg>
    "##);
}

#[test]
fn all_zero_says_no_data() {
    let series = vec![Series::new("idle", vec![0.0; 4])];
    let out = svg(
        &chart(Style::StackedBars, Unit::Seconds, series, 4),
        320,
        200,
    )
    .expect("renders");
    insta::assert_snapshot!(header(&out), @r#"
    <svg role="img" width="320" height="200" viewBox="0 0 320 200" xmlns="http://www.w3.org/2000/svg">
    <title>Cost by project</title>
    <desc>No data (4 weeks from 2025-03-03 to 2025-03-24).</desc>
    "#);
    assert!(out.contains(">\nNo data\n</text>"));
}

#[test]
fn hostile_names_are_escaped_everywhere() {
    let hostile = r#"<script>alert("x")</script>&'"#;
    let mut input = chart(
        Style::StackedBars,
        Unit::Usd,
        vec![
            Series::new(hostile, vec![1.0, 2.0]),
            Series::new("</svg><svg onload=alert(1)>", vec![1.0, 1.0]),
        ],
        2,
    );
    input.title = format!("{hostile} by person");
    let out = svg(&input, 640, 320).expect("renders");
    assert!(!out.contains("<script"), "{out}");
    assert!(!out.contains("<svg onload"), "{out}");
    assert_eq!(out.matches("<svg").count(), 1);
    assert_eq!(out.matches("</svg>").count(), 1);
    let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&apos;";
    // In the title, the description, the caption and the legend.
    assert_eq!(out.matches(escaped).count(), 4, "{out}");
}

#[test]
fn control_characters_do_not_reach_the_document() {
    let input = chart(
        Style::Lines,
        Unit::Runs,
        vec![Series::new("bell\u{7}null\u{0}", vec![3.0])],
        1,
    );
    let out = svg(&input, 320, 200).expect("renders");
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
    assert!(out.contains("bell null"));
}

#[test]
fn many_series_are_folded_into_other() {
    let series = (0..12)
        .map(|i| Series::new(format!("p{i:02}"), vec![f64::from(i)]))
        .collect();
    let out = svg(&chart(Style::StackedBars, Unit::Runs, series, 1), 640, 320).expect("renders");
    insta::assert_snapshot!(header(&out), @r#"
    <svg role="img" width="640" height="320" viewBox="0 0 640 320" xmlns="http://www.w3.org/2000/svg">
    <title>Cost by project</title>
    <desc>Stacked bars of runs over one bucket starting 2025-03-03. Totals: p11 11 runs; p10 10 runs; p09 9 runs; p08 8 runs; p07 7 runs; p06 6 runs; p05 5 runs; other 10 runs. Overall: 66 runs.</desc>
    "#);
    // The folded series is grey.
    assert!(out.contains("fill=\"#A0A0A0\""));
}

#[test]
fn a_bucket_without_a_value_breaks_the_line_instead_of_dropping_to_zero() {
    let series = vec![Series::new(
        "mean",
        vec![60.0, f64::NAN, f64::NAN, 90.0, 120.0],
    )];
    let out = svg(&chart(Style::Lines, Unit::Seconds, series, 5), 480, 240).expect("renders");
    let lines: Vec<&str> = (out.lines())
        .filter(|l| l.contains("<polyline") && l.contains(r#"stroke-width="2""#))
        .collect();
    // One dot for the lone first value, one line through the last two; no point at zero.
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0].matches(',').count(), 1, "{}", lines[0]);
    assert_eq!(lines[1].matches(',').count(), 2, "{}", lines[1]);
    assert_eq!(out.matches("<circle").count(), 3, "{out}");
    assert!(
        out.contains("Totals: mean ") && !out.contains("NaN"),
        "{out}"
    );
}

#[test]
fn an_uncaptioned_chart_keeps_its_title_only_as_the_title() {
    let input = chart(
        Style::StackedBars,
        Unit::Usd,
        vec![Series::new("a", vec![1.0, 2.0])],
        2,
    );
    let captioned = svg(&input, 480, 240).expect("renders");
    let bare = svg_uncaptioned(&input, 480, 240).expect("renders");
    assert_eq!(
        captioned.matches("Cost by project").count(),
        2,
        "{captioned}"
    );
    assert_eq!(bare.matches("Cost by project").count(), 1, "{bare}");
    assert!(bare.contains("<title>Cost by project</title>"));
}

#[test]
fn long_titles_are_shortened_on_the_chart_only() {
    let mut input = chart(
        Style::Lines,
        Unit::Usd,
        vec![Series::new("a", vec![1.0])],
        1,
    );
    input.title = "x".repeat(200);
    let out = svg(&input, 320, 200).expect("renders");
    assert!(out.contains(&format!("<title>{}</title>", "x".repeat(200))));
    assert!(out.contains(&format!("\n{}…\n", "x".repeat(34))), "{out}");
}

#[test]
fn the_smallest_chart_still_draws_crowded_input() {
    let wide_name = "项目名称很长很长很长很长很长很长很长很长很长很长很长很长";
    for buckets in [1, 60] {
        let series: Vec<Series> = (0..12)
            .map(|i| Series::new(format!("{wide_name}{i}"), vec![1e6; buckets as usize]))
            .collect();
        for style in [Style::StackedBars, Style::Lines] {
            let input = chart(style, Unit::Tokens, series.clone(), buckets);
            let out = svg(&input, 320, 200).expect("renders");
            assert!(out.ends_with("</svg>"));
        }
    }
}
