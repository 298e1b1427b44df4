//! Claims on gate decisions: the compare-and-set that makes two simultaneous clicks (or a
//! click and a comment, or two replicas) settle a gate attempt once, and tells the loser
//! who won. The scheduler's engine still checks every decision; claims only decide who
//! gets there first.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::tx::{Tx, with_tx};

/// The decision that settled a gate attempt.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OutcomeRow {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: i32,
    /// `approve`, `reject` or `send_back`.
    pub decision: String,
    /// Send-back target.
    pub target: Option<String>,
    /// Who settled it (for approvals: the person whose approval completed the count).
    pub decided_by: String,
    /// Where from (`slack`, `api`, ...).
    pub channel: String,
    pub decided_at: DateTime<Utc>,
}

/// One person's decision on one gate attempt, to claim.
#[derive(Debug, Clone)]
pub struct Vote<'a> {
    pub run_id: Uuid,
    pub node: &'a str,
    pub attempt: u32,
    pub person: &'a str,
    /// `approve`, `reject` or `send_back`.
    pub decision: &'a str,
    /// Send-back target.
    pub target: Option<&'a str>,
    /// Where from.
    pub channel: &'a str,
    /// Approvals the gate needs.
    pub min_approvals: u32,
}

impl Vote<'_> {
    /// The attempt as the tables keep it.
    fn stored_attempt(&self) -> i32 {
        i32::try_from(self.attempt).unwrap_or(i32::MAX)
    }
}

/// What claiming a vote came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// An approval counted towards `min_approvals`; the gate still waits for more.
    Counted,
    /// This vote settles the attempt.
    Settled,
    /// This person already decided on this attempt.
    AlreadyVoted,
    /// Someone settled the attempt first.
    AlreadySettled(OutcomeRow),
}

const COLUMNS: &str = "run_id, node, attempt, decision, target, decided_by, channel, decided_at";

impl Tx {
    /// Claims `vote`. Anything but [`Claim::Counted`] or [`Claim::Settled`] must not be
    /// acted on; such a claim leaves nothing behind in the transaction. On Postgres a concurrent claim of
    /// the same attempt waits for this transaction on the outcome's primary key, so exactly
    /// one settles it.
    ///
    /// A vote that settles the attempt by itself (a rejection, a send-back, or an approval
    /// where one is enough: most votes) claims the outcome first and is recorded after, two
    /// statements; an approval that may only count reads the count between.
    pub async fn claim_decision(&mut self, vote: &Vote<'_>) -> Result<Claim, StoreError> {
        let now = Utc::now();
        if vote.decision != "approve" || vote.min_approvals <= 1 {
            if !self.settle(vote, now).await? {
                return self.lost(vote).await;
            }
            if !self.record_vote(vote, now).await? {
                // Decided before without settling it (an approval that counted): this one
                // does not settle it either, and leaves nothing behind.
                self.unsettle(vote).await?;
                return Ok(Claim::AlreadyVoted);
            }
            return Ok(Claim::Settled);
        }
        if let Some(outcome) = self.outcome(vote.run_id, vote.node, vote.attempt).await? {
            return Ok(Claim::AlreadySettled(outcome));
        }
        if !self.record_vote(vote, now).await? {
            return Ok(Claim::AlreadyVoted);
        }
        if self.approvals(vote).await? < i64::from(vote.min_approvals) {
            return Ok(Claim::Counted);
        }
        if self.settle(vote, now).await? {
            return Ok(Claim::Settled);
        }
        // The loser's vote does not count: the caller may still commit other work.
        self.unvote(vote).await?;
        self.lost(vote).await
    }

    /// Who settled the attempt, for a vote that found it settled.
    async fn lost(&mut self, vote: &Vote<'_>) -> Result<Claim, StoreError> {
        match self.outcome(vote.run_id, vote.node, vote.attempt).await? {
            Some(outcome) => Ok(Claim::AlreadySettled(outcome)),
            // Only a concurrent claim that committed can make the insert do nothing.
            None => Err(StoreError::Database(sqlx::Error::RowNotFound)),
        }
    }

    /// Records `vote`; `false`: its person had decided on this attempt already.
    async fn record_vote(
        &mut self,
        vote: &Vote<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let attempt = vote.stored_attempt();
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO gate_votes (run_id, node, attempt, person, decision, channel, decided_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            )
            .bind(vote.run_id)
            .bind(vote.node)
            .bind(attempt)
            .bind(vote.person)
            .bind(vote.decision)
            .bind(vote.channel)
            .bind(now)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Approvals recorded for the vote's attempt, this one included.
    async fn approvals(&mut self, vote: &Vote<'_>) -> Result<i64, StoreError> {
        let attempt = vote.stored_attempt();
        Ok(with_tx!(self, conn => {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM gate_votes
                 WHERE run_id = $1 AND node = $2 AND attempt = $3 AND decision = 'approve'",
            )
            .bind(vote.run_id)
            .bind(vote.node)
            .bind(attempt)
            .fetch_one(conn)
            .await?
        }))
    }

    /// Settles the attempt by `vote`; `false`: it was settled already. On Postgres a
    /// concurrent settling waits here for the first to commit or roll back.
    async fn settle(&mut self, vote: &Vote<'_>, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let attempt = vote.stored_attempt();
        let settled = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO gate_outcomes (run_id, node, attempt, decision, target, decided_by,
                   channel, decided_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
            )
            .bind(vote.run_id)
            .bind(vote.node)
            .bind(attempt)
            .bind(vote.decision)
            .bind(vote.target)
            .bind(vote.person)
            .bind(vote.channel)
            .bind(now)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(settled == 1)
    }

    /// Takes back the outcome [`Tx::settle`] wrote in this transaction.
    async fn unsettle(&mut self, vote: &Vote<'_>) -> Result<(), StoreError> {
        let attempt = vote.stored_attempt();
        with_tx!(self, conn => {
            sqlx::query("DELETE FROM gate_outcomes WHERE run_id = $1 AND node = $2 AND attempt = $3")
                .bind(vote.run_id)
                .bind(vote.node)
                .bind(attempt)
                .execute(conn)
                .await?;
        });
        Ok(())
    }

    /// Takes back the vote [`Tx::record_vote`] wrote in this transaction.
    async fn unvote(&mut self, vote: &Vote<'_>) -> Result<(), StoreError> {
        let attempt = vote.stored_attempt();
        with_tx!(self, conn => {
            sqlx::query(
                "DELETE FROM gate_votes WHERE run_id = $1 AND node = $2 AND attempt = $3 AND person = $4",
            )
            .bind(vote.run_id)
            .bind(vote.node)
            .bind(attempt)
            .bind(vote.person)
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    /// How a gate attempt was settled, if it was.
    pub async fn outcome(
        &mut self,
        run_id: Uuid,
        node: &str,
        attempt: u32,
    ) -> Result<Option<OutcomeRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM gate_outcomes WHERE run_id = $1 AND node = $2 AND attempt = $3"
        );
        let attempt = i32::try_from(attempt).unwrap_or(i32::MAX);
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(run_id)
                .bind(node)
                .bind(attempt)
                .fetch_optional(conn)
                .await?
        }))
    }
}
