//! SOP files changed while Gatehouse runs: looked at on an interval and, when any was
//! added, removed or edited, loaded again — new runs start on the new versions, runs
//! already started keep theirs. What changed is logged, a broken file with its errors.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_sop::{Library, Reloaded};
use tokio_util::sync::CancellationToken;

/// Reloads `library` whenever its files changed, looking every `every`, until `shutdown`.
pub(crate) async fn watch_sops(
    library: Arc<Library>,
    every: Duration,
    shutdown: CancellationToken,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let watched = library.clone();
        // Reading and parsing files blocks; keep it off the runtime's threads.
        match tokio::task::spawn_blocking(move || watched.reload_if_changed()).await {
            Ok(Some(reloaded)) => log(&reloaded),
            Ok(None) => {}
            Err(e) => tracing::error!("reloading the SOP files failed: {e}"),
        }
    }
}

/// One line for what a reload offers differently, one warning per file left out.
pub(crate) fn log(reloaded: &Reloaded) {
    if reloaded.changed_anything() {
        tracing::info!(
            added = %reloaded.added.join(","),
            changed = %reloaded.changed.join(","),
            removed = %reloaded.removed.join(","),
            "SOP files changed; new runs start on what they say now"
        );
    }
    for error in &reloaded.invalid {
        tracing::warn!("an SOP file is invalid and cannot start runs:\n{error}");
    }
}
