//! Names and labels of what the Docker sandbox creates, so a runner finds its own things
//! again (after a crash too) and never touches another's.

use std::collections::HashMap;

use crate::JobLabels;

/// Which runner made a container or volume.
pub(super) const OWNER: &str = "gatehouse.owner";
/// The run a container or volume belongs to.
pub(super) const RUN: &str = "gatehouse.run";
/// The node a container runs.
pub(super) const NODE: &str = "gatehouse.node";
/// The node attempt a container runs.
pub(super) const ATTEMPT: &str = "gatehouse.attempt";

/// The run's workspace volume on this runner: runners sharing an engine each bind their
/// own copy of a run's workspace (it follows the run between them), so the name carries
/// the owner's hash as well as the run.
pub(super) fn volume_name(owner: &str, run: &str) -> String {
    format!("gatehouse-ws-{:08x}-{}", fnv1a(owner) as u32, sanitise(run))
}

/// The node attempt's container; one name per attempt, so a stale one is recognised.
pub(super) fn container_name(job: &JobLabels) -> String {
    format!(
        "gatehouse-{}-{}-{}",
        sanitise(&job.run),
        sanitise(&job.node),
        job.attempt
    )
}

pub(super) fn volume_labels(owner: &str, run: &str) -> HashMap<String, String> {
    HashMap::from([(OWNER.into(), owner.into()), (RUN.into(), run.into())])
}

pub(super) fn container_labels(owner: &str, job: &JobLabels) -> HashMap<String, String> {
    HashMap::from([
        (OWNER.into(), owner.into()),
        (RUN.into(), job.run.clone()),
        (NODE.into(), job.node.clone()),
        (ATTEMPT.into(), job.attempt.to_string()),
    ])
}

/// The job a container ran, from its labels; `None` for one not made by a sandbox.
pub(super) fn job_labels(labels: &HashMap<String, String>) -> Option<JobLabels> {
    Some(JobLabels {
        run: labels.get(RUN)?.clone(),
        node: labels.get(NODE)?.clone(),
        attempt: labels.get(ATTEMPT)?.parse().ok()?,
    })
}

/// A filter matching what `owner` made.
pub(super) fn owner_filter(owner: &str) -> HashMap<String, Vec<String>> {
    HashMap::from([("label".into(), vec![format!("{OWNER}={owner}")])])
}

/// Fits `part` to Docker's name rules (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`). A part that had to be
/// changed gets a hash of the original, so two nodes that differ only in such characters
/// do not share a container name (removing a stale container would kill the other).
fn sanitise(part: &str) -> String {
    let clean: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean == part && !part.is_empty() {
        clean
    } else {
        format!("{clean}_{:08x}", fnv1a(part) as u32)
    }
}

/// FNV-1a: stable across builds and platforms, unlike the standard library's hasher.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(run: &str, node: &str) -> JobLabels {
        JobLabels {
            run: run.into(),
            node: node.into(),
            attempt: 2,
        }
    }

    #[test]
    fn plain_names_are_kept_and_others_made_valid_and_distinct() {
        assert_eq!(
            container_name(&labels("0190-ab", "build.all_1")),
            "gatehouse-0190-ab-build.all_1-2"
        );
        let spaced = container_name(&labels("r", "run tests"));
        let underscored = container_name(&labels("r", "run_tests"));
        assert_ne!(spaced, underscored);
        assert!(spaced.starts_with("gatehouse-r-run_tests_"), "{spaced}");
        assert!(
            spaced
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        );
        assert_eq!(
            container_name(&labels("r", "é")),
            container_name(&labels("r", "é"))
        );
        let (one, two) = (
            volume_name("/a#one", "0190-ab"),
            volume_name("/b#two", "0190-ab"),
        );
        assert!(
            one.starts_with("gatehouse-ws-") && one.ends_with("-0190-ab"),
            "{one}"
        );
        assert_ne!(
            one, two,
            "two runners on one engine never share a run's volume"
        );
        assert_eq!(
            one,
            volume_name("/a#one", "0190-ab"),
            "stable across restarts"
        );
    }

    #[test]
    fn labels_give_the_job_back() {
        let job = labels("r1", "node a");
        assert_eq!(job_labels(&container_labels("me", &job)), Some(job));
        assert_eq!(job_labels(&volume_labels("me", "r1")), None);
    }
}
