//! Stopping turns (`stop`, `steer`): a `turn.cancel` is recorded in the store by whichever
//! runner's watcher hears it, and stops the attempt at once when it runs here. The
//! watcher's consumer is shared by the runners, as `runner-watch` is, so one runner hears
//! each cancel; the one that holds the attempt finds the record within a couple of seconds
//! (it looks while the CLI runs), and one that has not started it yet does not start it.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{Bus, Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError};
use gatehouse_events::{Envelope, Event};
use gatehouse_store::{Store, TurnKey, Tx};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Turns, key};
use crate::running::Running;

/// The durable consumer of `turn.cancel`.
const CANCELS: &str = "runner-turn-cancels";
/// How often a running attempt looks for a cancel recorded by another runner.
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// Watches `turn.cancel` until `stop`.
pub(super) fn watch_cancels(
    turns: &Turns,
    bus: Arc<dyn Bus>,
    stop: CancellationToken,
) -> JoinHandle<()> {
    let consumer = Consumer::new(
        bus,
        turns.runner.store.clone(),
        ConsumerOptions::new(ConsumerSpec::new(CANCELS, "turn.cancel")),
    );
    let watcher = Watcher(turns.running.clone());
    tokio::spawn(async move { consumer.run(&watcher, stop).await })
}

/// Records cancels, and stops the attempts of `Running` that they name.
struct Watcher(Running<TurnKey>);

#[async_trait]
impl Handler for Watcher {
    async fn handle(&self, tx: &mut Tx, envelope: &Envelope) -> Result<(), HandlerError> {
        if let Ok(Event::TurnCancel(cancel)) = envelope.decode() {
            tx.record_turn_cancel(key(cancel.conversation_id, cancel.seq, cancel.attempt))
                .await?;
        }
        Ok(())
    }

    /// Once recorded: stops the attempt if it runs here.
    async fn committed(&self, envelope: &Envelope) {
        let Ok(Event::TurnCancel(cancel)) = envelope.decode() else {
            return;
        };
        let key = key(cancel.conversation_id, cancel.seq, cancel.attempt);
        self.0.stop_where(
            |running| *running == key,
            |key| {
                tracing::info!(conversation = %key.conversation_id, seq = key.seq, attempt = key.attempt, "stopping a turn");
            },
        );
    }
}

/// Looks for a recorded cancel of `key` every couple of seconds and cancels `token` when
/// there is one; never returns, so it runs beside the CLI.
pub(super) async fn look_for_cancel(
    store: &Store,
    key: TurnKey,
    token: &CancellationToken,
) -> Infallible {
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        if token.is_cancelled() {
            continue;
        }
        match store.turn_cancelled(key).await {
            Ok(true) => token.cancel(),
            Ok(false) => {}
            Err(err) => tracing::debug!(error = %err, "looking for a turn's cancel failed"),
        }
    }
}
