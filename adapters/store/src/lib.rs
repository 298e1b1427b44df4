//! Gatehouse's storage adapter.
//!
//! One [`Store`] type over either Postgres (production, replicas) or SQLite (the embedded
//! default), chosen by URL. Both run the same SQL; where the dialects differ the migrations
//! differ, not the queries. On top of the pools it provides the three tables that make
//! delivery exactly-once in effect: the [outbox](Tx::append_outbox) (events written in the
//! same transaction as the state change), the [inbox](Tx::record_inbox) (events already
//! applied by a consumer) and the [dead letters](Store::park_dead_letter); and the
//! [queue](Store::queue_publish) tables behind the in-process bus.
//!
//! The in-process bus's machinery (the queue, claims, publishing in a transaction, the
//! hand-overs and wake-ups after a commit) is the `bus` module, one door above the pools,
//! transactions and tables: they know it only through the hooks it gives a transaction.

mod attempts;
mod backend;
mod budget_raises;
mod bus;
mod chat;
mod checkpoints;
mod claims;
mod clock;
mod comment_dedup;
mod comments;
mod conversations;
mod dead_letter;
mod definitions;
mod deliveries;
mod egress;
mod error;
mod fires;
mod gate_waits;
mod hidden;
mod homes;
mod id_prefixes;
mod inbox;
mod leases;
mod people;
mod pull_feedback;
mod questions;
mod requirements;
mod runs;
mod schedules;
mod sessions;
mod sop_cache;
mod spend;
mod store;
mod text;
mod timers;
mod tokens;
mod tool_calls;
mod trees;
mod turns;
mod tx;
mod url;
mod usage;
mod wal;

pub use attempts::{ArtifactRow, AttemptEnd, AttemptRow, AttemptStatus, LogRow};
pub use backend::Backend;
pub use budget_raises::BudgetRaise;
pub use bus::{Handover, JobTaker, OutboxMessage, QueueClaim, QueueMessage, QueuedDelivery, Wake};
pub use chat::{ChatMessageRow, WantChat};
pub use checkpoints::CheckpointRow;
pub use claims::{Claim, OutcomeRow, Vote};
pub use comments::CommentRow;
pub use conversations::{Activity, ConversationRow, ConversationUpdate, NewConversation};
pub use dead_letter::{DeadLetter, NewDeadLetter};
pub use definitions::SopVersionRow;
pub use deliveries::{DeliveryFilter, DeliveryOutcome, DeliveryRow, DeliveryStatus};
pub use egress::{
    ConnectionOwner, ConnectionRow, ConnectionVerdict, MAX_CONNECTIONS_PER_ATTEMPT, MAX_HOST_BYTES,
    MAX_REASON_BYTES,
};
pub use error::StoreError;
pub use fires::{FireCounts, FireKind, FireOutcome, FireRow};
pub use gate_waits::{NodeFinish, SettledGate};
pub use homes::HomeRow;
pub use id_prefixes::{IdCandidate, IdKind};
pub use people::PersonRow;
pub use pull_feedback::{NewPullEvent, PullEventRow};
pub use questions::{
    Answer, Answered, Asked, MAX_EVIDENCE_BYTES, MAX_QUESTION_BYTES, NewQuestion, QuestionKind,
    QuestionRow, QuestionStatus, event_owner,
};
pub use requirements::{PullRequestRow, PullState, RequirementRow};
pub use runs::{DecisionRow, RunOutline, RunRow};
pub use schedules::ScheduleRow;
pub use sessions::{LoginLinkRow, OneTime, SessionRow};
pub use spend::{MAX_SPEND_TEXT, SpendAdmission, SpendLimit, SpendRow, SpendScope};
pub use store::Store;
pub use text::fit_bytes;
pub use timers::{TimerKind, TimerRow};
pub use tokens::{NewToken, TokenRow};
pub use tool_calls::ToolCallRow;
pub use trees::{DirectMergeRow, PushedBranchRow, TreeRow};
pub use turns::{
    ModelUsageTotal, NewTurnAttempt, TurnAttemptRow, TurnEnd, TurnKey, TurnStatus, TurnToolCallRow,
    TurnUsageRow,
};
pub use tx::Tx;
pub use usage::UsageRow;
