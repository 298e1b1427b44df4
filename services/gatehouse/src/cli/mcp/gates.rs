//! The gate tools: `list_gates` and `decide_gate`. A decision goes to the API's decision
//! route, the one checked path every channel shares (approvers, the requester rule, the
//! gate's attempt, an agent's token refused), never anywhere else.

use gatehouse_ingest::views::{Accepted, Decide, DecisionKind, GateView};
use schemars::JsonSchema;
use serde::Deserialize;

use super::answer::{Answer, Failure, Outcome};
use super::checks;
use crate::cli::client::{Client, path_segment};

/// What `list_gates` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListGates {
    /// Only the gates this person may decide now (default true); false lists every gate
    /// waiting in runs they may read.
    for_me: Option<bool>,
}

/// `list_gates`: gates waiting for a decision.
pub(crate) async fn list(client: &Client, args: ListGates) -> Outcome {
    let for_me = args.for_me.unwrap_or(true);
    let gates: Vec<GateView> = client.get(&format!("/gates?for_me={for_me}")).await?;
    let mut summary = format!(
        "{} gate(s) waiting{}",
        gates.len(),
        if for_me { " for you" } else { "" }
    );
    for g in &gates {
        summary.push_str(&format!(
            "\n{} (attempt {}, approvers {}{})",
            g.id,
            g.attempt,
            g.approvers.join(", "),
            if g.send_back.is_empty() {
                String::new()
            } else {
                format!("; may send back to {}", g.send_back.join(", "))
            }
        ));
    }
    Ok(Answer::with_json(summary, &gates))
}

/// What `decide_gate` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecideGate {
    /// The gate, RUN/NODE, as list_gates shows it.
    gate: String,
    /// approve (the run goes on), reject (the run fails) or send_back (redo from `to`).
    decision: Decision,
    /// For send_back: the node to redo (one of the gate's send_back nodes).
    to: Option<String>,
    /// Why, for the record (required for send_back: whoever redoes the work reads it).
    comment: Option<String>,
    /// The gate attempt decided, as list_gates shows it (default: the current one). A
    /// decision for an earlier attempt is refused.
    attempt: Option<u32>,
}

/// A decision at a gate.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Reject,
    SendBack,
}

/// `decide_gate`: `POST /runs/{id}/gates/{node}/decision`, as `gatehouse gate approve`.
pub(crate) async fn decide(client: &Client, args: DecideGate) -> Outcome {
    let (run, node) = args.gate.trim().split_once('/').ok_or_else(|| {
        Failure::Arguments(format!(
            "`{}` is not a gate: a gate is RUN/NODE, e.g. 0193a4b2-7c1d-7e2f-9a3b-4c5d6e7f8091/review (list_gates shows them)",
            checks::shown(&args.gate)
        ))
    })?;
    let run = checks::id(run, "run", "list_gates")?;
    let node = checks::node(node)?;
    let to = args.to.as_deref().map(checks::node).transpose()?;
    let comment = args
        .comment
        .as_deref()
        .map(|c| checks::text(c, "comment"))
        .transpose()?
        .map(str::to_owned);
    let decision = match (args.decision, to) {
        (Decision::SendBack, None) => {
            return Err(Failure::Arguments(
                "send_back needs `to`: the node to redo (list_gates shows the gate's send_back nodes)"
                    .into(),
            ));
        }
        (Decision::Approve | Decision::Reject, Some(_)) => {
            return Err(Failure::Arguments("`to` goes only with send_back".into()));
        }
        (Decision::Approve, None) => DecisionKind::Approve,
        (Decision::Reject, None) => DecisionKind::Reject,
        (Decision::SendBack, Some(_)) => DecisionKind::SendBack,
    };
    let body = Decide {
        decision,
        to: to.map(str::to_owned),
        comment,
        attempt: args.attempt,
    };
    let accepted: Accepted = client
        .post(
            &format!("/runs/{run}/gates/{}/decision", path_segment(node)),
            &body,
        )
        .await?;
    let verb = match decision {
        DecisionKind::Approve => "approved",
        DecisionKind::Reject => "rejected",
        DecisionKind::SendBack => "sent back",
    };
    Ok(Answer::with_json(
        format!("{verb}: gate `{node}` of run {run}"),
        &accepted,
    ))
}
