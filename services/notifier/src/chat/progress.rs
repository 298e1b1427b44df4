//! A run's progress message: pure, from the stored run.

use gatehouse_chat::Progress;
use gatehouse_engine::RunState;
use gatehouse_events::NodeStatus;
use gatehouse_sop::Sop;
use gatehouse_store::RunRow;

/// Longest failure reason quoted.
const ERROR_CHARS: usize = 200;

/// The progress of `run`: one line per node that has started.
pub(crate) fn progress(
    run: &RunRow,
    sop: &Sop,
    state: &RunState,
    run_url: Option<String>,
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
