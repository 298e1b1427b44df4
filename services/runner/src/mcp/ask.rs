//! Asking a person: the question is stored and announced (`question.asked`, whose card the
//! notifier posts), then the attempt waits in the tool call for the answer the store
//! records, however it is given (a chat card, the console, the API). A question the same
//! node asked before — an attempt lost with its runner, then run again — is the same
//! question: its card and its answer are adopted, nobody is asked twice.

use std::time::Duration;

use gatehouse_blobs::Digest;
use gatehouse_events::{
    Envelope, Event, QuestionAnswer, QuestionAnswered, QuestionAsked, QuestionKind,
};
use gatehouse_store::{
    Answer, Answered, Asked, MAX_EVIDENCE_BYTES, MAX_QUESTION_BYTES, NewQuestion, QuestionRow,
    QuestionStatus, StoreError,
};
use tokio::time::Instant;

use super::AttemptTools;

/// How often a waiting attempt looks for the answer: a person's click reaches the agent
/// within this.
const POLL: Duration = Duration::from_millis(500);
/// Read failures in a row a waiting attempt rides out (a database restarting) before it
/// gives up the question.
const READ_FAILURES: u32 = 120;

/// How a question ended, as the agent is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) status: QuestionStatus,
    /// Who answered (a person's id), if someone did.
    pub(crate) by: Option<String>,
    /// Their comment, or why nobody answered.
    pub(crate) comment: Option<String>,
}

impl Reply {
    /// Whether the agent may go on.
    pub(crate) fn approved(&self) -> bool {
        self.status == QuestionStatus::Approved
    }

    /// The answer in words, for the agent.
    pub(crate) fn words(&self) -> String {
        let by = self.by.as_deref().unwrap_or("nobody");
        let said = |comment: &Option<String>| match comment {
            Some(c) if !c.trim().is_empty() => format!(": {c}"),
            _ => String::new(),
        };
        match self.status {
            QuestionStatus::Approved => format!("approved by {by}{}", said(&self.comment)),
            QuestionStatus::Denied => format!("denied by {by}{}", said(&self.comment)),
            QuestionStatus::Expired => format!(
                "no answer: nobody answered in time{}; treat it as denied",
                said(&self.comment)
            ),
            QuestionStatus::Withdrawn => format!("withdrawn{}", said(&self.comment)),
            QuestionStatus::Open => "still open".to_owned(),
        }
    }

    fn of(row: &QuestionRow) -> Self {
        Self {
            status: row.status,
            by: row.decided_by.clone(),
            comment: row.comment.clone(),
        }
    }
}

/// Why a question could not be asked or answered: said to the agent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AskError {
    #[error("the question is empty; say what you want a person to decide")]
    Empty,
    #[error(
        "the question is {len} bytes; keep it under {MAX_QUESTION_BYTES} and put details in `evidence`"
    )]
    QuestionTooLong { len: usize },
    #[error("the evidence is {len} bytes; at most {MAX_EVIDENCE_BYTES} are shown to people")]
    EvidenceTooLong { len: usize },
    #[error("Gatehouse could not record the question: {0}")]
    Store(#[from] StoreError),
    #[error("Gatehouse could not announce the question: {0}")]
    Event(#[from] gatehouse_events::EventError),
}

/// Asks a person and waits for the answer (or the question's deadline).
pub(crate) async fn ask(
    tools: &AttemptTools,
    kind: QuestionKind,
    question: &str,
    evidence: Option<&str>,
) -> Result<Reply, AskError> {
    let question = question.trim();
    if question.is_empty() {
        return Err(AskError::Empty);
    }
    if question.len() > MAX_QUESTION_BYTES {
        return Err(AskError::QuestionTooLong {
            len: question.len(),
        });
    }
    let evidence = evidence.map(str::trim).filter(|e| !e.is_empty());
    if let Some(evidence) = evidence
        && evidence.len() > MAX_EVIDENCE_BYTES
    {
        return Err(AskError::EvidenceTooLong {
            len: evidence.len(),
        });
    }
    let deadline = tools.question_deadline();
    let row = record(tools, kind, question, evidence, deadline).await?;
    if !row.status.is_open() {
        return Ok(Reply::of(&row));
    }
    (tools.progress)(format!(
        "waiting for a person to answer: {}",
        first_line(question)
    ));
    wait(tools, &row, deadline).await
}

/// Stores the question (or finds it asked before) and, when new, announces it in the same
/// commit.
async fn record(
    tools: &AttemptTools,
    kind: QuestionKind,
    question: &str,
    evidence: Option<&str>,
    deadline: Instant,
) -> Result<QuestionRow, AskError> {
    let digest = digest(kind, question, evidence);
    let now = chrono::Utc::now();
    let expires_at = chrono::Duration::from_std(deadline.saturating_duration_since(Instant::now()))
        .ok()
        .map(|left| now + left);
    let mut tx = tools.store.begin().await?;
    let asked = tx
        .ask_question(&NewQuestion {
            owner: &tools.owner,
            attempt: i32::try_from(tools.attempt).unwrap_or(i32::MAX),
            project: tools.project.as_deref(),
            kind,
            question,
            evidence,
            digest: digest.as_str(),
            asked_at: now,
            expires_at,
        })
        .await?;
    if let Asked::New(row) = &asked {
        let event = Event::QuestionAsked(QuestionAsked {
            question_id: row.id,
            owner: gatehouse_store::event_owner(&tools.owner),
            attempt: tools.attempt,
            kind,
            question: question.to_owned(),
            evidence: evidence.map(str::to_owned),
        });
        tx.append_outbox(&Envelope::new(super::server::SOURCE, &event, None)?)
            .await?;
    }
    tx.commit().await?;
    Ok(asked.row().clone())
}

/// Waits until the question is answered or `deadline` passes (then it expires, unless an
/// answer wins the race).
async fn wait(
    tools: &AttemptTools,
    row: &QuestionRow,
    deadline: Instant,
) -> Result<Reply, AskError> {
    let mut failures = 0;
    loop {
        match tools.store.question(row.id).await {
            Ok(Some(now)) if !now.status.is_open() => return Ok(Reply::of(&now)),
            Ok(_) => failures = 0,
            Err(error) => {
                failures += 1;
                if failures >= READ_FAILURES {
                    return Err(error.into());
                }
                tracing::warn!(%error, question = %row.id, "reading a question's answer failed; retrying");
            }
        }
        if Instant::now() >= deadline {
            return expire(tools, row).await;
        }
        tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
}

/// Closes the question as expired, unless a person answered first.
async fn expire(tools: &AttemptTools, row: &QuestionRow) -> Result<Reply, AskError> {
    let comment = "nobody answered before the question's time ran out";
    let mut tx = tools.store.begin().await?;
    let answered = tx
        .answer_question(
            row.id,
            &Answer {
                status: QuestionStatus::Expired,
                decided_by: None,
                channel: None,
                comment: Some(comment),
                at: chrono::Utc::now(),
            },
        )
        .await?;
    let now = match answered {
        Some(Answered::Closed(now)) => {
            let event = Event::QuestionAnswered(QuestionAnswered {
                question_id: now.id,
                owner: now.event_owner(),
                answer: QuestionAnswer::Expired,
                comment: Some(comment.to_owned()),
                actor: None,
            });
            tx.append_outbox(&Envelope::new(super::server::SOURCE, &event, None)?)
                .await?;
            now
        }
        Some(Answered::AlreadyClosed(now)) => now,
        None => row.clone(),
    };
    tx.commit().await?;
    Ok(Reply::of(&now))
}

/// The question's identity within its owner: the same kind, text and evidence is the same
/// question.
fn digest(kind: QuestionKind, question: &str, evidence: Option<&str>) -> Digest {
    // The kind serializes as its wire name (`approval`), as it did when this was a match.
    let text = serde_json::json!([kind, question, evidence]).to_string();
    Digest::of(text.as_bytes())
}

/// The first line of `text`, cut to a progress line's length.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}
