//! `gatehouse schedule ...`: `preview` computes locally; the other verbs go to the API.

use anyhow::bail;
use gatehouse_ingest::views::*;

use crate::cli::args::ScheduleCommand;
use crate::cli::client::Client;
use crate::cli::runs::print;

/// `gatehouse schedule preview`: the next fire times of an expression, computed by the
/// same code the scheduler uses.
pub fn preview(
    expr: &str,
    timezone: &str,
    from: Option<&str>,
    count: usize,
    as_json: bool,
) -> anyhow::Result<()> {
    let cron = gatehouse_schedule::Cron::new(expr, timezone)?;
    let from = match from {
        Some(text) => gatehouse_schedule::parse_time(text)?,
        None => jiff::Timestamp::now(),
    };
    let times: Vec<String> = cron
        .upcoming(from, count)
        .iter()
        .map(gatehouse_schedule::rfc3339)
        .collect();
    print(as_json, &times, || times.join("\n"))
}

/// The schedule verbs that talk to the server.
pub async fn schedule(
    client: &Client,
    command: ScheduleCommand,
    as_json: bool,
) -> anyhow::Result<()> {
    match command {
        ScheduleCommand::Preview { .. } => bail!("preview runs without a server"),
        ScheduleCommand::List => {
            let schedules: Vec<ScheduleView> = client.get("/schedules?limit=1000").await?;
            print(as_json, &schedules, || table(&schedules))
        }
        ScheduleCommand::Show { name } => {
            let detail: ScheduleDetail = client.get(&format!("/schedules/{name}")).await?;
            print(as_json, &detail, || describe(&detail))
        }
        ScheduleCommand::Create {
            name,
            cron,
            timezone,
            sop,
            params,
            overlap,
            catchup_window,
            jitter,
            start,
            end,
            project,
        } => {
            let body = CreateSchedule {
                name,
                cron,
                timezone: Some(timezone),
                sop,
                params: params.into_iter().collect(),
                overlap: Some(overlap),
                catchup_window: Some(catchup_window),
                jitter,
                start,
                end,
                project,
            };
            let created: ScheduleView = client.post("/schedules", &body).await?;
            print(as_json, &created, || {
                format!(
                    "created schedule {}; next fire {}",
                    created.name,
                    created.next_fire.as_deref().unwrap_or("none")
                )
            })
        }
        ScheduleCommand::Pause { name, note } => {
            let path = format!("/schedules/{name}/pause");
            let paused: ScheduleView = client.post(&path, &PauseSchedule { note }).await?;
            print(as_json, &paused, || {
                format!("paused schedule {}", paused.name)
            })
        }
        ScheduleCommand::Resume { name } => {
            let path = format!("/schedules/{name}/resume");
            let resumed: ScheduleView = client.post(&path, &serde_json::json!({})).await?;
            print(as_json, &resumed, || {
                format!(
                    "resumed schedule {}; next fire {}",
                    resumed.name,
                    resumed.next_fire.as_deref().unwrap_or("none")
                )
            })
        }
        ScheduleCommand::Trigger { name } => {
            let path = format!("/schedules/{name}/trigger");
            let fire: FireView = client.post(&path, &serde_json::json!({})).await?;
            print(as_json, &fire, || {
                match (fire.outcome.as_str(), fire.run_id) {
                    ("started", Some(run)) => format!("triggered {name}: started run {run}"),
                    ("buffered", _) => {
                        format!("triggered {name}: buffered until its running run ends")
                    }
                    ("skipped_overlap", _) => format!(
                        "triggered {name}: skipped, a run of it is still going (overlap policy)"
                    ),
                    (outcome, _) => format!("triggered {name}: {outcome}"),
                }
            })
        }
        ScheduleCommand::Backfill { name, from, to } => {
            let path = format!("/schedules/{name}/backfill");
            let result: BackfillResult = client.post(&path, &Backfill { from, to }).await?;
            print(as_json, &result, || {
                let mut out = format!(
                    "queued {} fire(s) of {name} to run one after another ({} already ran or wait)",
                    result.queued.len(),
                    result.already
                );
                for time in &result.queued {
                    out.push_str(&format!("\n  {}", time.to_rfc3339()));
                }
                out
            })
        }
        ScheduleCommand::Delete { name } => {
            client.delete(&format!("/schedules/{name}")).await?;
            print(as_json, &serde_json::json!({ "deleted": name }), || {
                format!("deleted schedule {name}")
            })
        }
    }
}

fn table(schedules: &[ScheduleView]) -> String {
    let mut out = format!(
        "{:<24}  {:<16}  {:<18}  {:<26}  {:<16}  SKIPPED\n",
        "NAME", "CRON", "SOP", "NEXT FIRE", "LAST"
    );
    for s in schedules {
        let next = if s.paused {
            "paused".to_owned()
        } else {
            s.next_fire.clone().unwrap_or_else(|| "ended".into())
        };
        let last = s
            .last_fire
            .as_ref()
            .map_or("-".to_owned(), |f| f.outcome.clone());
        out.push_str(&format!(
            "{:<24}  {:<16}  {:<18}  {:<26}  {:<16}  {}\n",
            s.name, s.cron, s.sop, next, last, s.skipped
        ));
    }
    out.trim_end().to_owned()
}

fn describe(detail: &ScheduleDetail) -> String {
    let s = &detail.schedule;
    let mut out = format!(
        "{}  {} ({})  → {}\n  overlap {}, catch-up {}, jitter {}, from {}\n",
        s.name, s.cron, s.timezone, s.sop, s.overlap, s.catchup_window, s.jitter, s.source
    );
    if s.paused {
        out.push_str(&format!(
            "  paused: {}\n",
            s.pause_note.as_deref().unwrap_or("(no note)")
        ));
    }
    if let Some(start) = s.start {
        out.push_str(&format!("  starts {}\n", start.to_rfc3339()));
    }
    if let Some(end) = s.end {
        out.push_str(&format!("  ends {}\n", end.to_rfc3339()));
    }
    out.push_str(&format!("  fires {}, skipped {}\n", s.fires, s.skipped));
    if !detail.upcoming.is_empty() {
        out.push_str("next:\n");
        for time in &detail.upcoming {
            out.push_str(&format!("  {time}\n"));
        }
    }
    if !detail.recent.is_empty() {
        out.push_str("recent:\n");
        for f in &detail.recent {
            out.push_str(&format!(
                "  {}  {:<8}  {:<16}  {}  late {} ms\n",
                f.scheduled_time.to_rfc3339(),
                f.kind,
                f.outcome,
                f.run_id.map_or("-".to_owned(), |r| format!(
                    "{r} ({})",
                    f.run_status.as_deref().unwrap_or("?")
                )),
                f.lateness_ms
            ));
        }
    }
    out.trim_end().to_owned()
}
