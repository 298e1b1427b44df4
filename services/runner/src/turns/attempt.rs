//! One attempt of a turn, in named steps: begun (or, found begun before, reported
//! interrupted), its role and sandbox profile looked up, the workspace and the CLI's home
//! readied ([`super::home`]: the session to resume is looked for, and a new one started
//! when it is not there), prepared ([`super::prepare`]), [run](Turns::run_cli) in the
//! sandbox with its output read as it comes, the workspace checkpointed and the home
//! saved, judged ([`super::verdict`]) and reported. A turn answering pull request
//! feedback that replied has its workspace delivered and the pull request answered
//! ([`super::deliver`]) before it is reported. A step that fails the attempt says
//! why, and nothing after it runs.

use std::path::PathBuf;
use std::time::Instant;

use gatehouse_agent::{Role, Trace, TraceParser};
use gatehouse_bus::HandlerError;
use gatehouse_events::{Envelope, TurnDispatch, TurnOutcome};
use gatehouse_sandbox::Exit;
use gatehouse_store::{ConnectionOwner, NewTurnAttempt, TurnKey};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Turns;
use super::cancel::look_for_cancel;
use super::deliver::Purpose;
use super::delivered;
use super::dirs::ConversationDirs;
use super::output::{self, Watch};
use super::prepare::Prepared;
use super::progress::{self, Ending};
use super::report::{Finish, Reporter, empty_progress};
use super::transcript;
use super::turn::Turn;
use super::verdict::{Cli, LastLines, Verdict, judge_turn};
use crate::durably::durably;
use crate::network::Reach;

/// How the CLI's run went.
struct Ran {
    verdict: Verdict,
    trace: Option<Trace>,
    /// The sandbox process's own wall time.
    cli_ms: Option<u64>,
    /// Said at the end of the progress message: a new session was started.
    note: Option<&'static str>,
}

impl Ran {
    fn failed(reason: String) -> Self {
        Self {
            verdict: Verdict::failed(reason),
            trace: None,
            cli_ms: None,
            note: None,
        }
    }
}

impl Turns {
    /// Begins the attempt and reports its start, runs it, and reports its end; or, when it
    /// was begun before, reports it interrupted. `false`: an earlier delivery of the job
    /// had reported it.
    pub(super) async fn turn(
        &self,
        envelope: &Envelope,
        job: &TurnDispatch,
        key: TurnKey,
        cancel: &CancellationToken,
    ) -> Result<bool, HandlerError> {
        let Some(turn) = Turn::of(&job.task) else {
            return Ok(true);
        };
        if self.runner.store.turn_cancelled(key).await? {
            cancel.cancel();
        }
        let report = Reporter {
            store: &self.runner.store,
            envelope,
            job,
            key,
            seq: turn.seq,
            attempt: turn.attempt,
        };
        let new = NewTurnAttempt {
            key,
            requirement_id: job.requirement_id,
            role: turn.role,
            ask: turn.ask,
        };
        if !self.runner.store.begin_turn_attempt(&new).await? {
            tracing::warn!("this attempt of the turn was begun before; reporting it interrupted");
            return report.interrupted().await;
        }
        let begun = Instant::now();
        report.started().await?;
        let mut ran = self.run_turn(job, &turn, &report, cancel, begun).await?;
        if let (Some(feedback), TurnOutcome::Replied { reply }) =
            (turn.feedback, &ran.verdict.outcome)
            && !self.runner.halted.is_cancelled()
        {
            report.progress(delivered::DELIVERING).await;
            let purpose = Purpose::Answer {
                seq: turn.seq,
                feedback,
                reply,
            };
            let delivered = self.deliver_workspace(job, &purpose, cancel, begun).await?;
            ran.verdict = delivered.verdict;
        }
        if ran.verdict.ending == Ending::Stopped && self.runner.halted.is_cancelled() {
            // Reported by the job's next delivery, which finds it begun.
            return Err(
                "the runner shut down during the turn; it will be reported interrupted".into(),
            );
        }
        let finish = Finish {
            verdict: &ran.verdict,
            trace: ran.trace.as_ref(),
            duration_ms: elapsed_ms(begun),
            cli_ms: ran.cli_ms,
            prices: &self.runner.options.prices,
            note: ran.note,
        };
        let first = report.finished(&finish).await?;
        if let (true, false, TurnOutcome::Replied { reply }) =
            (first, turn.ask, &ran.verdict.outcome)
        {
            let path = ConversationDirs::new(&self.runner.options.data_dir, job.conversation_id)
                .transcript();
            if let Err(e) = transcript::append(&path, turn.text, reply) {
                tracing::warn!(error = %e, "adding the turn to the conversation's transcript failed");
            }
        }
        Ok(first)
    }

    /// Prepares and runs the CLI, and judges how it went.
    async fn run_turn(
        &self,
        job: &TurnDispatch,
        turn: &Turn<'_>,
        report: &Reporter<'_>,
        cancel: &CancellationToken,
        begun: Instant,
    ) -> Result<Ran, HandlerError> {
        if cancel.is_cancelled() {
            return Ok(Ran {
                verdict: Verdict::stopped(),
                trace: None,
                cli_ms: None,
                note: None,
            });
        }
        let Some(role) = self.runner.options.roles.get(turn.role) else {
            let name = turn.role;
            return Ok(Ran::failed(format!(
                "the role `{name}` is not configured (add [roles.{name}])"
            )));
        };
        if turn.ask && !role.askable {
            let name = turn.role;
            return Ok(Ran::failed(format!(
                "the role `{name}` may not be asked (its configuration does not say askable = true)"
            )));
        }
        let profile_name = role.sandbox.as_deref().unwrap_or("default");
        let Some(profile) = self.runner.options.profiles.get(profile_name) else {
            return Ok(Ran::failed(format!(
                "the sandbox profile `{profile_name}` is not configured (add [sandbox.profiles.{profile_name}])"
            )));
        };
        let dirs = ConversationDirs::new(&self.runner.options.data_dir, job.conversation_id);
        let mirrors = match self.ready_workspace(job, &dirs).await? {
            Ok(mirrors) => mirrors,
            Err(reason) => return Ok(Ran::failed(reason)),
        };
        let mut profile = profile.clone();
        crate::deliver::mirrors::mount_shared(&mut profile, &mirrors);
        let profile = &profile;
        let read_only = turn.ask && role.read_only;
        // A read-only `ask` works in a home of its own, thrown away with the attempt.
        let home = if read_only {
            None
        } else {
            Some(
                self.ready_home(job.conversation_id, &dirs, role, turn.resume)
                    .await?,
            )
        };
        let lost = home.as_ref().and_then(|h| h.lost);
        let note = lost.map(progress::new_session);
        let turn = &Turn {
            resume: turn.resume.filter(|_| lost.is_none()),
            ..*turn
        };
        if let Some(note) = note {
            let text = progress::working(elapsed_ms(begun), &empty_progress());
            report.progress(&progress::noted(text, Some(note))).await;
        }
        let prepared = match self
            .prepare_turn(job, turn, role, profile, &dirs, read_only)
            .await
        {
            Ok(prepared) => prepared,
            Err(reason) => {
                remove_attempt_dir(&dirs, turn);
                return Ok(Ran::failed(reason));
            }
        };
        let (exit, read) = self
            .run_cli(&prepared, role, report, cancel, begun, note)
            .await;
        // The sandbox is gone: its tokens stop working.
        let connections = prepared.reach.as_ref().map(Reach::finish);
        let mut notices = connections
            .as_ref()
            .map(|c| c.notices())
            .unwrap_or_default();
        // Its budget's charges written, its 80 % notes said and a refusal known.
        let (budget_notes, refused) = match &prepared.reach {
            Some(reach) => (
                reach.settle_budget().await,
                reach.budget_refused().map(|r| r.message),
            ),
            None => (Vec::new(), None),
        };
        notices.extend(budget_notes);
        if let Some(connections) = &connections {
            let owner = ConnectionOwner::Turn {
                conversation_id: job.conversation_id,
                seq: i64::try_from(turn.seq).unwrap_or(i64::MAX),
            };
            let rows = connections.rows(&owner, turn.attempt);
            if !rows.is_empty() {
                let store = &self.runner.store;
                durably("recording connections", || store.record_connections(&rows)).await?;
            }
        }
        if let Some(copy) = prepared.copy {
            drop(copy);
            let label = &prepared.sandbox.labels.run;
            if let Err(err) = self.runner.sandbox.run_ended(label).await {
                tracing::warn!(error = %err, "releasing the read-only copy's sandbox resources failed");
            }
        }
        remove_attempt_dir(&dirs, turn);
        let (mut trace, last) = read?;
        if let Some(reach) = &prepared.reach {
            crate::mcp::add_decisions(&mut trace, reach.take_decisions());
        }
        // What the gateway metered, when the model was reached through it, rather than
        // what the CLI printed.
        if let Some(metered) = prepared.reach.as_ref().and_then(Reach::usage) {
            trace.usage = metered;
        }
        if !read_only && !self.runner.halted.is_cancelled() {
            self.checkpoint_conversation(job.conversation_id, &dirs)
                .await;
        }
        if let Some(home) = &home
            && !self.runner.halted.is_cancelled()
        {
            self.save_home(job.conversation_id, &dirs, turn, home).await;
        }
        let cli = Cli {
            role_name: turn.role,
            role,
            profile,
            timeout_secs: turn.timeout_secs,
        };
        // A budget that refused a request is why the turn ended, whatever the CLI said.
        let verdict = match refused {
            Some(message) => Verdict::failed(message),
            None => judge_turn(&exit, &trace, &last, &cli),
        };
        Ok(Ran {
            verdict: verdict.noting(&notices),
            cli_ms: exit
                .as_ref()
                .ok()
                .map(|e| u64::try_from(e.duration.as_millis()).unwrap_or(u64::MAX)),
            trace: Some(trace),
            note,
        })
    }

    /// Runs the prepared job until it ends or is stopped, reading its output meanwhile.
    async fn run_cli(
        &self,
        prepared: &Prepared,
        role: &Role,
        report: &Reporter<'_>,
        cancel: &CancellationToken,
        begun: Instant,
        note: Option<&'static str>,
    ) -> (
        Result<Exit, String>,
        Result<(Trace, LastLines), HandlerError>,
    ) {
        let parser = TraceParser::new(role.executor, role.model.as_deref());
        let watch = Watch::new(parser, prepared.secrets.clone(), begun).noting(note);
        let (logs, lines) = mpsc::channel(256);
        let run = async {
            tokio::select! {
                exit = self.runner.sandbox.run(&prepared.sandbox, logs, cancel.clone()) => exit,
                never = look_for_cancel(&self.runner.store, report.key, cancel) => match never {},
            }
        };
        let (exit, read) = tokio::join!(run, output::read(lines, watch, report));
        (exit.map_err(|err| format!("sandbox: {err}")), read)
    }
}

/// Milliseconds since `begun`.
fn elapsed_ms(begun: Instant) -> u64 {
    u64::try_from(begun.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The attempt's own files go once it ended; a failure to remove them is only logged.
fn remove_attempt_dir(dirs: &ConversationDirs, turn: &Turn<'_>) {
    let dir: PathBuf = dirs.attempt(turn.seq, turn.attempt);
    if let Err(e) = std::fs::remove_dir_all(&dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %dir.display(), error = %e, "removing a turn's files failed");
    }
}
