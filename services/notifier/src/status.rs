//! A run's status comment, as Markdown: pure, so its wording is tested without GitHub.

use gatehouse_chat::{FEEDBACK_EFFECT, RAISE_EFFECT};
use gatehouse_engine::{RunState, gate_in_force};
use gatehouse_events::NodeStatus;
use gatehouse_sop::Sop;
use uuid::Uuid;

use crate::asked::questions_markdown;
use crate::notes::{RunNotes, Style};

/// Where a status comment links to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    /// The run's console page (`server.public_url`), when it is reachable.
    pub run: Option<String>,
    /// The pull requests the run delivered into, as GitHub references from the comment's
    /// repository: `#7` there, `acme/web#8` in another.
    pub pull_requests: Vec<String>,
}

/// The status comment for a run: its nodes with status and attempt, for each waiting gate
/// who may decide and how, each question an agent waits on a person for (and the answered
/// ones briefly), the hosts its sandboxes were refused and the budgets it used
/// 80 % of or reached (`notes`), and links to the run and its pull request.
pub fn render_status(
    run_id: Uuid,
    sop: &Sop,
    state: &RunState,
    links: &Links,
    notes: &RunNotes,
) -> String {
    let mut out = format!(
        "**Gatehouse** · run `{run_id}` of **{}** — {}\n\n| node | kind | status | attempt |\n| --- | --- | --- | --- |\n",
        if sop.title.is_empty() {
            &sop.name
        } else {
            &sop.title
        },
        state.status.as_str()
    );
    for (node, n) in &state.nodes {
        let kind = sop.node(node).map_or("?", |d| d.kind.name());
        let rework = if n.rework_count > 0 {
            format!(" (reworked {}×)", n.rework_count)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "| {node} | {kind} | {}{rework} | {} |\n",
            n.status.as_str(),
            n.attempt
        ));
    }
    for (node, n) in &state.nodes {
        if n.status != NodeStatus::WaitingApproval {
            continue;
        }
        let Some(gate) = sop.node(node).and_then(|def| gate_in_force(def, n)) else {
            continue;
        };
        let who = if gate.approvers.is_empty() {
            "anyone configured".to_owned()
        } else {
            gate.approvers.join(", ")
        };
        if let Some(refusal) = n.budget_ask() {
            out.push_str(&format!(
                "\nNode **{node}** stopped: {refusal}. {RAISE_EFFECT}"
            ));
        }
        if let Some(feedback) = n.feedback_ask() {
            out.push_str(&format!("\n{feedback}. {FEEDBACK_EFFECT}"));
        }
        out.push_str(&format!(
            "\nGate **{node}** (attempt {}) waits for {who}: comment `/gatehouse approve`, `/gatehouse reject`",
            n.attempt
        ));
        if !gate.send_back.is_empty() {
            out.push_str(&format!(
                " or `/gatehouse send-back {} <comment>`",
                gate.send_back.join("|")
            ));
        }
        out.push('.');
        if gate.min_approvals > 1 {
            let have = n.gate.as_ref().map_or(0, |g| g.approvals.len());
            out.push_str(&format!(
                " {have} of {} approvals so far.",
                gate.min_approvals
            ));
        }
        out.push('\n');
    }
    out.push_str(&questions_markdown(&notes.questions));
    let lines = notes.lines(Style::Markdown);
    if !lines.is_empty() {
        out.push('\n');
        for line in lines {
            out.push_str(&format!("- {line}\n"));
        }
    }
    if let Some(failure) = &state.failure {
        out.push_str(&format!("\nFailed: {failure}\n"));
    }
    if !links.pull_requests.is_empty() {
        out.push_str(&format!(
            "\nDelivered in {}.\n",
            links.pull_requests.join(", ")
        ));
    }
    if let Some(run) = &links.run {
        out.push_str(&format!("\n[Run details]({run})\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use gatehouse_engine::{Input, Outcome, apply};

    use super::*;

    const SOP: &str = "name: check\ntitle: Platform check\nnodes:\n  report: { kind: script, run: ls }\n  confirm: { kind: gate, needs: [report], approvers: [group:leads], send_back: [report] }\n";

    #[test]
    fn a_waiting_gate_says_who_may_decide_and_how() {
        let sop = gatehouse_sop::parse("check.yaml", SOP).unwrap();
        let mut state = RunState::new(&sop, Some("tri".into()));
        apply(&sop, &mut state, Input::Start).unwrap();
        apply(
            &sop,
            &mut state,
            Input::NodeFinished {
                node: "report".into(),
                attempt: 1,
                outcome: Outcome::Succeeded,
            },
        )
        .unwrap();
        let run = Uuid::nil();
        let text = render_status(run, &sop, &state, &Links::default(), &RunNotes::default());
        assert_eq!(
            text,
            "**Gatehouse** · run `00000000-0000-0000-0000-000000000000` of **Platform check** — waiting\n\n\
             | node | kind | status | attempt |\n| --- | --- | --- | --- |\n\
             | report | script | succeeded | 1 |\n\
             | confirm | gate | waiting_approval | 1 |\n\n\
             Gate **confirm** (attempt 1) waits for group:leads: comment `/gatehouse approve`, `/gatehouse reject` or `/gatehouse send-back report <comment>`.\n"
        );
        let links = Links {
            run: Some("https://gatehouse.example/runs/x".into()),
            pull_requests: vec!["#7".into()],
        };
        assert!(
            render_status(run, &sop, &state, &links, &RunNotes::default()).ends_with(
                "\nDelivered in #7.\n\n[Run details](https://gatehouse.example/runs/x)\n"
            )
        );
        let links = Links {
            run: None,
            pull_requests: vec!["#7".into(), "acme/web#8".into()],
        };
        assert!(
            render_status(run, &sop, &state, &links, &RunNotes::default())
                .ends_with("\nDelivered in #7, acme/web#8.\n")
        );
    }

    #[test]
    fn blocked_hosts_and_budgets_come_before_the_failure_and_links() {
        let sop = gatehouse_sop::parse("check.yaml", SOP).unwrap();
        let mut state = RunState::new(&sop, None);
        state.failure = Some("node report failed".into());
        let notes = RunNotes {
            blocked: vec![
                crate::BlockedHost {
                    host: "pypi.org".into(),
                    port: 443,
                },
                crate::BlockedHost {
                    host: "evil`.example".into(),
                    port: 80,
                },
            ],
            budgets: vec![crate::BudgetSpend {
                label: "project api".into(),
                period: "today".into(),
                attempt: None,
                day: None,
                tokens: 0,
                usd_micros: 16_100_000,
                limit_tokens: None,
                limit_usd_micros: Some(20_000_000),
            }],
            questions: Vec::new(),
        };
        let links = Links {
            run: Some("https://gatehouse.example/runs/x".into()),
            pull_requests: Vec::new(),
        };
        let text = render_status(Uuid::nil(), &sop, &state, &links, &notes);
        assert!(
            text.ends_with(
                "| confirm | gate | pending | 0 |\n\n\
                 - blocked `pypi.org:443` — add it to the profile's egress\n\
                 - blocked `evil?.example:80` — add it to the profile's egress\n\
                 - 80% of the budget of project api used today: $16.10 of $20.00\n\n\
                 Failed: node report failed\n\n\
                 [Run details](https://gatehouse.example/runs/x)\n"
            ),
            "{text}"
        );
    }
}
