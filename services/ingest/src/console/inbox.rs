//! The inbox, the console's home: the gates and agents' questions waiting for me (decided
//! and answered right here), then my runs and my conversations — each in a project I may
//! read.

use std::collections::{BTreeSet, HashMap};

use axum::extract::{Query, State};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde::Deserialize;
use uuid::Uuid;

use super::actions::{answer_form, decision_form, notice};
use super::evidence::{self, CARDS_SHOWING_TEXT, Evidence};
use super::page::{PageError, frame, since, status, time};
use super::session::Viewer;
use crate::api::gates::{self, Waiting};
use crate::api::{conversations, questions, runs};
use crate::views::{DecisionKind, QuestionView};
use crate::{ApiState, projects};

/// How many of my runs and conversations the inbox lists.
const MINE: i64 = 20;
/// How many open questions the inbox reads.
const QUESTIONS: i64 = 200;

#[derive(Debug, Deserialize)]
pub(crate) struct InboxQuery {
    done: Option<String>,
}

/// `GET /`
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Query(q): Query<InboxQuery>,
) -> Result<Markup, PageError> {
    let reader = viewer.caller.reader();
    let waiting = gates::waiting(&api, reader).await?;
    let (mine, others): (Vec<(Waiting, Vec<DecisionKind>)>, Vec<_>) = waiting
        .into_iter()
        .map(|w| {
            let open =
                gates::open_decisions(&api, &viewer.caller, &w.row, &w.sop, &w.run, &w.view.node);
            (w, open)
        })
        .partition(|(_, open)| !open.is_empty());
    // Questions agents are waiting on: answered here by whoever may decide their project's
    // gates; the others are counted.
    let may_answer = viewer.caller.require(crate::rights::Scope::Decide).is_ok();
    let (asked, asked_others): (Vec<QuestionView>, Vec<QuestionView>) = api
        .store
        .open_questions(QUESTIONS)
        .await?
        .iter()
        .filter(|q| projects::may_read(&api, q.project.as_deref(), reader))
        .map(questions::view)
        .partition(|q| {
            may_answer
                && projects::may_decide(
                    &api,
                    q.project.as_deref(),
                    viewer.person(),
                    &viewer.caller.groups,
                )
                .is_ok()
        });
    let now = Utc::now();
    let cards = gate_cards(&api, &mine, now).await?;
    let hidden = projects::hidden(&api, reader);
    let my_runs = api
        .store
        .runs_requested_by(viewer.person(), &hidden, MINE)
        .await?;
    let my_conversations = api
        .store
        .conversations_started_by(viewer.person(), &hidden, MINE)
        .await?;
    let conversations = my_conversations
        .iter()
        .map(conversations::listed)
        .collect::<Result<Vec<_>, _>>()?;
    let body = html! {
        @if let Some(notice) = notice(q.done.as_deref()) {
            p.notice role="status" { (notice) }
        }
        h1 { "Inbox" }
        section aria-labelledby="waiting" {
            h2 id="waiting" { "Waiting for you " span.count { "(" (mine.len()) ")" } }
            @if mine.is_empty() && asked.is_empty() {
                p.empty { "No gate or agent is waiting for your decision." }
            }
            @for q in &asked {
                (question_card(&viewer, q))
            }
            @for (w, open, opened, shown) in &cards {
                (gate_card(&viewer, w, open, opened, &now, shown))
            }
            @if !others.is_empty() {
                p.aside { (others.len()) " more " (if others.len() == 1 { "gate waits" } else { "gates wait" }) " for other people." }
            }
            @if !asked_others.is_empty() {
                p.aside { (asked_others.len()) " more " (if asked_others.len() == 1 { "agent waits" } else { "agents wait" }) " for other people's answer." }
            }
        }
        section aria-labelledby="my-runs" {
            h2 id="my-runs" { "Your runs" }
            @if my_runs.is_empty() {
                p.empty { "You have not started any runs." }
            } @else {
                table {
                    thead { tr { th { "Run" } th { "SOP" } th { "Status" } th { "Project" } th { "Started" } } }
                    tbody {
                        @for run in my_runs.into_iter().map(runs::summary) {
                            tr {
                                td { a href=(format!("/runs/{}", run.id)) { (short(&run.id.to_string())) } }
                                td { (run.sop) }
                                td { (status(&run.status)) }
                                td { (run.project.unwrap_or_default()) }
                                td { (time(&run.created_at)) }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="my-conversations" {
            h2 id="my-conversations" { "Your conversations" }
            @if conversations.is_empty() {
                p.empty { "You have no conversations." }
            } @else {
                table {
                    thead { tr { th { "Conversation" } th { "Project" } th { "Where" } th { "Activity" } th { "Turns" } th { "Last active" } } }
                    tbody {
                        @for c in &conversations {
                            tr {
                                td { a href=(format!("/conversations/{}", c.id)) { (short(&c.id.to_string())) } " on " a href=(format!("/requirements/{}", c.requirement_id)) { (short(&c.requirement_id.to_string())) } }
                                td { (c.project) }
                                td { (c.platform) " " (c.channel) }
                                td { (status(&c.activity)) }
                                td { (c.turn_count) @if c.queued > 0 { " (" (c.queued) " queued)" } }
                                td { (time(&c.updated_at)) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(frame("Inbox", Some(&viewer), body))
}

/// A gate card's facts beyond the gate: when it opened, and its evidence.
type Card<'a> = (
    &'a Waiting,
    &'a [DecisionKind],
    DateTime<Utc>,
    Vec<Evidence>,
);

/// How long each gate waited, and its evidence: two reads for the whole page, and the
/// text of small files for the first cards only.
async fn gate_cards<'a>(
    api: &ApiState,
    mine: &'a [(Waiting, Vec<DecisionKind>)],
    now: DateTime<Utc>,
) -> Result<Vec<Card<'a>>, PageError> {
    let ids: Vec<Uuid> = mine
        .iter()
        .map(|(w, _)| w.row.id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let finishes = api.store.node_finishes(&ids).await?;
    let artifacts = api.store.artifacts_of_runs(&ids).await?;
    let mut finished: HashMap<Uuid, Vec<(&str, DateTime<Utc>)>> = HashMap::new();
    for f in &finishes {
        finished
            .entry(f.run_id)
            .or_default()
            .push((f.node.as_str(), f.finished_at));
    }
    let mut kept: HashMap<Uuid, Vec<&gatehouse_store::ArtifactRow>> = HashMap::new();
    for a in &artifacts {
        kept.entry(a.run_id).or_default().push(a);
    }
    let mut cards = Vec::with_capacity(mine.len());
    for (i, (w, open)) in mine.iter().enumerate() {
        let opened = gates::opened_at(
            &w.sop,
            &w.view.node,
            w.row.created_at,
            finished.get(&w.row.id).into_iter().flatten().copied(),
            now,
        );
        let entries = w
            .sop
            .node(&w.view.node)
            .and_then(|n| n.gate())
            .map(|g| g.evidence.clone())
            .unwrap_or_default();
        let files = kept.get(&w.row.id).map(Vec::as_slice).unwrap_or_default();
        let shown = evidence::gather(api, &entries, files, i < CARDS_SHOWING_TEXT).await;
        cards.push((w, open.as_slice(), opened, shown));
    }
    Ok(cards)
}

/// One gate waiting for me: what it is, how long it has waited, its evidence, and the
/// decision.
fn gate_card(
    viewer: &Viewer,
    w: &Waiting,
    open: &[DecisionKind],
    opened: &DateTime<Utc>,
    now: &DateTime<Utc>,
    shown: &[Evidence],
) -> Markup {
    let gate = &w.view;
    let run_url = format!("/runs/{}", gate.run_id);
    let title = w
        .sop
        .node(&gate.node)
        .map(|n| n.title.clone())
        .unwrap_or_else(|| gate.node.clone());
    html! {
        article.gate aria-label=(format!("Gate {} of run {}", gate.node, gate.run_id)) {
            h3 {
                a href=(format!("{run_url}#node-{}", gate.node)) { (title) }
                " · " (w.sop.title)
            }
            p.meta {
                span.waited { "waiting " (since(opened, now)) }
                " · run " a href=(run_url) { (short(&gate.run_id.to_string())) }
                " · attempt " (gate.attempt)
                " · " (gate.approvals.len()) " of " (gate.min_approvals) " approvals"
                @if let Some(by) = &w.row.requested_by { " · requested by " (by) }
                @if let Some(project) = &w.row.project { " · project " (project) }
            }
            (evidence::render(gate.run_id, shown))
            (decision_form(viewer, gate, open, "/"))
        }
    }
}

/// One question an agent waits on: what it asks, what it showed, where it runs, and the
/// answer form. The text is the agent's, shown escaped as plain text.
fn question_card(viewer: &Viewer, q: &QuestionView) -> Markup {
    let (where_url, where_label) = match (q.run_id, &q.node, q.conversation_id) {
        (Some(run), Some(node), _) => (
            format!("/runs/{run}#node-{node}"),
            format!("node {node} of run {}", short(&run.to_string())),
        ),
        (_, _, Some(conversation)) => (
            format!("/conversations/{conversation}"),
            format!("conversation {}", short(&conversation.to_string())),
        ),
        _ => ("/".to_owned(), "an agent".to_owned()),
    };
    let heading = match q.kind.as_str() {
        "permission" => "An agent wants to use a tool",
        _ => "An agent asks",
    };
    html! {
        article.gate.question aria-label=(format!("Question {}", q.id)) {
            h3 { (heading) " · " a href=(where_url) { (where_label) } }
            blockquote.asked { (q.question) }
            @if let Some(evidence) = &q.evidence {
                details { summary { "Evidence" } pre { (evidence) } }
            }
            p.meta {
                "attempt " (q.attempt)
                " · asked " (time(&q.asked_at))
                @if let Some(expires) = &q.expires_at { " · expires " (time(expires)) }
                @if let Some(project) = &q.project { " · project " (project) }
            }
            (answer_form(viewer, q, "/"))
        }
    }
}

/// The start of a UUID people can type back: its first 12 digits, the millisecond it was
/// made (UUIDv7), as the first 8 are shared by every id of the same minute. Lists of
/// many show [`gatehouse_commands::short_ids`] instead, unique among their rows; a prefix
/// that still names several is answered with the candidates.
pub(crate) fn short(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}
