//! A transaction on either backend.

use sqlx::{Postgres, Sqlite, Transaction};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use crate::job_takers::Handed;
use crate::outbox::Written;
use crate::publish::Held;
use crate::wakes::Woken;
use crate::{Store, StoreError};

/// Runs `$body` with `$conn` bound to the transaction's connection, once per backend.
macro_rules! with_tx {
    ($tx:expr, $conn:ident => $body:expr) => {
        match &mut $tx.inner {
            $crate::tx::Inner::Postgres(t) => {
                let $conn = &mut **t;
                $body
            }
            $crate::tx::Inner::Sqlite(t) => {
                let $conn = &mut **t;
                $body
            }
        }
    };
}
pub(crate) use with_tx;

pub(crate) enum Inner {
    Postgres(Transaction<'static, Postgres>),
    Sqlite(Transaction<'static, Sqlite>),
}

/// A database transaction. A service writes its state change, the events it emits
/// ([`Tx::append_outbox`]) and the events it consumed ([`Tx::record_inbox`]) in one of
/// these, so either all of it happens or none.
///
/// Dropping it without [`Tx::commit`] rolls back.
pub struct Tx {
    pub(crate) inner: Inner,
    /// A chat message was wanted: the notifier is woken when this commits.
    pub(crate) wanted_chat: bool,
    /// Events appended, written when this commits: to the outbox, or in place
    /// ([`Store::publish_in_place`]).
    pub(crate) held: Vec<Held>,
    /// Topics of the events put onto the in-process bus in place: counted once this has
    /// committed.
    pub(crate) published_in_place: Vec<String>,
    /// Consumers of the in-process bus given messages, with their deliveries: woken when
    /// this commits.
    pub(crate) woken: Woken,
    /// Deliveries leased to subscriptions of this process waiting for jobs: handed to them
    /// when this commits (see `job_takers.rs`).
    pub(crate) leased_out: Vec<(mpsc::UnboundedSender<Handed>, Handed)>,
    /// SOP versions this saved: known to be stored once this commits, and not saved again.
    pub(crate) saved_versions: Vec<String>,
    pub(crate) store: Store,
    /// This process's transaction slot, given back when the transaction ends (at its
    /// commit, before what follows the commit).
    _slot: OwnedSemaphorePermit,
}

impl Tx {
    pub(crate) fn postgres(
        tx: Transaction<'static, Postgres>,
        store: Store,
        slot: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            inner: Inner::Postgres(tx),
            wanted_chat: false,
            held: Vec::new(),
            published_in_place: Vec::new(),
            woken: Woken::new(),
            leased_out: Vec::new(),
            saved_versions: Vec::new(),
            store,
            _slot: slot,
        }
    }

    pub(crate) fn sqlite(
        tx: Transaction<'static, Sqlite>,
        store: Store,
        slot: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            inner: Inner::Sqlite(tx),
            wanted_chat: false,
            held: Vec::new(),
            published_in_place: Vec::new(),
            woken: Woken::new(),
            leased_out: Vec::new(),
            saved_versions: Vec::new(),
            store,
            _slot: slot,
        }
    }

    /// Writes the events held for it (to the outbox, or in place), commits, then hands
    /// the outbox rows to this process's relay, or wakes it to claim them (or wakes the
    /// in-process bus's consumers, for events published in place).
    pub async fn commit(mut self) -> Result<(), StoreError> {
        let written = if self.held.is_empty() {
            Written::Nothing
        } else if self.store.publishes_in_place() {
            self.publish_held().await?;
            Written::Nothing
        } else {
            self.write_outbox().await?
        };
        match self.inner {
            Inner::Postgres(t) => t.commit().await?,
            Inner::Sqlite(t) => t.commit().await?,
        }
        // Committed: the slot goes before anything that follows writes. A give-back below
        // (rows a relay did not take, a job whose runner went away) takes a turn to write,
        // which on SQLite is this slot.
        drop(self._slot);
        self.store.wal_written();
        if !self.saved_versions.is_empty() {
            self.store.definitions.stored(self.saved_versions);
        }
        match written {
            Written::Nothing => {}
            Written::Handed(taker, handed) => self.store.hand_over(taker, handed).await,
            Written::ForClaim => self.store.wake_relay(),
        }
        for (taker, handed) in self.leased_out {
            if let Err(refused) = taker.send(handed) {
                let handed = refused.0;
                // The subscription went away meanwhile: the job comes again at once.
                self.store
                    .give_back_jobs(&handed.consumer, vec![handed.delivery])
                    .await;
            }
        }
        for topic in self.published_in_place {
            metrics::counter!("gatehouse_events_published_total", "type" => topic).increment(1);
        }
        if !self.woken.is_empty() {
            self.store.wake_consumers(self.woken);
        }
        if self.wanted_chat {
            self.store
                .chat_wanted
                .send_modify(|n| *n = n.wrapping_add(1));
        }
        Ok(())
    }

    /// Takes the stream's lock until this transaction ends: shared for publishers,
    /// exclusive for consumer creation. SQLite needs nothing: `BEGIN IMMEDIATE` already
    /// serialises writers.
    pub(crate) async fn lock_stream(
        &mut self,
        stream: &str,
        exclusive: bool,
    ) -> Result<(), StoreError> {
        if let Inner::Postgres(t) = &mut self.inner {
            let sql = if exclusive {
                "SELECT name FROM bus_streams WHERE name = $1 FOR UPDATE"
            } else {
                "SELECT name FROM bus_streams WHERE name = $1 FOR SHARE"
            };
            sqlx::query(sql).bind(stream).execute(&mut **t).await?;
        }
        Ok(())
    }

    /// The store this transaction is on.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Rolls back explicitly (dropping does the same, without reporting errors).
    pub async fn rollback(self) -> Result<(), StoreError> {
        match self.inner {
            Inner::Postgres(t) => t.rollback().await?,
            Inner::Sqlite(t) => t.rollback().await?,
        }
        Ok(())
    }
}
