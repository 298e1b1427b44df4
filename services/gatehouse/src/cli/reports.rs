//! The client verb `report usage`: a table, CSV for a spreadsheet, or JSON.

use gatehouse_ingest::views::UsageReport;

use crate::cli::args::ReportCommand;
use crate::cli::client::{Client, path_segment};
use crate::cli::runs::print;

pub async fn report(client: &Client, command: ReportCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        ReportCommand::Usage { by, since, csv } => {
            let path = format!(
                "/reports/usage?by={}&since={}",
                path_segment(&by),
                path_segment(&since)
            );
            let report: UsageReport = client.get(&path).await?;
            if csv {
                print!("{}", to_csv(&report)?);
                return Ok(());
            }
            print(as_json, &report, || table(&report))
        }
    }
}

const COLUMNS: [&str; 11] = [
    "runs",
    "succeeded",
    "failed",
    "cancelled",
    "duration_ms",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "unpriced_models",
];

fn to_csv(report: &UsageReport) -> anyhow::Result<String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let mut header = vec![report.by.as_str()];
    header.extend(COLUMNS);
    out.write_record(&header)?;
    for g in &report.groups {
        out.write_record([
            g.key.clone(),
            g.runs.to_string(),
            g.succeeded.to_string(),
            g.failed.to_string(),
            g.cancelled.to_string(),
            g.duration_ms.to_string(),
            g.input_tokens.to_string(),
            g.output_tokens.to_string(),
            g.cache_read_tokens.to_string(),
            g.cache_write_tokens.to_string(),
            format!("{:.6}", g.cost_usd),
            g.unpriced_models.join(" "),
        ])?;
    }
    Ok(String::from_utf8(out.into_inner()?)?)
}

fn table(report: &UsageReport) -> String {
    let mut out = format!(
        "runs since {} by {}\n{:<40}  {:>5}  {:>5}  {:>5}  {:>10}  {:>12}  {:>12}  {:>10}\n",
        report.since.format("%Y-%m-%d %H:%M:%S"),
        report.by,
        report.by.to_uppercase(),
        "RUNS",
        "OK",
        "FAIL",
        "MEAN TIME",
        "IN",
        "OUT",
        "COST"
    );
    for g in &report.groups {
        let finished = g.succeeded + g.failed + g.cancelled;
        let mean = match finished {
            0 => "-".to_owned(),
            n => format!("{:.1}s", g.duration_ms as f64 / n as f64 / 1000.0),
        };
        let mut cost = format!("${:.4}", g.cost_usd);
        if !g.unpriced_models.is_empty() {
            cost.push('*');
        }
        out.push_str(&format!(
            "{:<40}  {:>5}  {:>5}  {:>5}  {:>10}  {:>12}  {:>12}  {:>10}\n",
            g.key, g.runs, g.succeeded, g.failed, mean, g.input_tokens, g.output_tokens, cost
        ));
    }
    if report.groups.iter().any(|g| !g.unpriced_models.is_empty()) {
        out.push_str("* some models have no price: their tokens are counted, their cost is not\n");
    }
    out.trim_end().to_owned()
}
