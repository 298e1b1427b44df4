//! A report's figures over time: the window cut into days (up to two months) or weeks,
//! and per bucket and group the runs started, their mean duration, tokens and cost. Pure,
//! like [`super::usage_groups`], whose grouping it shares; the console charts it and
//! offers it as CSV.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Datelike, Days, NaiveDate, Utc};
use gatehouse_events::RunStatus;
use gatehouse_store::{RunOutline, UsageRow};
use uuid::Uuid;

use super::By;

/// Windows up to this many days are cut into days; longer ones into weeks.
const DAILY_UP_TO: i64 = 62;

/// One group's figures, one value per bucket.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Figures {
    pub(crate) runs: Vec<f64>,
    /// Mean wall-clock seconds of the runs that finished; NaN where none did, a bucket
    /// without a mean (a gap in its line, an empty CSV field), not a zero.
    pub(crate) mean_seconds: Vec<f64>,
    pub(crate) tokens: Vec<f64>,
    pub(crate) cost_usd: Vec<f64>,
}

/// The window's buckets and each group's figures, groups in key order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OverTime {
    /// The first day of each bucket.
    pub(crate) buckets: Vec<NaiveDate>,
    /// `day` or `week`.
    pub(crate) bucket: &'static str,
    pub(crate) groups: BTreeMap<String, Figures>,
}

/// Cuts `since..=now` into buckets and adds each run (and its usage) to its group's bucket
/// by when the run started.
pub(crate) fn over_time(
    by: By,
    runs: &[RunOutline],
    usage: &[UsageRow],
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> OverTime {
    let daily = (now - since).num_days() <= DAILY_UP_TO;
    let start_of = |day: NaiveDate| {
        if daily {
            day
        } else {
            day - Days::new(u64::from(day.weekday().num_days_from_monday()))
        }
    };
    let step = if daily { 1 } else { 7 };
    let mut buckets = Vec::new();
    let mut day = start_of(since.date_naive());
    while day <= now.date_naive() {
        buckets.push(day);
        day = day + Days::new(step);
    }
    let index = |at: DateTime<Utc>| {
        let b = start_of(at.date_naive());
        buckets.binary_search(&b).ok()
    };
    let empty = || Figures {
        runs: vec![0.0; buckets.len()],
        mean_seconds: vec![f64::NAN; buckets.len()],
        tokens: vec![0.0; buckets.len()],
        cost_usd: vec![0.0; buckets.len()],
    };
    let mut groups: BTreeMap<String, Figures> = BTreeMap::new();
    // Finished runs' total seconds and count per (group, bucket), for the means.
    let mut finished: BTreeMap<(String, usize), (f64, f64)> = BTreeMap::new();
    let by_id: BTreeMap<Uuid, &RunOutline> = runs.iter().map(|r| (r.id, r)).collect();
    // A run counts once in a group, however many usage rows it has there.
    let mut counted: BTreeSet<(String, Uuid)> = BTreeSet::new();
    let mut count = |key: String, run: &RunOutline, groups: &mut BTreeMap<String, Figures>| {
        let Some(i) = index(run.created_at) else {
            return;
        };
        if !counted.insert((key.clone(), run.id)) {
            return;
        }
        groups.entry(key.clone()).or_insert_with(empty).runs[i] += 1.0;
        if matches!(
            run.status,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Cancelled
        ) {
            let seconds =
                (run.updated_at - run.created_at).num_milliseconds().max(0) as f64 / 1000.0;
            let slot = finished.entry((key, i)).or_default();
            slot.0 += seconds;
            slot.1 += 1.0;
        }
    };
    for run in runs {
        if let Some(key) = by.key(run) {
            count(key, run, &mut groups);
        }
    }
    for row in usage {
        let Some(run) = by_id.get(&row.run_id) else {
            continue;
        };
        let key = match by {
            By::Model => row.model.clone(),
            _ => match by.key(run) {
                Some(key) => key,
                None => continue,
            },
        };
        count(key.clone(), run, &mut groups);
        let Some(i) = index(run.created_at) else {
            continue;
        };
        let figures = groups.entry(key).or_insert_with(empty);
        figures.tokens[i] +=
            (row.input_tokens + row.output_tokens + row.cache_read_tokens + row.cache_write_tokens)
                as f64;
        figures.cost_usd[i] += row.cost_usd.unwrap_or(0.0);
    }
    for ((key, i), (seconds, n)) in finished {
        if let Some(figures) = groups.get_mut(&key) {
            figures.mean_seconds[i] = seconds / n;
        }
    }
    OverTime {
        buckets,
        bucket: if daily { "day" } else { "week" },
        groups,
    }
}

/// The figures as CSV: a row per bucket and group that had any run.
pub(crate) fn csv(over: &OverTime, by: &str) -> String {
    let mut out = format!(
        "{},{by},runs,mean_duration_s,tokens,cost_usd\n",
        over.bucket
    );
    for (key, f) in &over.groups {
        for (i, day) in over.buckets.iter().enumerate() {
            if f.runs[i] == 0.0 && f.tokens[i] == 0.0 {
                continue;
            }
            let mean = if f.mean_seconds[i].is_nan() {
                String::new()
            } else {
                format!("{:.3}", f.mean_seconds[i])
            };
            out.push_str(&format!(
                "{day},{},{},{mean},{},{:.4}\n",
                csv_field(key),
                f.runs[i],
                f.tokens[i],
                f.cost_usd[i]
            ));
        }
    }
    out
}

/// A CSV field: quoted when it holds a comma, quote or line break, and never starting with
/// a character a spreadsheet would read as a formula.
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) && text != "-" {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn run(person: &str, created: &str, seconds: i64, status: RunStatus) -> RunOutline {
        let created_at = at(created);
        RunOutline {
            id: Uuid::now_v7(),
            sop: "fix".into(),
            sop_version: "sha256:1".into(),
            requested_by: Some(person.into()),
            status,
            project: Some("api".into()),
            created_at,
            updated_at: created_at + chrono::Duration::seconds(seconds),
        }
    }

    #[test]
    fn runs_fall_into_their_days_with_mean_durations_tokens_and_cost() {
        let a = run("ana", "2026-12-01T10:00:00Z", 60, RunStatus::Succeeded);
        let b = run("ana", "2026-12-01T20:00:00Z", 120, RunStatus::Failed);
        let c = run("bo", "2026-12-03T09:00:00Z", 10, RunStatus::Running);
        let usage = [UsageRow {
            run_id: b.id,
            node: "code".into(),
            attempt: 1,
            model: "sonnet".into(),
            input_tokens: 1000,
            output_tokens: 100,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: Some(0.25),
        }];
        let over = over_time(
            By::Person,
            &[a, b, c],
            &usage,
            at("2026-11-30T12:00:00Z"),
            at("2026-12-03T12:00:00Z"),
        );
        assert_eq!(over.bucket, "day");
        assert_eq!(over.buckets.len(), 4);
        let ana = &over.groups["ana"];
        assert_eq!(ana.runs, [0.0, 2.0, 0.0, 0.0]);
        // Days without a finished run have no mean: gaps, not zeros.
        let means: Vec<Option<f64>> = (ana.mean_seconds.iter())
            .map(|m| (!m.is_nan()).then_some(*m))
            .collect();
        assert_eq!(means, [None, Some(90.0), None, None]);
        assert_eq!(ana.tokens, [0.0, 1100.0, 0.0, 0.0]);
        assert_eq!(ana.cost_usd, [0.0, 0.25, 0.0, 0.0]);
        let bo = &over.groups["bo"];
        assert_eq!(bo.runs, [0.0, 0.0, 0.0, 1.0]);
        assert!(
            bo.mean_seconds.iter().all(|m| m.is_nan()),
            "a running run has no duration yet"
        );
        assert_eq!(
            csv(&over, "person"),
            "day,person,runs,mean_duration_s,tokens,cost_usd\n\
             2026-12-01,ana,2,90.000,1100,0.2500\n\
             2026-12-03,bo,1,,0,0.0000\n"
        );
    }

    #[test]
    fn long_windows_are_cut_into_weeks_from_monday() {
        let over = over_time(
            By::Sop,
            &[run("ana", "2026-12-02T10:00:00Z", 1, RunStatus::Succeeded)],
            &[],
            at("2026-09-01T00:00:00Z"),
            at("2026-12-02T12:00:00Z"),
        );
        assert_eq!(over.bucket, "week");
        assert_eq!(over.buckets.first().unwrap().to_string(), "2026-08-31");
        assert_eq!(over.buckets.last().unwrap().to_string(), "2026-11-30");
        assert_eq!(over.groups["fix"].runs.last(), Some(&1.0));
    }

    #[test]
    fn model_groups_count_a_run_once_per_model() {
        let a = run("ana", "2026-12-01T10:00:00Z", 60, RunStatus::Succeeded);
        let row = |model: &str| UsageRow {
            run_id: a.id,
            node: "code".into(),
            attempt: 1,
            model: model.into(),
            input_tokens: 10,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: None,
        };
        let over = over_time(
            By::Model,
            std::slice::from_ref(&a),
            &[row("sonnet"), row("sonnet"), row("haiku")],
            at("2026-12-01T00:00:00Z"),
            at("2026-12-01T12:00:00Z"),
        );
        assert_eq!(over.groups["sonnet"].runs, [1.0]);
        assert_eq!(over.groups["sonnet"].tokens, [20.0]);
        assert_eq!(over.groups["haiku"].runs, [1.0]);
    }

    #[test]
    fn csv_fields_cannot_smuggle_formulas_or_columns() {
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("-"), "-");
        assert_eq!(csv_field("ana"), "ana");
    }
}
