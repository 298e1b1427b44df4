use gatehouse_sop::SopError;
use gatehouse_store::StoreError;
use thiserror::Error;
use uuid::Uuid;

/// Why the scheduler could not apply an event (it is retried).
#[derive(Debug, Error)]
pub enum SchedulerError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored run or SOP version does not decode, or the two disagree.
    #[error("run {run}: {message}")]
    Corrupt {
        run: Uuid,
        /// What is wrong.
        message: String,
    },
    /// A stored conversation does not decode, or changed under the scheduler.
    #[error("conversation {id}: {message}")]
    Conversation {
        id: Uuid,
        /// What is wrong.
        message: String,
    },
    /// A frozen SOP version no longer parses.
    #[error(transparent)]
    Sop(#[from] SopError),
    /// An event could not be built.
    #[error(transparent)]
    Event(#[from] gatehouse_events::EventError),
}
