//! The attempts running on this runner, each under its key (a node's run, node and
//! attempt; a turn's conversation, seq and attempt) with the token that stops it, so a
//! cancel heard from the bus can stop them. Node jobs and turns each keep one.
//!
//! An attempt is registered before anything about it is announced, so a cancel that
//! follows cannot miss it, and its token is a child of the runner's halt, so the end of
//! the shutdown grace stops it too. It leaves the registry when its guard drops, however
//! the attempt ends.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

/// Attempts running here, by key: cheap to clone, clones share the registry.
pub(crate) struct Running<K>(Arc<Mutex<HashMap<K, CancellationToken>>>);

impl<K> Clone for Running<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K> Default for Running<K> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<K: Eq + Hash + Clone> Running<K> {
    /// Registers the attempt `key`, stopped by `stop`, until the guard drops.
    pub(crate) fn register(&self, key: K, stop: CancellationToken) -> Registered<K> {
        self.attempts().insert(key.clone(), stop);
        Registered {
            running: self.clone(),
            key,
        }
    }

    /// Stops the attempts whose key `unwanted` picks; says which it stopped through
    /// `stopped`, for the log.
    pub(crate) fn stop_where(&self, unwanted: impl Fn(&K) -> bool, stopped: impl Fn(&K)) {
        for (key, stop) in self.attempts().iter() {
            if unwanted(key) {
                stopped(key);
                stop.cancel();
            }
        }
    }

    fn attempts(&self) -> MutexGuard<'_, HashMap<K, CancellationToken>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An attempt's place in [`Running`]; dropping it takes the attempt out.
pub(crate) struct Registered<K: Eq + Hash + Clone> {
    running: Running<K>,
    key: K,
}

impl<K: Eq + Hash + Clone> Drop for Registered<K> {
    fn drop(&mut self) {
        self.running.attempts().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_is_stopped_while_registered_and_gone_once_it_ends() {
        let running = Running::default();
        let (first, second) = (CancellationToken::new(), CancellationToken::new());
        let registered = running.register(1, first.clone());
        let ended = running.register(2, second.clone());
        drop(ended);
        running.stop_where(|_| true, |_| {});
        assert!(first.is_cancelled());
        assert!(!second.is_cancelled(), "an ended attempt is not stopped");
        drop(registered);
        assert!(running.attempts().is_empty());
    }
}
