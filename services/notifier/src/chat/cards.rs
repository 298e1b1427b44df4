//! Wanted chat messages for a run, computed from its stored state: a card per waiting gate
//! attempt and place, the outcome on cards whose attempt stopped waiting, and progress in
//! the requirement's thread. Written in the consumer's transaction, posted by the poster.

use std::collections::HashSet;
use std::path::Path;

use gatehouse_blobs::Digest;
use gatehouse_chat::{Body, Card, Output};
use gatehouse_engine::{RunState, gate_in_force};
use gatehouse_events::{NodeStatus, RequirementSource, RunUpdated};
use gatehouse_sop::Sop;
use gatehouse_store::{ArtifactRow, RequirementRow, RunRow, Tx, WantChat};

use super::progress::progress;
use super::targets::Place;
use crate::{Notifier, RunNotes};
use gatehouse_bus::HandlerError;

/// Outputs shown on a card, newest first.
const MAX_OUTPUTS: usize = 5;
/// Bytes read from an artifact for its excerpt.
const EXCERPT_BYTES: usize = 600;
/// Lines of excerpt shown.
const EXCERPT_LINES: usize = 8;
/// Artifacts larger than this get no excerpt (the blob store reads them whole).
const EXCERPT_SOURCE: u64 = 1024 * 1024;

impl Notifier {
    /// Brings the run's chat messages up to date in `tx`. `snapshot` is the `run.updated`
    /// being handled: a gate attempt it shows waiting gets its card even when the stored
    /// run has moved past it since (the gate was decided before this notifier got to the
    /// snapshot: it was down or behind), so every gate attempt has exactly one card.
    pub(crate) async fn update_chat(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        sop: &Sop,
        state: &RunState,
        requirement: Option<&RequirementRow>,
        snapshot: &RunUpdated,
    ) -> Result<(), HandlerError> {
        let source: Option<RequirementSource> =
            requirement.and_then(|r| serde_json::from_str(&r.source).ok());
        let thread = source.as_ref().and_then(|s| self.chat.thread_of(s));
        let run_url = self.run_url(run.id);
        let mut outputs = None;
        // Keys of the run's chat messages, read once a missed attempt needs them.
        let mut existing: Option<HashSet<String>> = None;
        for def in &sop.nodes {
            // The gate in force now, which a missed attempt is carded with too: a deliver
            // node approved since answers nothing, has no gate in force, and so no card.
            let Some(n) = state.nodes.get(&def.id) else {
                continue;
            };
            let Some(gate) = gate_in_force(def, n) else {
                continue;
            };
            let waiting = (n.status == NodeStatus::WaitingApproval).then_some(n.attempt);
            let missed = snapshot
                .nodes
                .iter()
                .find(|s| s.node == def.id && s.status == NodeStatus::WaitingApproval)
                .map(|s| s.attempt)
                .filter(|attempt| waiting != Some(*attempt));
            let attempts = waiting
                .map(|a| (a, false))
                .into_iter()
                .chain(missed.map(|a| (a, true)));
            for (attempt, missed) in attempts {
                if outputs.is_none() {
                    outputs = Some(self.outputs(run).await?);
                }
                let gate_state = n.gate.as_ref().filter(|_| n.attempt == attempt);
                let rework_left = gate_state.is_none_or(|g| g.sent_back < gate.max_rework);
                let card = Card {
                    run: run.id,
                    sop: sop.name.clone(),
                    node: def.id.clone(),
                    attempt,
                    requirement: requirement.map(|r| r.title.clone()),
                    requirement_url: requirement.and_then(|r| r.url.clone()),
                    // The gate's node on the run page: its evidence and the decision.
                    run_url: run_url.as_ref().map(|url| format!("{url}#node-{}", def.id)),
                    outputs: outputs.clone().unwrap_or_default(),
                    approvers: gate.approvers.clone(),
                    min_approvals: gate.min_approvals,
                    approvals: gate_state.map(|g| g.approvals.clone()).unwrap_or_default(),
                    send_back: if rework_left {
                        gate.send_back.clone()
                    } else {
                        Vec::new()
                    },
                    outcome: None,
                    raise: n
                        .budget_ask()
                        .filter(|_| n.attempt == attempt)
                        .map(str::to_owned),
                    feedback: n.feedback_ask().filter(|_| n.attempt == attempt),
                };
                let body = serde_json::to_string(&Body::Card(Box::new(card)))?;
                for place in self.chat.card_places(&gate.channels, thread.as_ref()) {
                    let key = format!("card:{}/{}/{}:{}", run.id, def.id, attempt, place.key());
                    if missed {
                        if existing.is_none() {
                            let rows = tx.chat_messages_of_run(run.id).await?;
                            existing = Some(rows.into_iter().map(|m| m.key).collect());
                        }
                        // Carded already (this is a late or repeated snapshot): leave it be.
                        if existing.as_ref().is_some_and(|keys| keys.contains(&key)) {
                            continue;
                        }
                    }
                    // A missed attempt's card shows its outcome at once: `settle_cards`
                    // fills it in below, before anything is posted.
                    want(tx, &key, &place, Some(run), &body).await?;
                }
            }
        }
        self.settle_cards(tx, run, state).await?;
        if let Some(place) = &thread {
            // Read only for a thread: only a chat requirement has one, and only a GitHub
            // one a status comment, so a run's notes are read once either way.
            let notes = RunNotes::read(&self.store, run).await?;
            let body =
                serde_json::to_string(&Body::Progress(progress(run, sop, state, run_url, &notes)))?;
            let key = format!("progress:{}:{}", run.id, place.key());
            want(tx, &key, place, Some(run), &body).await?;
        }
        Ok(())
    }

    /// Shows the outcome on every card of an attempt that no longer waits; the buttons go.
    async fn settle_cards(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        state: &RunState,
    ) -> Result<(), HandlerError> {
        let mut decisions = None;
        for row in tx.chat_messages_of_run(run.id).await? {
            let Ok(Body::Card(mut card)) = serde_json::from_str::<Body>(&row.body) else {
                continue;
            };
            let waiting = state.nodes.get(&card.node).is_some_and(|n| {
                n.status == NodeStatus::WaitingApproval && n.attempt == card.attempt
            });
            if waiting || card.outcome.is_some() {
                continue;
            }
            if decisions.is_none() {
                decisions = Some(self.store.decisions(run.id).await?);
            }
            let decisions = decisions.as_deref().unwrap_or_default();
            card.outcome = Some(super::outcome::outcome(&card, run, state, decisions));
            let body = serde_json::to_string(&Body::Card(card))?;
            let place = Place {
                platform: if row.platform == "discord" {
                    "discord"
                } else {
                    "slack"
                },
                channel: row.channel.clone(),
                thread: row.thread.clone(),
            };
            want(tx, &row.key, &place, Some(run), &body).await?;
        }
        Ok(())
    }

    /// The run's outputs so far: the newest attempt of each artifact, newest first, with
    /// an excerpt of text files.
    async fn outputs(&self, run: &RunRow) -> Result<Vec<Output>, HandlerError> {
        let mut artifacts: Vec<ArtifactRow> = self.store.artifacts(run.id).await?;
        // Only the newest attempt of each (node, name) is what is under review.
        artifacts.sort_by(|a, b| (&a.node, &a.name, b.attempt).cmp(&(&b.node, &b.name, a.attempt)));
        artifacts.dedup_by(|a, b| a.node == b.node && a.name == b.name);
        artifacts.truncate(MAX_OUTPUTS);
        let mut outputs = Vec::with_capacity(artifacts.len());
        for a in artifacts {
            let excerpt = match self.blob_of(&a).await {
                Some(bytes) => excerpt(&bytes),
                None => self
                    .data_dir
                    .as_deref()
                    .and_then(|dir| from_data_dir(dir, &a.location))
                    .and_then(|bytes| excerpt(&bytes)),
            };
            outputs.push(Output {
                excerpt,
                name: format!("{}/{}", a.node, a.name),
                size: u64::try_from(a.size).unwrap_or_default(),
            });
        }
        Ok(outputs)
    }

    /// An artifact's contents from the blob store, when it is there and small enough to
    /// excerpt (the store checks it against its digest).
    async fn blob_of(&self, artifact: &ArtifactRow) -> Option<Vec<u8>> {
        let digest: Digest = artifact.sha256.parse().ok()?;
        match self
            .blobs
            .as_ref()?
            .get_bytes(&digest, EXCERPT_SOURCE)
            .await
        {
            Ok(bytes) => Some(bytes.to_vec()),
            Err(err) => {
                tracing::debug!(error = %err, "no excerpt from the blob store");
                None
            }
        }
    }
}

async fn want(
    tx: &mut Tx,
    key: &str,
    place: &Place,
    run: Option<&RunRow>,
    body: &str,
) -> Result<(), HandlerError> {
    tx.want_chat_message(&WantChat {
        key,
        platform: place.platform,
        channel: &place.channel,
        thread: place.thread.as_deref(),
        recipient: None,
        run_id: run.map(|r| r.id),
        body,
    })
    .await?;
    Ok(())
}

/// The start of an artifact recorded before the blob store, at `location` under the data
/// directory the runners shared then. A node wrote it, so it is read as untrusted: no link
/// followed, regular files only, never more than the excerpt's bytes.
fn from_data_dir(data_dir: &Path, location: &str) -> Option<Vec<u8>> {
    gatehouse_sandbox::untrusted::open(data_dir, location)
        .ok()?
        .read_start(EXCERPT_BYTES as u64)
        .ok()
}

/// The first lines of an artifact; none for binary files.
fn excerpt(bytes: &[u8]) -> Option<String> {
    let bytes = &bytes[..bytes.len().min(EXCERPT_BYTES)];
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        // Cut inside a character at the read limit: keep what is whole.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    if text.contains('\0') {
        return None;
    }
    let lines: Vec<&str> = text.lines().take(EXCERPT_LINES).collect();
    Some(lines.join("\n")).filter(|e| !e.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An excerpt from the data directory, as cards read artifacts from before the blob
    /// store.
    fn excerpt_at(dir: &Path, location: &str) -> Option<String> {
        from_data_dir(dir, location).and_then(|bytes| excerpt(&bytes))
    }

    #[test]
    fn excerpts_are_the_first_lines_of_text_files() {
        let lines: Vec<String> = (1..=20).map(|i| format!("line {i}")).collect();
        assert_eq!(
            excerpt(lines.join("\n").as_bytes())
                .unwrap()
                .lines()
                .count(),
            EXCERPT_LINES
        );
        assert_eq!(excerpt(&[0u8, 159, 146, 150]), None);
        let mut long = "a".repeat(EXCERPT_BYTES - 1);
        long.push('é');
        long.push_str(&"b".repeat(5000));
        assert_eq!(excerpt(long.as_bytes()).unwrap().len(), EXCERPT_BYTES - 1);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(excerpt_at(dir.path(), "missing"), None);
    }

    /// A stored artifact a node later replaced with a link (the process sandbox can), or
    /// one under a linked directory, shows no excerpt: the card never carries a host file.
    #[test]
    fn excerpts_never_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "host secret").unwrap();
        let artifacts = dir.path().join("runs/r/artifacts/n/1");
        std::fs::create_dir_all(&artifacts).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), artifacts.join("a.md"))
            .unwrap();
        assert_eq!(excerpt_at(dir.path(), "runs/r/artifacts/n/1/a.md"), None);
        std::os::unix::fs::symlink("/proc/self/environ", artifacts.join("env.md")).unwrap();
        assert_eq!(excerpt_at(dir.path(), "runs/r/artifacts/n/1/env.md"), None);
        std::fs::create_dir_all(dir.path().join("runs/r/artifacts/m")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("runs/r/artifacts/m/1"))
            .unwrap();
        assert_eq!(
            excerpt_at(dir.path(), "runs/r/artifacts/m/1/secret.txt"),
            None
        );
        // A FIFO does not hold the notifier up.
        let fifo = artifacts.join("pipe.md");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(excerpt_at(dir.path(), "runs/r/artifacts/n/1/pipe.md"), None);
    }
}
