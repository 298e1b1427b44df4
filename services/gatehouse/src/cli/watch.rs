//! `gatehouse run watch RUN`: a run's node changes and output as they happen, until it
//! ends. A run that stops for people says so — the gate, who may decide it and the command
//! that does — instead of sitting silent until someone else acts.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::bail;
use gatehouse_ingest::views::{GateView, LogView, RunDetail};

use crate::cli::client::{Client, path_segment};
use crate::cli::logs::{ended, log_line};

/// How often the run is asked again.
const POLL: Duration = Duration::from_millis(500);

/// Prints node changes, output and waits until the run ends; fails unless it succeeded.
pub async fn watch(client: &Client, id: &str) -> anyhow::Result<()> {
    let first: RunDetail = client.get(&format!("/runs/{}", path_segment(id))).await?;
    let id = first.run.id;
    let mut seen: BTreeMap<String, (String, u32)> = BTreeMap::new();
    let mut told: BTreeSet<(String, u32)> = BTreeSet::new();
    let mut paused_told = false;
    let mut after = 0;
    loop {
        let run: RunDetail = client.get(&format!("/runs/{id}")).await?;
        for n in &run.nodes {
            let now = (n.status.clone(), n.attempt);
            if seen.get(&n.node) != Some(&now) {
                println!("{} #{}: {}", n.node, n.attempt, n.status);
                seen.insert(n.node.clone(), now);
            }
        }
        let lines: Vec<LogView> = client
            .get(&format!("/runs/{id}/logs?after={after}"))
            .await?;
        for l in &lines {
            println!("  {}", log_line(l));
            after = l.seq;
        }
        let status = run.run.status.as_str();
        if run.nodes.iter().any(|n| n.status == "waiting_approval") {
            let gates: Vec<GateView> = client.get(&format!("/gates?run={id}")).await?;
            for gate in gates {
                if told.insert((gate.node.clone(), gate.attempt)) {
                    println!("{}", waiting_at(&gate));
                }
            }
        }
        match status {
            "paused" if !paused_told => {
                paused_told = true;
                println!("run {id} is paused: `gatehouse run resume {id}` resumes it");
            }
            "paused" => {}
            _ => paused_told = false,
        }
        if ended(status) {
            if status == "succeeded" {
                println!("run {id} succeeded");
                return Ok(());
            }
            bail!(
                "run {id} {status}{}",
                run.failure.map(|f| format!(": {f}")).unwrap_or_default()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What a run waits for at `gate`, who may decide and how, as lines for the terminal.
fn waiting_at(gate: &GateView) -> String {
    let who = if gate.approvers.is_empty() {
        "anyone who may decide the project's gates".to_owned()
    } else {
        gate.approvers.join(", ")
    };
    let needed = if gate.min_approvals > 1 {
        format!(
            "{} approvals ({} so far{})",
            gate.min_approvals,
            gate.approvals.len(),
            if gate.approvals.is_empty() {
                String::new()
            } else {
                format!(": {}", gate.approvals.join(", "))
            }
        )
    } else {
        "a decision".to_owned()
    };
    let mut out = format!(
        "waiting at gate `{}` (attempt {}) for {needed} from {who}",
        gate.node, gate.attempt
    );
    if let Some(refusal) = &gate.raise {
        out.push_str(&format!(
            "\n  the agent asks to raise its budget: {refusal}"
        ));
    }
    if let Some(feedback) = &gate.feedback {
        out.push_str(&format!("\n  {}", crate::cli::runs::one_line(feedback)));
    }
    out.push_str(&format!(
        "\n  decide: gatehouse gate approve {id} | gatehouse gate reject {id}",
        id = gate.id
    ));
    if let Some(to) = gate.send_back.first() {
        out.push_str(&format!(
            " | gatehouse gate send-back {} --to {to} --comment \"…\"",
            gate.id
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> GateView {
        GateView {
            id: "0193a4b2-0000-7000-8000-000000000001/review".into(),
            run_id: uuid::Uuid::nil(),
            sop: "bug-fix".into(),
            node: "review".into(),
            attempt: 1,
            approvers: vec!["group:leads".into()],
            min_approvals: 1,
            approvals: vec![],
            send_back: vec!["fix".into()],
            raise: None,
            feedback: None,
        }
    }

    #[test]
    fn a_wait_names_the_gate_who_decides_and_the_commands() {
        let text = waiting_at(&gate());
        assert!(
            text.starts_with(
                "waiting at gate `review` (attempt 1) for a decision from group:leads\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("gatehouse gate approve 0193a4b2-0000-7000-8000-000000000001/review")
        );
        assert!(text.contains("send-back 0193a4b2-0000-7000-8000-000000000001/review --to fix"));
    }

    #[test]
    fn a_gate_needing_several_approvals_counts_them() {
        let mut g = gate();
        g.approvers.clear();
        g.min_approvals = 2;
        g.approvals = vec!["ana".into()];
        g.send_back.clear();
        let text = waiting_at(&g);
        assert!(
            text.contains("for 2 approvals (1 so far: ana) from anyone who may decide"),
            "{text}"
        );
        assert!(!text.contains("send-back"), "{text}");
    }
}
