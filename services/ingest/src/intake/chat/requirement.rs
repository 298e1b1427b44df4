//! Requirements for chat threads.

use gatehouse_events::{Actor, RequirementSource, RequirementState};
use gatehouse_store::{RequirementRow, Tx};

use super::ChatMention;
use crate::ApiError;
use crate::new_requirement::{self, NewRequirement};

/// Longest requirement title taken from a message; the whole text is the body.
const TITLE_CHARS: usize = 80;

/// The thread's requirement, created from `text` (with `requirement.created`) on first use.
pub(crate) async fn thread_requirement(
    tx: &mut Tx,
    m: &ChatMention,
    actor: &Actor,
    text: &str,
    project: Option<&str>,
) -> Result<RequirementRow, ApiError> {
    if let Some(row) = find_thread_requirement(tx, m).await? {
        return Ok(row);
    }
    let source = match m.platform {
        super::Platform::Slack => RequirementSource::Slack {
            channel: m.channel.clone(),
            thread_ts: m.root.clone(),
        },
        super::Platform::Discord => RequirementSource::Discord {
            channel: m.channel.clone(),
            message_id: m.root.clone(),
        },
        super::Platform::Github => RequirementSource::Github {
            repo: m.channel.clone(),
            number: m
                .root
                .parse()
                .map_err(|_| ApiError::Internal(format!("`{}` is no issue number", m.root)))?,
            pull_request: false,
        },
    };
    let new = NewRequirement {
        key: thread_key(m),
        source,
        title: title(text),
        body: text.to_owned(),
        url: None,
        state: RequirementState::Open,
        source_updated_at: String::new(),
        author: actor.clone(),
        project: project.map(str::to_owned),
    };
    new_requirement::create(tx, new).await
}

/// The thread's requirement, if it has one.
pub(crate) async fn find_thread_requirement(
    tx: &mut Tx,
    m: &ChatMention,
) -> Result<Option<RequirementRow>, ApiError> {
    Ok(tx.requirement_by_key(&thread_key(m)).await?)
}

/// `slack:C0123:1700000000.000100`: one requirement per thread; an issue's is the
/// issue's own (`github:acme/api#7`).
fn thread_key(m: &ChatMention) -> String {
    match m.platform {
        super::Platform::Github => format!("github:{}#{}", m.channel, m.root),
        _ => format!("{}:{}:{}", m.platform.name(), m.channel, m.root),
    }
}

/// The first line of a request, shortened to a title.
fn title(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= TITLE_CHARS {
        return line.to_owned();
    }
    let mut short: String = line.chars().take(TITLE_CHARS - 1).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_the_first_line_shortened() {
        assert_eq!(title("fix the login\nit times out"), "fix the login");
        let long = "x".repeat(100);
        assert_eq!(title(&long).chars().count(), TITLE_CHARS);
        assert!(title(&long).ends_with('…'));
    }
}
