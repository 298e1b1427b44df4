//! The webhook payloads Gatehouse reads, with only the fields it uses. Unknown fields are
//! ignored; a missing required field fails that delivery's parse, which the caller records.

use serde::Deserialize;

/// A parsed delivery, by its `X-GitHub-Event` header.
#[derive(Debug, Clone, PartialEq)]
pub enum Webhook {
    /// GitHub checking the hook works.
    Ping,
    /// An issue opened, edited, closed, reopened, labeled, unlabeled...
    Issues(IssuesEvent),
    /// A comment on an issue or pull request.
    IssueComment(IssueCommentEvent),
    /// A pull request opened, closed (merged or not), labeled...
    PullRequest(PullRequestEvent),
    /// An event Gatehouse does not act on (its name).
    Other(String),
}

impl Webhook {
    /// Parses a body by its event name.
    pub fn parse(event: &str, body: &[u8]) -> Result<Self, serde_json::Error> {
        Ok(match event {
            "ping" => Self::Ping,
            "issues" => Self::Issues(serde_json::from_slice(body)?),
            "issue_comment" => Self::IssueComment(serde_json::from_slice(body)?),
            "pull_request" => Self::PullRequest(serde_json::from_slice(body)?),
            other => Self::Other(other.to_owned()),
        })
    }

    /// The repository (`owner/name`) an event happened in, for the events that have one.
    pub fn repository(&self) -> Option<&str> {
        self.subject().map(|(repo, _)| repo)
    }

    /// The issue or pull request an event is about (its repository and number; the two
    /// share the numbers), for the events that have one.
    pub fn subject(&self) -> Option<(&str, u64)> {
        match self {
            Self::Issues(e) => Some((&e.repository.full_name, e.issue.number)),
            Self::IssueComment(e) => Some((&e.repository.full_name, e.issue.number)),
            Self::PullRequest(e) => Some((&e.repository.full_name, e.pull_request.number)),
            Self::Ping | Self::Other(_) => None,
        }
    }
}

/// `issues`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IssuesEvent {
    /// opened, edited, closed, reopened, labeled, unlabeled, ...
    pub action: String,
    /// The issue after the change.
    pub issue: Issue,
    /// The label added or removed (labeled, unlabeled).
    pub label: Option<Label>,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// `issue_comment`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IssueCommentEvent {
    /// created, edited, deleted.
    pub action: String,
    /// The issue (or pull request) commented on.
    pub issue: Issue,
    pub comment: Comment,
    /// For `edited`: what the body was before.
    pub changes: Option<CommentChanges>,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// `pull_request`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PullRequestEvent {
    /// opened, edited, closed, reopened, labeled, synchronize, ...
    pub action: String,
    /// The pull request after the change.
    pub pull_request: PullRequest,
    /// The label added or removed (labeled, unlabeled).
    pub label: Option<Label>,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// An issue; pull requests are issues too (then `pull_request` is present).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Issue {
    /// Number within the repository.
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    /// open or closed.
    pub state: String,
    pub html_url: String,
    /// Labels now on it.
    #[serde(default)]
    pub labels: Vec<Label>,
    /// Author.
    pub user: User,
    /// Last change (RFC 3339): distinguishes one label event from a later one.
    pub updated_at: String,
    /// Present when the issue is a pull request.
    pub pull_request: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PullRequest {
    /// Number within the repository.
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    /// open or closed.
    pub state: String,
    /// Whether it was merged (on `closed`).
    #[serde(default)]
    pub merged: bool,
    pub html_url: String,
    /// Labels now on it.
    #[serde(default)]
    pub labels: Vec<Label>,
    /// Author.
    pub user: User,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// The branch it merges from.
    pub head: Branch,
    /// The branch it merges into.
    pub base: Branch,
}

impl PullRequest {
    /// Whether the head is in another repository (a fork): such a pull request must not
    /// start runs holding write credentials unless configured.
    pub fn from_fork(&self) -> bool {
        match (&self.head.repo, &self.base.repo) {
            (Some(head), Some(base)) => head.full_name != base.full_name,
            // A deleted fork leaves no head repository.
            _ => true,
        }
    }
}

/// One end of a pull request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Branch {
    #[serde(rename = "ref")]
    pub name: String,
    /// Its repository (absent when a fork was deleted).
    pub repo: Option<Repository>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Comment {
    /// Id (for edits and replies).
    pub id: u64,
    /// Markdown text.
    pub body: String,
    /// Author.
    pub user: User,
    pub html_url: String,
    /// Last change (creation or edit): with `id`, names this version of the comment.
    #[serde(default)]
    pub updated_at: String,
}

/// `changes` of an edited comment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CommentChanges {
    /// The previous body, when it changed.
    pub body: Option<Previous>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Previous {
    pub from: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    /// Its name, e.g. `sop:bug-fix`.
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Repository {
    /// `owner/name`.
    pub full_name: String,
}

/// A GitHub account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub login: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../tests/fixtures/github/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn the_real_payloads_parse() {
        let Webhook::Issues(labeled) =
            Webhook::parse("issues", &fixture("issues.labeled")).unwrap()
        else {
            panic!("issues");
        };
        assert_eq!(labeled.action, "labeled");
        assert_eq!(labeled.label.unwrap().name, "bug");
        assert_eq!(labeled.repository.full_name, "Codertocat/Hello-World");
        assert_eq!(labeled.issue.number, 1);
        assert!(labeled.issue.pull_request.is_none());

        let Webhook::IssueComment(comment) =
            Webhook::parse("issue_comment", &fixture("issue_comment.created")).unwrap()
        else {
            panic!("issue_comment");
        };
        assert_eq!(comment.action, "created");
        assert!(comment.comment.body.starts_with("You are totally right"));

        let Webhook::PullRequest(pr) =
            Webhook::parse("pull_request", &fixture("pull_request.closed.unmerged")).unwrap()
        else {
            panic!("pull_request");
        };
        assert_eq!(pr.action, "closed");
        assert!(!pr.pull_request.merged);
        assert!(!pr.pull_request.from_fork());

        for name in ["issues.opened", "issues.edited", "issues.unlabeled"] {
            assert!(matches!(
                Webhook::parse("issues", &fixture(name)),
                Ok(Webhook::Issues(_))
            ));
        }
        for name in ["pull_request.opened", "pull_request.synchronize"] {
            assert!(matches!(
                Webhook::parse("pull_request", &fixture(name)),
                Ok(Webhook::PullRequest(_))
            ));
        }
        assert_eq!(
            Webhook::parse("ping", &fixture("ping")).unwrap(),
            Webhook::Ping
        );
        assert_eq!(
            Webhook::parse("push", &fixture("push")).unwrap(),
            Webhook::Other("push".into())
        );
    }

    #[test]
    fn a_payload_missing_fields_is_an_error_not_a_panic() {
        assert!(Webhook::parse("issues", br#"{"action":"opened"}"#).is_err());
        assert!(Webhook::parse("issue_comment", b"not json").is_err());
    }
}
