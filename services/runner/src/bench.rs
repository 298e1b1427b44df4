//! What `benches/workspace.rs` measures, reachable from outside the crate: preparing a
//! run's workspace exactly as a node's attempt does. Not an API.

use std::path::Path;

use gatehouse_events::RepositoryCheckout;

use crate::deliver::Deliverer;
use crate::deliver::checkouts;
use crate::deliver::prepare::Layout;

/// Checks `repositories` out into `run_dir/workspace` (the run's directory layout), with
/// `auto` repositories on `branch`. `Err`: the reason a node would fail with.
pub async fn prepare_workspace(
    deliverer: &Deliverer,
    run_dir: &Path,
    repositories: &[RepositoryCheckout],
    branch: &str,
) -> Result<(), String> {
    let planned = checkouts::plan(repositories, branch)?;
    let (workspace, record, scratch) = (
        run_dir.join("workspace"),
        run_dir.join("checkouts.json"),
        run_dir.join("scratch"),
    );
    let layout = Layout {
        workspace: &workspace,
        record: &record,
        scratch: &scratch,
    };
    let mut log = Vec::new();
    deliverer
        .prepare(&planned, &layout, &mut log)
        .await
        .map(drop)
}
