//! The values behind chat messages. Text fields are plain text; adapters escape them for
//! their platform.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// An approval card: one attempt of one gate, as posted to a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    /// The run.
    pub run: Uuid,
    /// The SOP the run follows.
    pub sop: String,
    /// The gate's node id.
    pub node: String,
    /// The attempt this card decides.
    pub attempt: u32,
    /// What the requirement is called, when the run works on one.
    pub requirement: Option<String>,
    /// Where the requirement lives (issue, thread), when known.
    pub requirement_url: Option<String>,
    /// The run's page in the console (at the gate's node), with `server.public_url`.
    pub run_url: Option<String>,
    /// The outputs under review.
    pub outputs: Vec<Output>,
    /// Who may decide, as the gate names them (`ana`, `group:leads`); empty for anyone known.
    pub approvers: Vec<String>,
    /// Distinct approvals needed.
    pub min_approvals: u32,
    /// People who approved so far.
    pub approvals: Vec<String>,
    /// Nodes the work may be sent back to; empty hides the Send back button.
    pub send_back: Vec<String>,
    /// The decision, once made: the card then shows it instead of buttons.
    pub outcome: Option<Outcome>,
    /// For an agent node asking for a budget to be raised: the refusal it met ("budget of
    /// project api reached: $20.00 today"). The card asks for a raise, not a review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raise: Option<String>,
    /// For a deliver node's gate: what keeps coming back on its pull request (failing
    /// checks, a conflict) after the work was sent back for it. The card asks whether to
    /// keep the pull request as it is, rework it once more, or give up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// What deciding an ask to raise a budget does, as cards, the console and the status
/// comment say it.
pub const RAISE_EFFECT: &str = "Approve raises this budget once, by its own amount, for this run, and runs the node again; reject fails the run.";

/// What deciding a deliver node's gate does, as cards, the console and the status comment
/// say it.
pub const FEEDBACK_EFFECT: &str = "Approve keeps the pull request as it is and ends the run; send back reworks it once more; reject fails the run.";

impl Card {
    /// The card's title line.
    pub fn title(&self) -> String {
        if self.feedback.is_some() {
            return match &self.requirement {
                Some(requirement) => {
                    format!(
                        "Pull request needs a decision: {} — {requirement}",
                        self.node
                    )
                }
                None => format!(
                    "Pull request needs a decision: {} ({})",
                    self.node, self.sop
                ),
            };
        }
        if self.raise.is_some() {
            return match &self.requirement {
                Some(requirement) => format!("Budget reached: {} — {requirement}", self.node),
                None => format!("Budget reached: {} ({})", self.node, self.sop),
            };
        }
        match &self.requirement {
            Some(requirement) => format!("Approval needed: {} — {requirement}", self.node),
            None => format!("Approval needed: {} ({})", self.node, self.sop),
        }
    }

    /// For an ask to raise a budget, the refusal, and for a deliver node's gate, what came
    /// back on its pull request, with what deciding does, as one paragraph.
    pub fn question(&self) -> Option<String> {
        if let Some(feedback) = &self.feedback {
            return Some(format!("{feedback}\n{FEEDBACK_EFFECT}"));
        }
        self.raise
            .as_ref()
            .map(|refusal| format!("The agent stopped: {refusal}. {RAISE_EFFECT}"))
    }

    /// Who may decide, as a sentence part.
    pub fn deciders(&self) -> String {
        let who = if self.approvers.is_empty() {
            "anyone configured in [[people]]".to_owned()
        } else {
            self.approvers.join(", ")
        };
        if self.min_approvals > 1 {
            format!(
                "{who} ({} of {} approvals so far{})",
                self.approvals.len(),
                self.min_approvals,
                if self.approvals.is_empty() {
                    String::new()
                } else {
                    format!(": {}", self.approvals.join(", "))
                }
            )
        } else {
            who
        }
    }
}

/// One output under review: an artifact of an earlier node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    /// `node/name`.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// The first lines of a text artifact.
    pub excerpt: Option<String>,
}

/// How a gate attempt ended, shown on its cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// `approved`, `rejected`, `sent back to build`, `expired`, `cancelled`.
    pub decision: String,
    /// Who decided (several approvers for `min_approvals` > 1); empty for Gatehouse itself.
    pub by: Vec<String>,
    /// When.
    pub at: DateTime<Utc>,
    /// The decider's comment.
    pub comment: Option<String>,
}

impl Outcome {
    /// `Approved by ana, bo at 2026-11-30 14:02 UTC`.
    pub fn sentence(&self) -> String {
        let mut decision = self.decision.clone();
        if let Some(first) = decision.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        let by = if self.by.is_empty() {
            String::new()
        } else {
            format!(" by {}", self.by.join(", "))
        };
        format!("{decision}{by} at {}", self.at.format("%Y-%m-%d %H:%M UTC"))
    }
}

/// A run's progress, as one message in the requirement's thread edited in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The run.
    pub run: Uuid,
    /// The SOP it follows.
    pub sop: String,
    /// The run's status (`running`, `waiting`, `succeeded`, ...).
    pub status: String,
    /// One line per node worth mentioning: `build: succeeded`, `review: waiting for approval`.
    pub lines: Vec<String>,
    /// The run's page in the console.
    pub run_url: Option<String>,
}

impl Progress {
    /// The message's headline.
    pub fn headline(&self) -> String {
        format!("Run {} of {}: {}", self.run, self.sop, self.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card() -> Card {
        Card {
            run: Uuid::nil(),
            sop: "bug-fix".into(),
            node: "review".into(),
            attempt: 1,
            requirement: None,
            requirement_url: None,
            run_url: None,
            outputs: vec![],
            approvers: vec![],
            min_approvals: 1,
            approvals: vec![],
            send_back: vec![],
            outcome: None,
            raise: None,
            feedback: None,
        }
    }

    #[test]
    fn deciders_read_as_a_sentence() {
        let mut c = card();
        assert_eq!(c.deciders(), "anyone configured in [[people]]");
        c.approvers = vec!["ana".into(), "group:leads".into()];
        c.min_approvals = 2;
        c.approvals = vec!["ana".into()];
        assert_eq!(
            c.deciders(),
            "ana, group:leads (1 of 2 approvals so far: ana)"
        );
        assert_eq!(c.title(), "Approval needed: review (bug-fix)");
        c.requirement = Some("Fix login".into());
        assert_eq!(c.title(), "Approval needed: review — Fix login");
    }

    #[test]
    fn an_ask_to_raise_a_budget_says_what_stopped_and_what_deciding_does() {
        let mut c = card();
        assert_eq!(c.question(), None);
        c.raise = Some("budget of project api reached: $20.00 today".into());
        assert_eq!(c.title(), "Budget reached: review (bug-fix)");
        assert_eq!(
            c.question().unwrap(),
            format!(
                "The agent stopped: budget of project api reached: $20.00 today. {RAISE_EFFECT}"
            )
        );
    }

    #[test]
    fn outcome_sentence() {
        let at = DateTime::parse_from_rfc3339("2026-11-30T14:02:09Z")
            .unwrap()
            .with_timezone(&Utc);
        let outcome = Outcome {
            decision: "sent back to build".into(),
            by: vec!["ana".into()],
            at,
            comment: None,
        };
        assert_eq!(
            outcome.sentence(),
            "Sent back to build by ana at 2026-11-30 14:02 UTC"
        );
    }

    #[test]
    fn login_link_text_says_how_long_it_works() {
        assert_eq!(
            login_link_text("https://gatehouse.example/", "gh_abc", 900),
            "Your sign-in link for Gatehouse (works once, for 15 minutes): https://gatehouse.example/login/gh_abc"
        );
        assert!(login_link_text("https://g", "s", 60).contains("for 1 minute)"));
        assert!(login_link_text("https://g", "s", 90).contains("for 90 seconds)"));
    }
}

/// What a stored chat message shows: the value the notifier renders for its platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// An approval card (boxed: far larger than the other kinds).
    Card(Box<Card>),
    /// An agent's question to a person, with Approve / Deny (boxed like a card).
    Question(Box<crate::QuestionCard>),
    /// A run's progress.
    Progress(Progress),
    /// Plain text: a reply to a command, an answer to a click.
    Text {
        /// The text (Markdown-ish: `code` and *bold* read well on both platforms).
        text: String,
    },
    /// A one-time sign-in link to the console, sent to a person by direct message
    /// (`@gatehouse login`). The stored message holds no secret: the notifier mints the
    /// link when it posts, and shows [`login_link_text`].
    LoginLink {
        /// The person it signs in.
        person: String,
        /// The scopes of the session it starts, comma-separated as stored (`read,run,decide`).
        scopes: String,
        /// How long the link works once minted, in seconds.
        ttl_secs: u64,
    },
}

impl Body {
    /// A text message.
    pub fn text(text: impl Into<String>) -> Self {
        Body::Text { text: text.into() }
    }
}

/// The channel prefix of a stored Discord message meant for one person's direct messages:
/// `dm:<user id>`. Discord posts there only once the channel is opened, which the notifier
/// does when it posts; on Slack the user id itself is the channel.
pub const DM_PREFIX: &str = "dm:";

/// What a [`Body::LoginLink`] says once its link is minted: the console's address
/// (`server.public_url`, without a trailing slash), the link's secret, and how long it works.
pub fn login_link_text(public_url: &str, secret: &str, ttl_secs: u64) -> String {
    let ttl = match ttl_secs {
        60 => "1 minute".to_owned(),
        secs if secs % 60 == 0 => format!("{} minutes", secs / 60),
        1 => "1 second".to_owned(),
        secs => format!("{secs} seconds"),
    };
    format!(
        "Your sign-in link for Gatehouse (works once, for {ttl}): {}/login/{secret}",
        public_url.trim_end_matches('/')
    )
}
