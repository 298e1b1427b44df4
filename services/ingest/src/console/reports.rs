//! Reports: runs, durations, tokens and cost over a window, by project, person, SOP
//! version or model, as charts drawn on the server, with cost by model and how long gates
//! waited for people beside them; a table of totals (what `GET /api/v1/reports/usage`
//! answers) and the figures per day or week as CSV.

use std::collections::{BTreeSet, HashMap};

use axum::extract::{Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use gatehouse_charts::{MAX_SERIES, Series, Style, TimeChart, Unit, top_series};
use maud::{Markup, PreEscaped, html};
use serde::Deserialize;

use super::page::{PageError, dollars, duration, encode, frame};
use super::session::Viewer;
use crate::api::reports::{self, By, OverTime};
use crate::{ApiError, ApiState};

/// Each chart's size in pixels; two side by side fill a wide page, and each shrinks to
/// a phone's width (the stylesheet scales it).
const CHART_WIDTH: u32 = 640;
const CHART_HEIGHT: u32 = 300;

#[derive(Debug, Deserialize)]
pub(crate) struct ReportQuery {
    by: Option<String>,
    since: Option<String>,
}

/// What a report page was asked for, checked.
struct Asked {
    by: By,
    by_name: String,
    since_text: String,
    since: chrono::DateTime<Utc>,
}

fn asked(q: &ReportQuery) -> Result<Asked, ApiError> {
    let by_name = q.by.clone().unwrap_or_else(|| "project".into());
    let since_text = q.since.clone().unwrap_or_else(|| "30d".into());
    Ok(Asked {
        by: By::parse(&by_name)?,
        since: reports::since(&since_text, Utc::now())?,
        by_name,
        since_text,
    })
}

/// What the page draws and lists.
struct Figures {
    over: OverTime,
    /// Cost per model over the same buckets, whatever the grouping.
    by_model: OverTime,
    /// Mean seconds gates waited, per group, over the same buckets.
    gate_waits: Vec<Series>,
    totals: Vec<crate::views::UsageGroup>,
}

async fn figures(api: &ApiState, viewer: &Viewer, asked: &Asked) -> Result<Figures, ApiError> {
    let (runs, usage) = reports::readable_window(api, viewer.caller.reader(), asked.since).await?;
    let now = Utc::now();
    let over = reports::over_time(asked.by, &runs, &usage, asked.since, now);
    let by_model = reports::over_time(By::Model, &runs, &usage, asked.since, now);
    let (gates, finishes) = api.store.settled_gates_since(asked.since).await?;
    // The definitions of the versions whose gates count, each read once.
    let readable: HashMap<_, _> = runs.iter().map(|r| (r.id, r)).collect();
    let versions: BTreeSet<&str> = gates
        .iter()
        .filter_map(|g| readable.get(&g.run_id).map(|r| r.sop_version.as_str()))
        .collect();
    let mut sops = HashMap::new();
    for version in versions {
        if let Some(sop) = api.store.sop_definition(version).await? {
            sops.insert(version.to_owned(), sop);
        }
    }
    let gate_waits = reports::gate_waits(asked.by, &runs, &gates, &finishes, &sops, &over.buckets)
        .into_iter()
        .map(|(key, means)| Series::new(key, means))
        .collect();
    Ok(Figures {
        totals: reports::usage_groups(asked.by, &runs, &usage),
        over,
        by_model,
        gate_waits,
    })
}

/// `GET /reports`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Query(q): Query<ReportQuery>,
) -> Result<Markup, PageError> {
    let asked = asked(&q)?;
    let Figures {
        over,
        by_model,
        gate_waits,
        totals,
    } = figures(&api, &viewer, &asked).await?;
    let by = &asked.by_name;
    let per = over.bucket;
    let charts = [
        (
            format!("Runs started by {by} per {per}"),
            Unit::Runs,
            Style::StackedBars,
            pick(&over, |f| &f.runs),
        ),
        (
            format!("Mean duration of finished runs by {by} per {per}"),
            Unit::Seconds,
            Style::Lines,
            pick(&over, |f| &f.mean_seconds),
        ),
        (
            format!("Cost by {by} per {per}"),
            Unit::Usd,
            Style::StackedBars,
            pick(&over, |f| &f.cost_usd),
        ),
        (
            format!("Tokens by {by} per {per}"),
            Unit::Tokens,
            Style::StackedBars,
            pick(&over, |f| &f.tokens),
        ),
        (
            format!("Cost by model per {per}"),
            Unit::Usd,
            Style::StackedBars,
            pick(&by_model, |f| &f.cost_usd),
        ),
        (
            format!(
                "Mean time gates waited for a decision by {} per {per}",
                if asked.by == By::Model {
                    "sop"
                } else {
                    by.as_str()
                }
            ),
            Unit::Seconds,
            Style::Lines,
            gate_waits,
        ),
    ];
    let mut drawn = Vec::new();
    for (title, unit, style, series) in charts {
        let chart = TimeChart {
            title: title.clone(),
            unit,
            buckets: over.buckets.clone(),
            series: top_series(&series, MAX_SERIES),
            style,
        };
        // The caption below the picture says what it is; the picture keeps it as its
        // title for screen readers, and does not draw it again.
        let svg =
            gatehouse_charts::svg_uncaptioned(&chart, CHART_WIDTH, CHART_HEIGHT).map_err(|e| {
                ApiError::Internal(format!("the chart `{title}` could not be drawn: {e}"))
            })?;
        drawn.push((title, svg));
    }
    let csv_link = format!(
        "/reports.csv?by={}&since={}",
        encode(&asked.by_name),
        encode(&asked.since_text)
    );
    let body = html! {
        h1 { "Reports" }
        form.filter method="get" action="/reports" {
            label for="by" { "By" }
            select id="by" name="by" {
                @for b in ["project", "person", "sop", "sop-version", "model"] {
                    option value=(b) selected[asked.by_name == b] { (b) }
                }
            }
            label for="since" { "Over the last" }
            select id="since" name="since" {
                @for (value, label) in [("7d", "7 days"), ("30d", "30 days"), ("90d", "90 days"), ("365d", "a year")] {
                    option value=(value) selected[asked.since_text == value] { (label) }
                }
            }
            button type="submit" { "Show" }
            " " a href=(csv_link) download="gatehouse-report.csv" { "Download CSV" }
        }
        div.charts {
            @for (title, svg) in &drawn {
                figure { figcaption { (title) } (PreEscaped(svg)) }
            }
        }
        section aria-labelledby="totals-h" {
            h2 id="totals-h" { "Totals" }
            @if totals.is_empty() { p.empty { "No runs in this window." } } @else {
                table {
                    thead { tr { th { (asked.by_name) } th { "Runs" } th { "Succeeded" } th { "Failed" } th { "Cancelled" } th { "Time in finished runs" } th { "Tokens in" } th { "Tokens out" } th { "Cost" } } }
                    tbody {
                        @for g in &totals {
                            tr {
                                td { (g.key) }
                                td { (g.runs) } td { (g.succeeded) } td { (g.failed) } td { (g.cancelled) }
                                td { (duration(g.duration_ms)) }
                                td { (g.input_tokens + g.cache_read_tokens + g.cache_write_tokens) }
                                td { (g.output_tokens) }
                                td { (dollars(g.cost_usd)) @if !g.unpriced_models.is_empty() { " (no price for " (g.unpriced_models.join(", ")) ")" } }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Reports", Some(&viewer), body))
}

/// `GET /reports.csv`
pub(crate) async fn csv(
    State(api): State<ApiState>,
    viewer: Viewer,
    Query(q): Query<ReportQuery>,
) -> Result<Response, PageError> {
    let asked = asked(&q)?;
    let (runs, usage) = reports::readable_window(&api, viewer.caller.reader(), asked.since).await?;
    let over = reports::over_time(asked.by, &runs, &usage, asked.since, Utc::now());
    let mut response = reports::csv(&over, &asked.by_name).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"gatehouse-report.csv\""),
    );
    Ok(response)
}

/// One figure of every group, as chart series.
fn pick(over: &OverTime, figure: impl Fn(&reports::Figures) -> &Vec<f64>) -> Vec<Series> {
    over.groups
        .iter()
        .map(|(key, f)| Series::new(key.clone(), figure(f).clone()))
        .collect()
}
