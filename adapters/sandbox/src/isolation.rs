//! Network isolation for the process sandbox: new user, network and pid namespaces, made
//! by util-linux's `unshare`, where the kernel lets this process make them. Inside, the
//! script has a loopback interface of its own (the relay brings it up) and nothing else:
//! no route out, none to the runner's loopback services. The pid namespace's first process
//! is the relay; when it ends, the kernel kills everything left in the namespace.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Where util-linux installs `unshare`; looked for by path, not through `PATH`.
const UNSHARE: [&str; 2] = ["/usr/bin/unshare", "/bin/unshare"];
/// A new user namespace mapping the runner's own user to itself (so files keep their
/// owner and tools do not believe they are root), a network namespace with only a
/// loopback, and a pid namespace (with its own `/proc`) whose first process is the
/// command. `--kill-child`: if `unshare` is killed, so is that process.
pub(crate) const FLAGS: [&str; 7] = [
    "--user",
    "--map-current-user",
    "--net",
    "--pid",
    "--fork",
    "--mount-proc",
    "--kill-child",
];
/// What a job's output says when it runs without isolation.
pub(crate) const REFUSED: &str = "no network isolation: the kernel refused user namespaces";

static UNSHARE_WORKS: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The probe's answer if it has run: `Some(None)` when namespaces do not work.
pub(crate) fn known() -> Option<Option<&'static Path>> {
    UNSHARE_WORKS.get().map(Option::as_deref)
}

/// `unshare`, when it can make the namespaces; probed once (a fork or two, blocking).
pub(crate) fn unshare() -> Option<&'static Path> {
    UNSHARE_WORKS.get_or_init(probe).as_deref()
}

/// Runs `true` the way jobs would run; the first `unshare` that manages it.
fn probe() -> Option<PathBuf> {
    let Some(unshare) = UNSHARE.iter().map(Path::new).find(|p| p.is_file()) else {
        tracing::warn!("{REFUSED} (util-linux `unshare` is not installed)");
        return None;
    };
    let probed = Command::new(unshare)
        .args(FLAGS)
        .args(["/bin/sh", "-c", "exit 0"])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match probed {
        Ok(output) if output.status.success() => Some(unshare.to_owned()),
        Ok(output) => {
            let why = String::from_utf8_lossy(&output.stderr);
            tracing::warn!("{REFUSED}: {}", why.trim());
            None
        }
        Err(e) => {
            tracing::warn!("{REFUSED}: running {} failed: {e}", unshare.display());
            None
        }
    }
}
