//! A `deliver` turn's attempt: the conversation's workspace delivered as a `deliver` node
//! delivers a run's, by the same [`Deliverer`](crate::deliver::Deliverer) — every writable
//! repository checked (its changes adding no configured secret's value), committed and
//! pushed to its work branch (the requirement's, as the workspace was checked out on it;
//! never its base or default branch), one pull request per repository opened (a draft when
//! asked) or, when one is open from that branch already, updated, each linking the
//! others — and each pull request recorded with the requirement.
//!
//! Bookkept as any turn's attempt: begun once (found begun before, it is reported
//! interrupted and never run again), reported by `turn.finished` with the reply naming the
//! pull requests, its progress message the turn's. There is no approval to hold the
//! workspace to: the person who said `deliver` in the thread decided. A workspace with no
//! changes is answered ("Nothing to deliver"), not failed.
//!
//! A stop is obeyed until the delivery starts; once git runs, the delivery is let finish
//! (it is short, and a push cut off mid-way would leave the repositories' locks behind for
//! the next one). A pull request is recorded before the attempt is reported, as the node
//! records it, so an attempt lost after GitHub opened it is finished by the next one, which
//! finds it open rather than opening another.
//!
//! A turn answering feedback on a pull request ([`Purpose::Answer`]) is delivered the
//! same way once its CLI replied, answered on the pull request by
//! [`Deliverer::answer`](crate::deliver::Deliverer::answer); its reply names the pull
//! request it updated, or says nothing changed.

use std::time::Instant;

use gatehouse_bus::HandlerError;
use gatehouse_events::{DeliverMode, DeliverSpec, Envelope, Feedback, TurnDispatch, TurnOutcome};
use gatehouse_store::{NewTurnAttempt, TurnKey, TurnStatus};
use tokio_util::sync::CancellationToken;

use super::Turns;
use super::delivered::{self, Ended};
use super::dirs::ConversationDirs;
use super::progress::Ending;
use super::report::{Finish, Reporter};
use super::verdict::Verdict;
use crate::deliver::answer::{Answer, Answered};
use crate::deliver::checkouts;
use crate::deliver::{By, Delivered, DeliveredTo, Deliveries, Delivery, Subject};
use crate::delivering::NOT_CONFIGURED;
use crate::durably::durably;
use crate::scope::Requirement;

/// The role a delivery's attempt is recorded under.
const ROLE: &str = "deliver";

/// The delivery a job asks for.
pub(crate) struct Delivering {
    pub seq: u64,
    pub attempt: u32,
    /// Pull requests it opens are drafts.
    pub draft: bool,
}

/// What a delivery of the conversation's workspace is for.
pub(super) enum Purpose<'a> {
    /// `deliver [draft]` said in the thread.
    Deliver { draft: bool },
    /// A turn answering feedback on a pull request, once its CLI replied `reply`.
    Answer {
        seq: u64,
        feedback: &'a Feedback,
        reply: &'a str,
    },
}

/// How the delivery went: what to report, and what the progress message says.
pub(super) struct Outcome {
    pub verdict: Verdict,
    pub message: String,
}

impl Outcome {
    fn failed(reason: String, elapsed_ms: u64) -> Self {
        Self {
            verdict: Verdict::failed(reason),
            message: delivered::ended(&Ended::Failed, elapsed_ms),
        }
    }

    fn stopped(elapsed_ms: u64) -> Self {
        Self {
            verdict: Verdict::stopped(),
            message: delivered::ended(&Ended::Stopped, elapsed_ms),
        }
    }

    fn replied(reply: String, message: String) -> Self {
        Self {
            verdict: Verdict {
                outcome: TurnOutcome::Replied { reply },
                status: TurnStatus::Replied,
                ending: Ending::Done,
            },
            message,
        }
    }
}

impl Turns {
    /// Begins the delivery's attempt and reports its start, delivers, and reports its end;
    /// or, when it was begun before, reports it interrupted. `false`: an earlier delivery
    /// of the job had reported it.
    pub(super) async fn deliver_turn(
        &self,
        envelope: &Envelope,
        job: &TurnDispatch,
        key: TurnKey,
        delivering: &Delivering,
        cancel: &CancellationToken,
    ) -> Result<bool, HandlerError> {
        if self.runner.store.turn_cancelled(key).await? {
            cancel.cancel();
        }
        let report = Reporter {
            store: &self.runner.store,
            envelope,
            job,
            key,
            seq: delivering.seq,
            attempt: delivering.attempt,
        };
        let new = NewTurnAttempt {
            key,
            requirement_id: job.requirement_id,
            role: ROLE,
            ask: false,
        };
        if !self.runner.store.begin_turn_attempt(&new).await? {
            tracing::warn!(
                "this attempt of the delivery was begun before; reporting it interrupted"
            );
            return report.interrupted().await;
        }
        let begun = Instant::now();
        report.started_saying(delivered::DELIVERING).await?;
        let purpose = Purpose::Deliver {
            draft: delivering.draft,
        };
        let outcome = self.deliver_workspace(job, &purpose, cancel, begun).await?;
        if outcome.verdict.ending == Ending::Stopped && self.runner.halted.is_cancelled() {
            // Reported by the job's next delivery, which finds it begun.
            return Err(
                "the runner shut down before the delivery; it will be reported interrupted".into(),
            );
        }
        let finish = Finish {
            verdict: &outcome.verdict,
            trace: None,
            duration_ms: elapsed_ms(begun),
            cli_ms: None,
            prices: &self.runner.options.prices,
            note: None,
        };
        report.finished_saying(&finish, &outcome.message).await
    }

    /// Delivers the workspace (readied first: restored from its checkpoint when it was
    /// released) and records its pull requests and their heads; checkpoints it after, as
    /// git changed it. Answering feedback, the pull request is answered too.
    pub(super) async fn deliver_workspace(
        &self,
        job: &TurnDispatch,
        purpose: &Purpose<'_>,
        cancel: &CancellationToken,
        begun: Instant,
    ) -> Result<Outcome, HandlerError> {
        let failed = |reason: String| Outcome::failed(reason, elapsed_ms(begun));
        if cancel.is_cancelled() {
            return Ok(Outcome::stopped(elapsed_ms(begun)));
        }
        let Some(deliverer) = self.runner.options.delivery.clone() else {
            return Ok(failed(NOT_CONFIGURED.to_owned()));
        };
        if job.workspace.repositories.is_empty() {
            return Ok(failed(
                "deliver needs repositories: the conversation's project has none".to_owned(),
            ));
        }
        let dirs = ConversationDirs::new(&self.runner.options.data_dir, job.conversation_id);
        let _mirrors = match self.ready_workspace(job, &dirs).await? {
            Ok(mirrors) => mirrors,
            Err(reason) => return Ok(failed(reason)),
        };
        let planned = match self.conversation_plan(job).await? {
            Ok(planned) => planned,
            Err(reason) => return Ok(failed(reason)),
        };
        let checkouts = match checkouts::load(&dirs.checkouts(), &planned) {
            Ok(Some(checkouts)) => checkouts,
            Ok(None) => {
                return Ok(failed(
                    "the conversation's workspace was never prepared; nothing to deliver"
                        .to_owned(),
                ));
            }
            Err(reason) => return Ok(failed(reason)),
        };
        let requirement = self
            .runner
            .store
            .requirement(job.requirement_id)
            .await?
            .map(Requirement::from_row);
        let fallback = format!("Gatehouse conversation {}", job.conversation_id);
        let subject = Subject {
            by: By::Conversation(job.conversation_id),
            title: requirement.as_ref().map_or(&fallback, |r| &r.title),
            issue: requirement
                .as_ref()
                .and_then(|r| r.issue.as_ref())
                .map(|(repo, n)| (repo.as_str(), *n)),
        };
        let known = self.known_pulls(job).await?;
        if cancel.is_cancelled() {
            return Ok(Outcome::stopped(elapsed_ms(begun)));
        }
        let (draft, answer) = match purpose {
            Purpose::Deliver { draft } => (*draft, None),
            Purpose::Answer { feedback, .. } => (false, Some((*feedback).clone())),
        };
        let spec = DeliverSpec {
            mode: DeliverMode::Pr,
            branch: None,
            answer,
        };
        let (workspace, scratch) = (dirs.workspace(), dirs.scratch());
        let request = Delivery {
            workspace: &workspace,
            scratch: &scratch,
            checkouts: &checkouts,
            subject,
            approval: None,
            spec: &spec,
            draft,
            secrets: &self.runner.delivery_secrets(None, &[]).await?,
        };
        let mut log = Vec::new();
        if let Purpose::Answer {
            seq,
            feedback,
            reply,
        } = purpose
        {
            let recorded = self
                .runner
                .recorded_head(job.requirement_id, &feedback.pull)
                .await?;
            let answer = Answer {
                by: format!("conversation:{}:turn:{seq}", job.conversation_id),
                reply,
                recorded_head: recorded.as_deref(),
            };
            let answered = deliverer.answer(&request, &answer, &mut log).await;
            for line in &log {
                tracing::debug!(%line, "delivering the conversation's workspace");
            }
            if !self.runner.halted.is_cancelled() {
                self.checkpoint_conversation(job.conversation_id, &dirs)
                    .await;
            }
            return self.answered(job, feedback, reply, answered, begun).await;
        }
        let delivered = deliverer.deliver_changes(&request, &mut log).await;
        for line in &log {
            tracing::debug!(%line, "delivering the conversation's workspace");
        }
        if !self.runner.halted.is_cancelled() {
            self.checkpoint_conversation(job.conversation_id, &dirs)
                .await;
        }
        Ok(match delivered {
            Err(reason) => failed(reason),
            Ok(Deliveries::Unchanged(reason)) => {
                tracing::info!(%reason, "the conversation's workspace has nothing to deliver");
                Outcome::replied(
                    delivered::NOTHING.to_owned(),
                    delivered::ended(&Ended::Unchanged, elapsed_ms(begun)),
                )
            }
            Ok(Deliveries::Done(done)) => {
                self.record_pulls(job, &done).await?;
                self.runner.pushed_head(&done).await?;
                Outcome::replied(
                    delivered::reply(&done, &known),
                    delivered::ended(&Ended::Delivered(&done), elapsed_ms(begun)),
                )
            }
        })
    }

    /// A feedback turn's outcome once its delivery answered (or failed to): the CLI's
    /// reply followed by what became of the pull request. Its pull requests and their
    /// heads are recorded after the answer was posted.
    async fn answered(
        &self,
        job: &TurnDispatch,
        feedback: &Feedback,
        reply: &str,
        answered: Result<Answered, String>,
        begun: Instant,
    ) -> Result<Outcome, HandlerError> {
        let took = elapsed_ms(begun);
        let Answered { deliveries, change } = match answered {
            Ok(answered) => answered,
            Err(reason) => {
                let reason = format!(
                    "the agent replied, but its work did not reach {}: {reason}",
                    feedback.pull
                );
                return Ok(Outcome::failed(reason, took));
            }
        };
        let done = match &deliveries {
            Deliveries::Done(done) => done.as_slice(),
            Deliveries::Unchanged(_) => &[],
        };
        self.record_pulls(job, done).await?;
        self.runner.pushed_head(done).await?;
        let said = delivered::answered(&feedback.pull, done, &change);
        let reply = if reply.trim().is_empty() {
            said
        } else {
            format!("{}\n\n{said}", reply.trim_end())
        };
        let ended = match &deliveries {
            Deliveries::Done(done) => delivered::ended(&Ended::Delivered(done), took),
            Deliveries::Unchanged(_) => delivered::ended(&Ended::Unchanged, took),
        };
        Ok(Outcome::replied(reply, ended))
    }

    /// The pull requests recorded for the requirement so far: what this delivery finds
    /// open among them it updated.
    async fn known_pulls(&self, job: &TurnDispatch) -> Result<Vec<(String, u64)>, HandlerError> {
        let rows = self
            .runner
            .store
            .pull_requests_of_requirement(job.requirement_id)
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| (r.repo, u64::try_from(r.number).unwrap_or(0)))
            .collect())
    }

    /// Records each pull request with the requirement, the conversation as what delivered
    /// into it last.
    async fn record_pulls(
        &self,
        job: &TurnDispatch,
        delivered: &[Delivered],
    ) -> Result<(), HandlerError> {
        for done in delivered {
            if let Some(row) =
                crate::delivering::pushed_row(job.conversation_id, Some(job.requirement_id), done)
            {
                durably("recording a pushed branch", || {
                    self.runner.store.record_pushed_branch(&row)
                })
                .await?;
                continue;
            }
            let DeliveredTo::Pull { number, branch, .. } = &done.to else {
                continue;
            };
            let repo = &done.repo;
            durably("recording a pull request", || {
                self.runner.store.record_pull_request(
                    repo,
                    *number,
                    job.requirement_id,
                    job.conversation_id,
                    branch,
                )
            })
            .await?;
        }
        Ok(())
    }
}

fn elapsed_ms(begun: Instant) -> u64 {
    u64::try_from(begun.elapsed().as_millis()).unwrap_or(u64::MAX)
}
