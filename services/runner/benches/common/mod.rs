//! What the runner's benchmarks share: their settings from the environment, git run
//! without the user's or the system's configuration, and medians.

use std::time::Duration;

/// `name` from the environment as a number, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The tests' one git helper (the fake forge's): no user or system configuration, branch
/// `main`, automatic gc off.
pub use gatehouse_fake_forge::git::git;

/// The middle of `samples`.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
