//! Question cards: one per place for each question an agent asks — the run's (or
//! conversation's) chat thread and the places gate cards go — keyed `question:<id>:<place>`,
//! so a repeated or redelivered event never posts a second card and an attempt that asks
//! again after its runner died (it adopts the question) finds the same card. Every card is
//! rendered from the stored question, so it shows the answer once there is one, whatever
//! order the events come in.

use gatehouse_bus::HandlerError;
use gatehouse_chat::{Asker, Body, Outcome, QuestionCard, QuestionKind};
use gatehouse_events::RequirementSource;
use gatehouse_store::{ConnectionOwner, QuestionRow, RequirementRow, Tx, WantChat};
use uuid::Uuid;

use super::targets::Place;
use crate::Notifier;

impl Notifier {
    /// Brings `question`'s cards up to date in `tx`: when `asked`, wants one at each place
    /// it goes; in any case shows its state on every card it already has.
    pub(crate) async fn question_cards(
        &self,
        tx: &mut Tx,
        question: &QuestionRow,
        asked: bool,
    ) -> Result<(), HandlerError> {
        let Some((card, thread, run_id)) = self.question_card(question).await? else {
            return Ok(());
        };
        let body = serde_json::to_string(&Body::Question(Box::new(card)))?;
        let prefix = format!("question:{}:", question.id);
        if asked {
            for place in self.chat.card_places(&[], thread.as_ref()) {
                want(
                    tx,
                    &format!("{prefix}{}", place.key()),
                    &place,
                    run_id,
                    &body,
                )
                .await?;
            }
        }
        for row in tx.chat_messages_keyed(&prefix).await? {
            let place = Place {
                platform: match row.platform.as_str() {
                    "discord" => "discord",
                    "github" => "github",
                    _ => "slack",
                },
                channel: row.channel.clone(),
                thread: row.thread.clone(),
            };
            want(tx, &row.key, &place, run_id, &body).await?;
        }
        Ok(())
    }

    /// The card for `question`, the thread of its run's or conversation's requirement
    /// when that came from a configured chat, and the run it is about; none when its run
    /// or conversation is gone.
    async fn question_card(
        &self,
        question: &QuestionRow,
    ) -> Result<Option<(QuestionCard, Option<Place>, Option<Uuid>)>, HandlerError> {
        let (asker, requirement, thread, page_url, run_id) = match &question.owner {
            ConnectionOwner::Node { run_id, node } => {
                let Some(run) = self.store.run(*run_id).await? else {
                    return Ok(None);
                };
                let requirement = match run.requirement_id {
                    Some(id) => self.store.requirement(id).await?,
                    None => None,
                };
                let thread = requirement.as_ref().and_then(|r| self.thread_of(r));
                let asker = Asker::Run {
                    run: run.id,
                    sop: run.sop.clone(),
                    node: node.clone(),
                    attempt: u32::try_from(question.attempt).unwrap_or_default(),
                };
                let page = self.run_url(run.id).map(|url| format!("{url}#node-{node}"));
                (asker, requirement, thread, page, Some(run.id))
            }
            ConnectionOwner::Turn {
                conversation_id,
                seq,
            } => {
                let Some(conversation) = self.store.conversation(*conversation_id).await? else {
                    return Ok(None);
                };
                let requirement = self.store.requirement(conversation.requirement_id).await?;
                // The conversation's own thread, which its turns answer in.
                let source = match conversation.platform.as_str() {
                    "slack" => Some(RequirementSource::Slack {
                        channel: conversation.channel.clone(),
                        thread_ts: conversation.thread.clone(),
                    }),
                    "discord" => Some(RequirementSource::Discord {
                        channel: conversation.channel.clone(),
                        message_id: conversation.thread.clone(),
                    }),
                    _ => None,
                };
                let thread = match source {
                    Some(source) => self.chat.thread_of(&source),
                    None if conversation.platform == "github" && self.github.is_some() => {
                        Some(Place::issue(&conversation.channel, &conversation.thread))
                    }
                    None => None,
                };
                let asker = Asker::Conversation {
                    conversation: conversation.id,
                    turn: *seq,
                };
                let page = self
                    .public_url
                    .as_ref()
                    .map(|url| format!("{url}/conversations/{}", conversation.id));
                (asker, requirement, thread, page, None)
            }
        };
        let card = QuestionCard {
            question: question.id,
            kind: match question.kind {
                gatehouse_store::QuestionKind::Approval => QuestionKind::Approval,
                gatehouse_store::QuestionKind::Permission => QuestionKind::Permission,
            },
            text: question.question.clone(),
            evidence: question.evidence.clone(),
            asker,
            requirement: requirement.as_ref().map(|r| r.title.clone()),
            requirement_url: requirement.as_ref().and_then(|r| r.url.clone()),
            page_url,
            outcome: outcome(question),
        };
        Ok(Some((card, thread, run_id)))
    }

    fn thread_of(&self, requirement: &RequirementRow) -> Option<Place> {
        let source: RequirementSource = serde_json::from_str(&requirement.source).ok()?;
        self.chat.thread_of(&source)
    }
}

async fn want(
    tx: &mut Tx,
    key: &str,
    place: &Place,
    run_id: Option<Uuid>,
    body: &str,
) -> Result<(), HandlerError> {
    tx.want_chat_message(&WantChat {
        key,
        platform: place.platform,
        channel: &place.channel,
        thread: place.thread.as_deref(),
        recipient: None,
        run_id,
        body,
    })
    .await?;
    Ok(())
}

/// How the question was answered, once it was: `approved`, `denied`, `expired`,
/// `withdrawn`, by whom and with what comment.
fn outcome(question: &QuestionRow) -> Option<Outcome> {
    if question.status.is_open() {
        return None;
    }
    Some(Outcome {
        decision: question.status.as_str().to_owned(),
        by: question.decided_by.iter().cloned().collect(),
        at: question.decided_at.unwrap_or(question.asked_at),
        comment: question.comment.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_store::QuestionStatus;

    fn row(status: QuestionStatus) -> QuestionRow {
        let at = "2026-11-30T14:00:00Z".parse().unwrap();
        QuestionRow {
            id: Uuid::nil(),
            owner: ConnectionOwner::Node {
                run_id: Uuid::nil(),
                node: "build".into(),
            },
            attempt: 1,
            project: None,
            kind: gatehouse_store::QuestionKind::Approval,
            question: "May I?".into(),
            evidence: None,
            digest: "d".into(),
            status,
            decided_by: None,
            channel: None,
            comment: None,
            asked_at: at,
            expires_at: None,
            decided_at: None,
        }
    }

    #[test]
    fn the_outcome_says_how_and_by_whom() {
        assert_eq!(outcome(&row(QuestionStatus::Open)), None);
        let mut denied = row(QuestionStatus::Denied);
        denied.decided_by = Some("ana".into());
        denied.comment = Some("use staging".into());
        denied.decided_at = Some("2026-11-30T14:02:09Z".parse().unwrap());
        let o = outcome(&denied).unwrap();
        assert_eq!(o.sentence(), "Denied by ana at 2026-11-30 14:02 UTC");
        assert_eq!(o.comment.as_deref(), Some("use staging"));
        let expired = outcome(&row(QuestionStatus::Expired)).unwrap();
        assert_eq!(expired.sentence(), "Expired at 2026-11-30 14:00 UTC");
    }
}
