//! The client verbs `requirement list` and `requirement show`: what people asked for, and
//! what was done for it.

use gatehouse_ingest::views::{RequirementDetail, RequirementSummary};

use crate::cli::args::RequirementCommand;
use crate::cli::client::{Client, path_segment};
use crate::cli::runs::{one_line, print, total};

pub async fn requirement(
    client: &Client,
    command: RequirementCommand,
    as_json: bool,
) -> anyhow::Result<()> {
    match command {
        RequirementCommand::List { state } => {
            let path = match state {
                Some(s) => format!("/requirements?state={}", path_segment(&s)),
                None => "/requirements".to_owned(),
            };
            let requirements: Vec<RequirementSummary> = client.get(&path).await?;
            print(as_json, &requirements, || table(&requirements))
        }
        RequirementCommand::Show { id } => {
            let detail: RequirementDetail = client
                .get(&format!("/requirements/{}", path_segment(&id)))
                .await?;
            print(as_json, &detail, || describe(&detail))
        }
    }
}

fn table(requirements: &[RequirementSummary]) -> String {
    let mut out = format!("{:<36}  {:<9}  {:<32}  TITLE\n", "ID", "STATE", "FROM");
    for r in requirements {
        out.push_str(&format!(
            "{:<36}  {:<9}  {:<32}  {}\n",
            r.id,
            r.state,
            r.key,
            one_line(&r.title)
        ));
    }
    out.trim_end().to_owned()
}

fn describe(d: &RequirementDetail) -> String {
    let r = &d.requirement;
    let mut out = format!(
        "requirement {} · {} · {}\n  {}\n  asked by {} on {}\n",
        r.id,
        r.key,
        r.state,
        one_line(&r.title),
        r.requested_by,
        r.created_at.format("%Y-%m-%d %H:%M:%S")
    );
    if let Some(project) = &r.project {
        out.push_str(&format!("  project {project}\n"));
    }
    if let Some(url) = &r.url {
        out.push_str(&format!("  {url}\n"));
    }
    out.push_str("runs:\n");
    if d.runs.is_empty() {
        out.push_str("  none\n");
    }
    for run in &d.runs {
        out.push_str(&format!("  {}  {:<10}  {}\n", run.id, run.status, run.sop));
    }
    if !d.conversations.is_empty() {
        out.push_str("conversations:\n");
        for c in &d.conversations {
            out.push_str(&format!(
                "  {}  {:<9}  {} turns  {}:{}\n",
                c.id, c.activity, c.turn_count, c.platform, c.channel
            ));
        }
    }
    if !d.pull_requests.is_empty() {
        out.push_str("pull requests:\n");
        for pr in &d.pull_requests {
            let head = match (pr.head.get(..7), pr.checks.as_str()) {
                (Some(head), "") => format!("  head {head}"),
                (Some(head), checks) => format!("  head {head}, checks {checks}"),
                (None, _) => String::new(),
            };
            out.push_str(&format!(
                "  {}#{}  {:<7}  from {}{head}  (run {})\n",
                pr.repo, pr.number, pr.state, pr.branch, pr.run_id
            ));
        }
    }
    if !d.pull_request_events.is_empty() {
        out.push_str("after the pull request:\n");
        for e in &d.pull_request_events {
            out.push_str(&format!(
                "  {}  {}#{}  {}  → {}\n",
                e.at.format("%Y-%m-%d %H:%M"),
                e.repo,
                e.number,
                e.summary,
                e.outcome
            ));
        }
    }
    if !d.direct_merges.is_empty() {
        out.push_str("merged directly:\n");
        for m in &d.direct_merges {
            let accepted = match &m.approved_by {
                Some(gate) => format!("accepted by gate `{gate}`"),
                None => "no gate before it".to_owned(),
            };
            out.push_str(&format!(
                "  {} into {} at {}  ({accepted}; run {})\n",
                m.repo,
                m.branch,
                m.commit.get(..12).unwrap_or(&m.commit),
                m.run_id
            ));
        }
    }
    if !d.pushed_branches.is_empty() {
        out.push_str("pushed:\n");
        for b in &d.pushed_branches {
            out.push_str(&format!(
                "  {}: {}  (run {})\n",
                b.repo,
                b.describe(),
                b.run_id
            ));
        }
    }
    out.push_str(&format!("usage: {}\n", total(&d.usage)));
    out.trim_end().to_owned()
}
