//! A transaction on either backend.

use std::future::Future;
use std::pin::Pin;

use sqlx::{Postgres, Sqlite, Transaction};
use tokio::sync::OwnedSemaphorePermit;

use gatehouse_events::Envelope;
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Pool, Store};

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

/// Something a transaction does once the database has committed it: tell whoever waits in
/// this process (a relay, a subscription, the notifier, a cache) about what it wrote.
pub(crate) enum AfterCommit {
    /// Done at once.
    Now(Box<dyn FnOnce(&Store) + Send>),
    /// Awaited before the next: a hand-over that may have to give back what it could not
    /// hand over, which writes.
    Awaited(Box<dyn FnOnce(Store) -> Awaiting + Send>),
}

/// What an [`AfterCommit::Awaited`] hook awaits.
pub(crate) type Awaiting = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Writes a transaction's held events just before it commits: set by
/// [`Tx::append_outbox`], which knows where they go.
pub(crate) type BeforeCommit =
    for<'a> fn(&'a mut Tx) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

/// An event appended to a transaction, held until it commits: then written to the outbox
/// for a relay, or put onto the in-process bus in place (`bus/`).
pub(crate) struct Held {
    pub(crate) id: Uuid,
    pub(crate) topic: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) traceparent: Option<String>,
}

impl Held {
    pub(crate) fn new(envelope: &Envelope) -> Result<Self, StoreError> {
        Ok(Self {
            id: envelope.id,
            topic: envelope.event_type.clone(),
            payload: envelope.to_bytes()?,
            traceparent: envelope.trace.as_ref().map(ToString::to_string),
        })
    }
}

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
    /// Events appended, written when this commits: to the outbox, or in place
    /// ([`Store::publish_in_place`]).
    pub(crate) held: Vec<Held>,
    /// How the held events are written, once there are some.
    pub(crate) write_held: Option<BeforeCommit>,
    /// What to do once this has committed, in order ([`Tx::after_commit`]).
    after_commit: Vec<AfterCommit>,
    pub(crate) store: Store,
    /// This process's transaction slot, given back when the transaction ends (at its
    /// commit, before what follows the commit).
    _slot: OwnedSemaphorePermit,
}

impl Store {
    /// Starts a transaction, first waiting (in order, holding no connection) for one of
    /// this process's transaction slots. On SQLite it takes the write lock up front
    /// (`BEGIN IMMEDIATE`): a deferred transaction that reads and then writes fails at once
    /// when another writer got in between, instead of waiting for it.
    ///
    /// A task must not begin a second transaction while it holds one: on SQLite that
    /// would wait for itself.
    pub async fn begin(&self) -> Result<Tx, StoreError> {
        let slot = self
            .tx_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Database(sqlx::Error::PoolClosed))?;
        Ok(match &self.pool {
            Pool::Postgres(pool) => Tx::postgres(pool.begin().await?, self.clone(), slot),
            Pool::Sqlite(pool) => Tx::sqlite(
                pool.begin_with("BEGIN IMMEDIATE").await?,
                self.clone(),
                slot,
            ),
        })
    }
}

impl Tx {
    pub(crate) fn postgres(
        tx: Transaction<'static, Postgres>,
        store: Store,
        slot: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            inner: Inner::Postgres(tx),
            held: Vec::new(),
            write_held: None,
            after_commit: Vec::new(),
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
            held: Vec::new(),
            write_held: None,
            after_commit: Vec::new(),
            store,
            _slot: slot,
        }
    }

    /// Writes the events held for it (to the outbox, or in place), commits, then does what
    /// was to follow the commit (`Tx::after_commit`): hands the outbox rows to this
    /// process's relay or wakes it, hands jobs and wakes the in-process bus's consumers,
    /// wakes the notifier.
    pub async fn commit(mut self) -> Result<(), StoreError> {
        if let Some(write_held) = self.write_held.take() {
            write_held(&mut self).await?;
        }
        match self.inner {
            Inner::Postgres(t) => t.commit().await?,
            Inner::Sqlite(t) => t.commit().await?,
        }
        // Committed: the slot goes before anything that follows writes. A give-back below
        // (rows a relay did not take, a job whose runner went away) takes a turn to write,
        // which on SQLite is this slot.
        drop(self._slot);
        self.store.wal_written();
        for hook in self.after_commit {
            match hook {
                AfterCommit::Now(hook) => hook(&self.store),
                AfterCommit::Awaited(hook) => hook(self.store.clone()).await,
            }
        }
        Ok(())
    }

    /// Has `hook` run once this transaction has committed, after the hooks added before
    /// it; never if it rolls back.
    pub(crate) fn after_commit(&mut self, hook: impl FnOnce(&Store) + Send + 'static) {
        self.after_commit.push(AfterCommit::Now(Box::new(hook)));
    }

    /// [`Tx::after_commit`] for a hook that awaits (and may write: the transaction's slot
    /// is given back by then).
    pub(crate) fn after_commit_awaited<F, Fut>(&mut self, hook: F)
    where
        F: FnOnce(Store) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.after_commit
            .push(AfterCommit::Awaited(Box::new(move |store| {
                Box::pin(hook(store))
            })));
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
