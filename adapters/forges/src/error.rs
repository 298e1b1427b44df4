//! Why a forge's API did not do what was asked.

/// A forge call that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForgeError {
    /// The configuration cannot make a client.
    #[error("{0}")]
    Config(String),
    /// The forge did not answer.
    #[error("the forge is unreachable: {0}")]
    Unreachable(String),
    /// The forge answered with an error status.
    #[error("the forge answered {status}: {message}")]
    Api { status: u16, message: String },
    /// The forge answered something that is not what its API documents.
    #[error("the forge's answer is not what its API documents: {0}")]
    Unexpected(String),
}

/// What an error body says: GitLab's `message` (a string, a list, or fields with lists),
/// Gitea's `message`, else the body itself, cut short.
pub(crate) fn message(body: &str) -> String {
    let said = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message").or_else(|| v.get("error")).cloned())
        .map(|m| match m {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        })
        .unwrap_or_else(|| body.trim().to_owned());
    let mut said: String = said.chars().take(300).collect();
    if said.is_empty() {
        said = "no message".into();
    }
    said
}
