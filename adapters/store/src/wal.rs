//! SQLite's write-ahead log, checkpointed beside the writers rather than inside a commit.
//!
//! By default SQLite checkpoints in the commit that takes the log past 1,000 pages: that
//! commit copies the pages into the database file and syncs both files before it returns
//! (15 ms and more on the machine the benchmarks run on), and every writer of this
//! process waits for it, since they take turns (`Store::write_turn`). In a burst of
//! runs that was 7 % of the time to the last first step (`peers` benchmark).
//!
//! So connections are opened with automatic checkpoints off (`url.rs`), and every so many
//! writes start a passive checkpoint on a connection of its own. A passive checkpoint
//! takes no lock that writers or readers wait for: it copies what no reader still needs
//! and leaves the rest for the next one. A long log is then checkpointed once in the
//! writers' turn, so that it starts over ([`PAGES_BEFORE_RESTART`]); so is a log that grew
//! by a checkpoint's worth of writes while the last one ran (a slow disk), since the
//! length that one saw says nothing of what was written meanwhile.
//!
//! Nothing here changes what a commit promises: a committed transaction is in the log
//! either way, and a process killed mid-checkpoint leaves the log to the next one (or to
//! SQLite's recovery on open).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use sqlx::SqlitePool;

/// Writes (commits, and statements outside a transaction) between checkpoints. SQLite's
/// own default is a checkpoint per 1,000 pages of log; a commit here writes about seven.
const WRITES_PER_CHECKPOINT: u32 = 250;

/// Pages of log past which a checkpoint also takes the writers' turn. A checkpoint beside
/// them copies the log, but the log starts over only when a writer begins after a
/// checkpoint has copied all of it, which while they keep writing never happens. Taken
/// in turn, the checkpoint has a few pages left to copy, and the next writer starts the
/// log over (unless a reader still reads an old page of it, as with SQLite's own
/// checkpoints): it stays at about 20 MiB.
const PAGES_BEFORE_RESTART: i64 = 4_000;

/// Writes since the last checkpoint, whether one is under way, and whether another fell
/// due meanwhile; shared by the clones of a `Store`.
#[derive(Clone, Default)]
pub(crate) struct WalCheckpoints {
    writes: Arc<AtomicU32>,
    running: Arc<AtomicBool>,
    behind: Arc<AtomicBool>,
}

impl WalCheckpoints {
    /// Notes a write to SQLite (a commit, or a statement outside a transaction); whether
    /// a checkpoint is due, every [`WRITES_PER_CHECKPOINT`]th unless one is still
    /// running. The caller then runs it ([`WalCheckpoints::run`]) on a task of its own.
    pub(crate) fn written(&self) -> bool {
        if self.writes.fetch_add(1, Ordering::Relaxed) + 1 < WRITES_PER_CHECKPOINT {
            return false;
        }
        if self.running.swap(true, Ordering::AcqRel) {
            self.behind.store(true, Ordering::Relaxed);
            return false;
        }
        self.writes.store(0, Ordering::Relaxed);
        true
    }

    /// Runs the checkpoint that is due, on a connection of its own; a long log, or one
    /// written on while it ran as much as between two checkpoints, is checkpointed again
    /// once `turn` (the writers' turn) is had.
    pub(crate) async fn run<T>(&self, pool: &SqlitePool, turn: impl Future<Output = T>) {
        self.behind.store(false, Ordering::Relaxed);
        let log = checkpoint(pool, false).await;
        let behind = self.behind.swap(false, Ordering::Relaxed);
        if log.is_some_and(|pages| pages >= PAGES_BEFORE_RESTART || behind) {
            let _turn = turn.await;
            checkpoint(pool, true).await;
        }
        self.running.store(false, Ordering::Release);
    }
}

/// Runs a passive checkpoint (it waits for no reader or writer); the pages the log held,
/// or `None` when it failed (a closed store, or a database gone with its test: the next
/// checkpoint, or SQLite on the next open, takes up what is left).
async fn checkpoint(pool: &SqlitePool, in_turn: bool) -> Option<i64> {
    match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(pool)
        .await
    {
        Ok((busy, log, copied)) => {
            tracing::trace!(in_turn, busy, log, copied, "checkpointed the WAL");
            Some(log)
        }
        Err(e) => {
            tracing::debug!(in_turn, error = %e, "the WAL checkpoint failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_falls_due_every_so_many_writes_and_one_at_a_time() {
        let wal = WalCheckpoints::default();
        let due = |n| (0..n).filter(|_| wal.written()).count();
        assert_eq!(due(WRITES_PER_CHECKPOINT - 1), 0);
        assert_eq!(due(1), 1, "the 250th write starts one");
        // It is still running: as many writes again are not a second one, but mark the
        // log as written on meanwhile.
        assert_eq!(due(WRITES_PER_CHECKPOINT), 0);
        assert!(wal.behind.load(Ordering::Relaxed));
        wal.running.store(false, Ordering::Release);
        assert_eq!(due(1), 1, "the next write after it ends starts the next");
    }
}
