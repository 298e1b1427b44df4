//! The live grants, by token hash: what a request's token opens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::budget::Budget;
use crate::token::TokenHash;
use crate::usage::{Totals, UsageSink};

/// What a live grant allows, and its totals so far.
pub(crate) struct Granted {
    pub(crate) label: String,
    pub(crate) provider: String,
    pub(crate) models: Option<Vec<String>>,
    pub(crate) budget: Option<Arc<dyn Budget>>,
    pub(crate) sink: Option<Arc<dyn UsageSink>>,
    pub(crate) totals: Mutex<Totals>,
}

impl Granted {
    pub(crate) fn totals(&self) -> MutexGuard<'_, Totals> {
        self.totals.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The live grants. A revoked grant is removed at once; requests it already let through
/// finish and are still metered to it.
#[derive(Default)]
pub(crate) struct Grants {
    by_hash: Mutex<HashMap<TokenHash, Arc<Granted>>>,
}

impl Grants {
    fn map(&self) -> MutexGuard<'_, HashMap<TokenHash, Arc<Granted>>> {
        self.by_hash.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn insert(&self, hash: TokenHash, granted: Arc<Granted>) {
        self.map().insert(hash, granted);
    }

    pub(crate) fn find(&self, hash: &TokenHash) -> Option<Arc<Granted>> {
        self.map().get(hash).cloned()
    }

    pub(crate) fn revoke(&self, hash: &TokenHash) {
        self.map().remove(hash);
    }
}
