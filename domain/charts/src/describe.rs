//! The text alternative: `<title>` and `<desc>` for screen readers, and the `role`
//! that makes assistive technology treat the drawing as one image.

use chrono::NaiveDate;

use crate::text::{clean, escape_xml, fit};
use crate::ticks::period_name;
use crate::{ChartError, Series, Style, TimeChart};

const DESC_NAME_CHARS: usize = 64;

pub(crate) fn title_text(chart: &TimeChart) -> String {
    let title = clean(&chart.title);
    if title.is_empty() {
        "Chart".to_owned()
    } else {
        title
    }
}

/// One paragraph saying what the chart shows, with every shown series' total.
pub(crate) fn description(chart: &TimeChart, shown: &[Series], empty: bool) -> String {
    let span = span(&chart.buckets);
    if empty {
        return format!("No data ({span}).");
    }
    let kind = match chart.style {
        Style::StackedBars => "Stacked bars",
        Style::Lines => "Lines",
    };
    let unit = chart.unit;
    let totals: Vec<String> = shown
        .iter()
        .map(|s| {
            let name = fit(&display_name(&s.name), DESC_NAME_CHARS);
            format!("{name} {}", unit.format(s.total()))
        })
        .collect();
    let overall: f64 = shown.iter().map(Series::total).sum();
    format!(
        "{kind} of {} over {span}. Totals: {}. Overall: {}.",
        unit.name(),
        totals.join("; "),
        unit.format(overall)
    )
}

/// Series name as shown: cleaned, and never blank.
pub(crate) fn display_name(name: &str) -> String {
    let name = clean(name);
    if name.is_empty() {
        "(unnamed)".to_owned()
    } else {
        name
    }
}

fn span(buckets: &[NaiveDate]) -> String {
    let iso = |d: &NaiveDate| d.format("%Y-%m-%d").to_string();
    match (buckets.first(), buckets.last(), period_name(buckets)) {
        (None, _, _) | (_, None, _) => "no time buckets".to_owned(),
        (Some(first), _, None) => format!("one bucket starting {}", iso(first)),
        (Some(first), Some(last), Some(period)) => {
            let periods = if period.ends_with('s') {
                format!("buckets of {period}")
            } else {
                format!("{period}s")
            };
            format!(
                "{} {periods} from {} to {}",
                buckets.len(),
                iso(first),
                iso(last)
            )
        }
    }
}

/// Adds `role="img"`, `<title>` and `<desc>` to an SVG document written by plotters.
pub(crate) fn finish(svg: &str, title: &str, desc: &str) -> Result<String, ChartError> {
    let unexpected = || ChartError::Draw("unexpected SVG header from the backend".to_owned());
    let rest = svg.strip_prefix("<svg ").ok_or_else(unexpected)?;
    let header_end = rest.find('>').ok_or_else(unexpected)?;
    let (attributes, body) = rest.split_at(header_end);
    let body = body[1..].trim_end();
    Ok(format!(
        "<svg role=\"img\" {attributes}>\n<title>{}</title>\n<desc>{}</desc>{body}",
        escape_xml(title),
        escape_xml(desc),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_gets_role_title_and_desc() {
        let svg = "<svg width=\"1\" height=\"1\">\n<rect/>\n</svg>\n";
        let out = finish(svg, "a<b", "c&d").expect("plotters-like header");
        insta::assert_snapshot!(out, @r#"
        <svg role="img" width="1" height="1">
        <title>a&lt;b</title>
        <desc>c&amp;d</desc>
        <rect/>
        </svg>
        "#);
    }

    #[test]
    fn anything_else_is_refused() {
        assert!(finish("<?xml?><svg>", "t", "d").is_err());
    }
}
