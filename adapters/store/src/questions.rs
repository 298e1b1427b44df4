//! Questions an agent asked a person while it ran: `request_approval` from Gatehouse's MCP
//! server, or a tool call its role's permissions say to `ask` about. The attempt waits in
//! the tool call while the question is open; one person's answer closes it
//! (compare-and-set on the status), and the runner hands the answer to the agent.
//!
//! A question is unique per owner (a run's node, or a conversation's turn) and text: the
//! attempt that runs again after its runner was killed asks the same thing and adopts the
//! question, its card and its answer, so a person is never asked twice.

use chrono::{DateTime, Utc};
pub use gatehouse_events::QuestionKind;
use uuid::Uuid;

use crate::egress::ConnectionOwner;
use crate::error::StoreError;
use crate::store::{Store, with_pool};
use crate::text::text_enum;
use crate::tx::{Tx, with_tx};

/// Longest question or comment kept, in bytes; the runner refuses longer ones first.
pub const MAX_QUESTION_BYTES: usize = 4000;
/// Longest evidence kept, in bytes.
pub const MAX_EVIDENCE_BYTES: usize = 16_000;

text_enum! {
    /// Where a question stands.
    pub enum QuestionStatus {
        /// Waiting for a person.
        Open = "open",
        /// A person said yes.
        Approved = "approved",
        /// A person said no (the comment says why).
        Denied = "denied",
        /// Nobody answered in time.
        Expired = "expired",
        /// The run or conversation ended while it waited.
        Withdrawn = "withdrawn",
    }
}

impl QuestionStatus {
    /// Whether the question still waits.
    pub fn is_open(self) -> bool {
        self == Self::Open
    }
}

/// A question to ask.
#[derive(Debug, Clone)]
pub struct NewQuestion<'a> {
    /// The run's node or the conversation's turn that asks.
    pub owner: &'a ConnectionOwner,
    /// The attempt asking.
    pub attempt: i32,
    /// The project it belongs to, which decides who may answer.
    pub project: Option<&'a str>,
    pub kind: QuestionKind,
    /// The question, as the agent wrote it (untrusted; bounded by the caller).
    pub question: &'a str,
    /// What the agent showed with it (untrusted; bounded by the caller).
    pub evidence: Option<&'a str>,
    /// Identifies the question within its owner: the same digest is the same question.
    pub digest: &'a str,
    pub asked_at: DateTime<Utc>,
    /// When it expires unanswered, if it does.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A stored question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionRow {
    pub id: Uuid,
    pub owner: ConnectionOwner,
    /// The attempt that asked last.
    pub attempt: i32,
    pub project: Option<String>,
    pub kind: QuestionKind,
    pub question: String,
    pub evidence: Option<String>,
    pub digest: String,
    pub status: QuestionStatus,
    /// Who answered (a `[[people]]` id), when someone did.
    pub decided_by: Option<String>,
    /// Where they answered: `slack`, `discord`, `api`, `console`.
    pub channel: Option<String>,
    /// Their comment, or why it expired or was withdrawn.
    pub comment: Option<String>,
    pub asked_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
}

/// What asking did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// A new question, now open.
    New(QuestionRow),
    /// The owner asked this before (an earlier attempt, or this one again): the stored
    /// question, adopted by the asking attempt when still open.
    Again(QuestionRow),
}

impl Asked {
    /// The question, new or old.
    pub fn row(&self) -> &QuestionRow {
        match self {
            Self::New(row) | Self::Again(row) => row,
        }
    }
}

/// An answer to record.
#[derive(Debug, Clone)]
pub struct Answer<'a> {
    /// Approved, denied, expired or withdrawn.
    pub status: QuestionStatus,
    pub decided_by: Option<&'a str>,
    pub channel: Option<&'a str>,
    pub comment: Option<&'a str>,
    pub at: DateTime<Utc>,
}

/// What answering did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// This answer closed the question.
    Closed(QuestionRow),
    /// It was closed before (the row says how and by whom); nothing changed.
    AlreadyClosed(QuestionRow),
}

#[derive(sqlx::FromRow)]
struct Stored {
    id: Uuid,
    run_id: Option<Uuid>,
    node: Option<String>,
    conversation_id: Option<Uuid>,
    seq: Option<i64>,
    attempt: i32,
    project: Option<String>,
    kind: QuestionKind,
    question: String,
    evidence: Option<String>,
    digest: String,
    status: QuestionStatus,
    decided_by: Option<String>,
    channel: Option<String>,
    comment: Option<String>,
    asked_at: DateTime<Utc>,
    expires_at: Option<DateTime<Utc>>,
    decided_at: Option<DateTime<Utc>>,
}

impl TryFrom<Stored> for QuestionRow {
    type Error = StoreError;

    fn try_from(s: Stored) -> Result<Self, StoreError> {
        let owner = match (s.run_id, s.node, s.conversation_id, s.seq) {
            (Some(run_id), Some(node), None, None) => ConnectionOwner::Node { run_id, node },
            (None, None, Some(conversation_id), Some(seq)) => ConnectionOwner::Turn {
                conversation_id,
                seq,
            },
            _ => {
                return Err(StoreError::Corrupt(format!(
                    "question {} belongs to neither one run node nor one turn",
                    s.id
                )));
            }
        };
        Ok(Self {
            id: s.id,
            owner,
            attempt: s.attempt,
            project: s.project,
            kind: s.kind,
            question: s.question,
            evidence: s.evidence,
            digest: s.digest,
            status: s.status,
            decided_by: s.decided_by,
            channel: s.channel,
            comment: s.comment,
            asked_at: s.asked_at,
            expires_at: s.expires_at,
            decided_at: s.decided_at,
        })
    }
}

const COLUMNS: &str = "id, run_id, node, conversation_id, seq, attempt, project, kind, question, \
     evidence, digest, status, decided_by, channel, comment, asked_at, expires_at, decided_at";

impl QuestionRow {
    /// Whose question it is, as events name it.
    pub fn event_owner(&self) -> gatehouse_events::QuestionOwner {
        event_owner(&self.owner)
    }
}

/// An attempt's owner as question events name it.
pub fn event_owner(owner: &ConnectionOwner) -> gatehouse_events::QuestionOwner {
    use gatehouse_events::QuestionOwner;
    match owner {
        ConnectionOwner::Node { run_id, node } => QuestionOwner::Node {
            run_id: *run_id,
            node: node.clone(),
        },
        ConnectionOwner::Turn {
            conversation_id,
            seq,
        } => QuestionOwner::Turn {
            conversation_id: *conversation_id,
            seq: *seq,
        },
    }
}

/// The text questions are unique in, per owner.
fn owner_key(owner: &ConnectionOwner) -> String {
    match owner {
        ConnectionOwner::Node { run_id, node } => format!("node:{run_id}:{node}"),
        ConnectionOwner::Turn {
            conversation_id,
            seq,
        } => format!("turn:{conversation_id}:{seq}"),
    }
}

impl Tx {
    /// Asks `question`, or finds it asked before by the same owner: an open one is then
    /// adopted by `question.attempt`, an answered one is returned as it is.
    pub async fn ask_question(&mut self, question: &NewQuestion<'_>) -> Result<Asked, StoreError> {
        let key = owner_key(question.owner);
        let (run_id, node, conversation_id, seq) = match question.owner {
            ConnectionOwner::Node { run_id, node } => {
                (Some(*run_id), Some(node.as_str()), None, None)
            }
            ConnectionOwner::Turn {
                conversation_id,
                seq,
            } => (None, None, Some(*conversation_id), Some(*seq)),
        };
        let id = Uuid::now_v7();
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO questions (id, owner_key, run_id, node, conversation_id, seq,
                     attempt, project, kind, question, evidence, digest, status, asked_at,
                     expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'open', $13, $14)
                 ON CONFLICT (owner_key, digest) DO NOTHING",
            )
            .bind(id)
            .bind(&key)
            .bind(run_id)
            .bind(node)
            .bind(conversation_id)
            .bind(seq)
            .bind(question.attempt)
            .bind(question.project)
            .bind(question.kind)
            .bind(question.question)
            .bind(question.evidence)
            .bind(question.digest)
            .bind(question.asked_at)
            .bind(question.expires_at)
            .execute(&mut *conn)
            .await?
            .rows_affected()
        });
        if inserted == 0 {
            with_tx!(self, conn => {
                sqlx::query(
                    "UPDATE questions SET attempt = $3
                     WHERE owner_key = $1 AND digest = $2 AND status = 'open' AND attempt < $3",
                )
                .bind(&key)
                .bind(question.digest)
                .bind(question.attempt)
                .execute(&mut *conn)
                .await?;
            });
        }
        let sql = format!("SELECT {COLUMNS} FROM questions WHERE owner_key = $1 AND digest = $2");
        let stored: Stored = with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(&key)
                .bind(question.digest)
                .fetch_one(&mut *conn)
                .await?
        });
        let row = QuestionRow::try_from(stored)?;
        Ok(if inserted == 1 {
            Asked::New(row)
        } else {
            Asked::Again(row)
        })
    }

    /// Closes the question with `answer` if it is still open; of two answers racing, the
    /// second finds it closed and changes nothing.
    pub async fn answer_question(
        &mut self,
        id: Uuid,
        answer: &Answer<'_>,
    ) -> Result<Option<Answered>, StoreError> {
        if answer.status.is_open() {
            return Err(StoreError::Corrupt(
                "an answer cannot leave a question open".into(),
            ));
        }
        let closed = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE questions SET status = $2, decided_by = $3, channel = $4, comment = $5,
                     decided_at = $6
                 WHERE id = $1 AND status = 'open'",
            )
            .bind(id)
            .bind(answer.status)
            .bind(answer.decided_by)
            .bind(answer.channel)
            .bind(answer.comment)
            .bind(answer.at)
            .execute(&mut *conn)
            .await?
            .rows_affected()
        });
        let sql = format!("SELECT {COLUMNS} FROM questions WHERE id = $1");
        let stored: Option<Stored> = with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?
        });
        let Some(stored) = stored else {
            return Ok(None);
        };
        let row = QuestionRow::try_from(stored)?;
        Ok(Some(if closed == 1 {
            Answered::Closed(row)
        } else {
            Answered::AlreadyClosed(row)
        }))
    }
}

impl Store {
    /// One question.
    pub async fn question(&self, id: Uuid) -> Result<Option<QuestionRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM questions WHERE id = $1");
        let stored: Option<Stored> = with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await?
        });
        stored.map(QuestionRow::try_from).transpose()
    }

    /// The questions still waiting for someone, oldest first, at most `limit`: open, not
    /// past their time (an attempt that died cannot mark its question expired), and not of
    /// a run that has ended (nothing waits on it any more).
    pub async fn open_questions(&self, limit: i64) -> Result<Vec<QuestionRow>, StoreError> {
        let columns = COLUMNS
            .split(", ")
            .map(|c| format!("q.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {columns} FROM questions q LEFT JOIN runs r ON r.id = q.run_id
             WHERE q.status = 'open' AND (q.expires_at IS NULL OR q.expires_at > $2)
               AND (r.status IS NULL OR r.status NOT IN ('succeeded', 'failed', 'cancelled'))
             ORDER BY q.asked_at, q.id LIMIT $1"
        );
        let now = chrono::Utc::now();
        let stored: Vec<Stored> = with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(limit).bind(now).fetch_all(pool).await?
        });
        stored.into_iter().map(QuestionRow::try_from).collect()
    }

    /// Every question of a run, in the order they were asked.
    pub async fn run_questions(&self, run_id: Uuid) -> Result<Vec<QuestionRow>, StoreError> {
        let sql =
            format!("SELECT {COLUMNS} FROM questions WHERE run_id = $1 ORDER BY asked_at, id");
        let stored: Vec<Stored> = with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(run_id).fetch_all(pool).await?
        });
        stored.into_iter().map(QuestionRow::try_from).collect()
    }

    /// Every question of a conversation, in the order they were asked.
    pub async fn conversation_questions(
        &self,
        conversation_id: Uuid,
    ) -> Result<Vec<QuestionRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM questions WHERE conversation_id = $1 ORDER BY asked_at, id"
        );
        let stored: Vec<Stored> = with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(conversation_id)
                .fetch_all(pool)
                .await?
        });
        stored.into_iter().map(QuestionRow::try_from).collect()
    }
}
