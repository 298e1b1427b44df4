//! Clicks on approval cards (and the dialogs they open) become gate decisions: the same
//! checks and claim as every other channel. A click that decides nothing gets an
//! ephemeral answer saying why — only the clicker sees it; the card itself changes when
//! the decision is applied.

use gatehouse_chat::{CardAction, Verb};
use gatehouse_engine::gate_in_force;
use gatehouse_events::{Actor, Event};
use gatehouse_store::Tx;

use super::Platform;
use super::mention::{Reply, chat_actor, want_chat_text};
use crate::gate_decision::{checked_decision, settled_by};
use crate::intake::deliveries::Outcome;
use crate::views::{Decide, DecisionKind};
use crate::{ApiError, ApiState, outbox};

/// A decision asked for from a card, on either platform.
pub(crate) struct Click {
    pub platform: Platform,
    /// The clicker's platform id.
    pub user: String,
    /// Slack: the channel for the ephemeral answer.
    pub channel: String,
    /// Who the ephemeral answer goes to: the Slack user, or the Discord interaction token.
    pub recipient: String,
    /// What the control means.
    pub action: CardAction,
    /// The reviewer's comment, from the dialog.
    pub comment: Option<String>,
}

/// Decides the gate the click names, or answers the clicker why not.
pub(crate) async fn handle(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    c: &Click,
) -> Result<Outcome, ApiError> {
    let actor = chat_actor(api, c.platform, &c.user).await?;
    let gate = c.action.gate();
    match decide(api, tx, c, &actor).await {
        Ok(note) => Ok(Outcome::processed(vec![note])),
        Err(e) if e.status().is_server_error() => Err(e),
        Err(e) => {
            let key = format!("ephemeral:{}:{delivery}", c.platform.name());
            let text = format!("Your decision on `{gate}` was not taken: {e}.");
            let to = Reply {
                platform: c.platform,
                key: &key,
                channel: &c.channel,
                thread: None,
                recipient: Some(&c.recipient),
            };
            want_chat_text(tx, &to, &text).await?;
            Ok(Outcome::processed(vec![format!("{gate}: refused: {e}")]))
        }
    }
}

async fn decide(api: &ApiState, tx: &mut Tx, c: &Click, actor: &Actor) -> Result<String, ApiError> {
    let a = &c.action;
    let Some(person) = &actor.person else {
        return Err(ApiError::Forbidden(format!(
            "you are not one of the people configured for Gatehouse, so you cannot decide gates; ask an administrator to add your {} id `{}` to [[people]]",
            c.platform.name(),
            c.user
        )));
    };
    // Said first, because it is the likeliest reason: someone was quicker.
    if let Some(outcome) = tx.outcome(a.run, &a.node, a.attempt).await? {
        return Err(ApiError::Conflict(settled_by(&outcome)));
    }
    let (decision, to) = match (a.verb, &a.target) {
        (Verb::Approve, _) => (DecisionKind::Approve, None),
        (Verb::Reject, _) => (DecisionKind::Reject, None),
        (Verb::SendBack, Some(target)) => (DecisionKind::SendBack, Some(target.clone())),
        (Verb::SendBack, None) => {
            return Err(ApiError::Unprocessable(
                "choose the node to send the work back to".into(),
            ));
        }
    };
    let decide = Decide {
        decision,
        to,
        comment: c.comment.clone().filter(|c| !c.trim().is_empty()),
        attempt: Some(a.attempt),
    };
    let groups = api.people.current(&api.store).await?.groups(person);
    let decision = checked_decision(
        api,
        tx,
        a.run,
        a.node.clone(),
        decide,
        actor.clone(),
        groups,
    )
    .await?;
    outbox::append(tx, Event::GateDecision(decision)).await?;
    Ok(format!(
        "{} (attempt {}): {:?} decided",
        a.gate(),
        a.attempt,
        a.verb
    ))
}

/// The nodes a card's gate may send work back to, checked against the card's attempt
/// (an old card opens no dialog).
pub(crate) async fn send_back_targets(
    api: &ApiState,
    action: &CardAction,
) -> Result<Vec<String>, ApiError> {
    let (_, sop, state) = api.runs.load(action.run).await?;
    let node = state
        .nodes
        .get(&action.node)
        .ok_or_else(|| ApiError::NotFound(format!("run has no node `{}`", action.node)))?;
    if node.attempt != action.attempt
        || node.status != gatehouse_events::NodeStatus::WaitingApproval
    {
        return Err(ApiError::Conflict(format!(
            "this card is for attempt {} of gate `{}`, which is now at attempt {} ({})",
            action.attempt,
            action.node,
            node.attempt,
            node.status.as_str()
        )));
    }
    let gate = sop
        .node(&action.node)
        .and_then(|def| gate_in_force(def, node));
    match gate {
        Some(gate) if !gate.send_back.is_empty() => Ok(gate.send_back.clone()),
        _ => Err(ApiError::Unprocessable(format!(
            "gate `{}` cannot send work back",
            action.node
        ))),
    }
}
