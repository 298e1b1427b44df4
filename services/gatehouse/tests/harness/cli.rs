//! What the CLI verbs of [`super::Up`] and [`super::Deployment`] share: reading a `--json`
//! answer and waiting for a run's status.

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a run may take to reach a status on a loaded test machine.
const STATUS_WITHIN: Duration = Duration::from_secs(30);

/// The JSON a CLI verb (`args`) printed; panics with its error when it failed.
pub(super) fn json(args: &[&str], out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Polls `show` (a `run show --json`) until the run has `status`; what it showed then.
pub(super) fn wait_status(run: &str, status: &str, show: impl Fn() -> Value) -> Value {
    let start = Instant::now();
    while start.elapsed() < STATUS_WITHIN {
        let shown = show();
        if shown["status"] == status {
            return shown;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("run {run} never became {status}: {:#}", show());
}
