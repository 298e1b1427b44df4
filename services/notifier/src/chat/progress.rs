//! A run's progress message: pure, from the stored run.

use gatehouse_chat::Progress;
use gatehouse_engine::RunState;
use gatehouse_events::NodeStatus;
use gatehouse_sop::Sop;
use gatehouse_store::RunRow;

use crate::notes::{RunNotes, Style};

/// Longest failure reason quoted.
const ERROR_CHARS: usize = 200;

/// The progress of `run`: one line per node that has started, then one per host its
/// sandboxes were refused and per budget it used 80 % of or reached (`notes`).
pub(crate) fn progress(
    run: &RunRow,
    sop: &Sop,
    state: &RunState,
    run_url: Option<String>,
    notes: &RunNotes,
) -> Progress {
    let mut lines = Vec::new();
    for def in &sop.nodes {
        let Some(n) = state.nodes.get(&def.id) else {
            continue;
        };
        let what = match n.status {
            NodeStatus::Pending | NodeStatus::Ready => continue,
            NodeStatus::Dispatched | NodeStatus::Running => {
                format!("running (attempt {})", n.attempt)
            }
            NodeStatus::WaitingApproval => format!("waiting for approval (attempt {})", n.attempt),
            NodeStatus::Failed => match &n.last_error {
                Some(e) => format!("failed: {}", shorten(e)),
                None => "failed".into(),
            },
            other => other.as_str().to_owned(),
        };
        lines.push(format!("{}: {what}", def.id));
    }
    // Plain text: Slack and Discord escape each line themselves.
    lines.extend(notes.lines(Style::Plain));
    Progress {
        run: run.id,
        sop: sop.name.clone(),
        status: state.status.as_str().to_owned(),
        lines,
        run_url,
    }
}

fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= ERROR_CHARS {
        return line.to_owned();
    }
    let mut short: String = line.chars().take(ERROR_CHARS - 1).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use uuid::Uuid;

    use super::*;
    use crate::BlockedHost;

    #[test]
    fn blocked_hosts_follow_the_nodes_in_plain_text() {
        let sop = gatehouse_sop::parse(
            "t.yaml",
            "name: t\nnodes:\n  build: { kind: script, run: 'true' }\n",
        )
        .unwrap();
        let mut state = RunState::new(&sop, None);
        state.nodes.get_mut("build").unwrap().status = NodeStatus::Succeeded;
        let run = RunRow {
            id: Uuid::nil(),
            sop: "t".into(),
            sop_version: sop.version.clone(),
            params: "{}".into(),
            requested_by: None,
            status: gatehouse_events::RunStatus::Running,
            state: String::new(),
            revision: 1,
            parent_run: None,
            parent_node: None,
            parent_attempt: None,
            requirement_id: None,
            schedule: None,
            scheduled_ms: None,
            project: None,
            workspace: None,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            conversation: None,
        };
        let notes = RunNotes {
            blocked: vec![BlockedHost {
                host: "pypi.org".into(),
                port: 443,
            }],
            budgets: Vec::new(),
            questions: Vec::new(),
        };
        let p = progress(&run, &sop, &state, None, &notes);
        assert_eq!(
            p.lines,
            [
                "build: succeeded",
                "blocked pypi.org:443 — add it to the profile's egress"
            ]
        );
    }
}
