//! The names workspaces have in the checkpoints table: a run's and a conversation's. Each
//! kind of work reads the other's by its name when a workspace is handed between them (a
//! run started in a conversation's thread, a conversation taking back a run's workspace).

use uuid::Uuid;

/// The name a run's workspace has in the checkpoints table.
pub(crate) fn run_workspace(run: Uuid) -> String {
    format!("run:{run}")
}

/// The name a conversation's workspace has in the checkpoints table.
pub(crate) fn conversation_workspace(conversation: Uuid) -> String {
    format!("conversation:{conversation}")
}
