//! The tools of Gatehouse's MCP server. Each call acts for the attempt whose token the
//! request carried (the server put it in the request's extensions); a call's arguments are
//! the agent's and are checked before anything is done with them.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use gatehouse_events::QuestionKind;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

use super::AttemptTools;
use super::ask::{AskError, ask};

/// The longest text `publish_artifact` takes.
pub(crate) const MAX_ARTIFACT_BYTES: usize = 1024 * 1024;
/// The longest artifact name, a plain file name.
const MAX_ARTIFACT_NAME: usize = 128;
/// The longest progress note.
const MAX_PROGRESS_BYTES: usize = 2000;

/// Gatehouse's tools, one value per MCP session.
#[derive(Clone)]
pub(crate) struct GatehouseTools {
    #[allow(dead_code, reason = "read by the tool_handler macro")]
    tool_router: ToolRouter<Self>,
}

impl GatehouseTools {
    pub(crate) fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ApprovalRequest {
    /// What you want a person to decide, in one or two sentences ("May I drop the
    /// legacy_users table? Nothing reads it since v3.").
    question: String,
    /// What supports the question, shown with it: a diff, a plan, command output.
    #[serde(default)]
    evidence: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ArtifactRequest {
    /// A plain file name: letters, digits, `.`, `-` and `_` (`design.md`).
    name: String,
    /// The artifact's text.
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ProgressRequest {
    /// How the work is going, in a line or two; it replaces the previous note.
    text: String,
}

/// The attempt a request acts for, put there by the server's token check.
fn attempt(parts: &http::request::Parts) -> Result<Arc<AttemptTools>, ErrorData> {
    parts
        .extensions
        .get::<Arc<AttemptTools>>()
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("this request carries no attempt's token", None))
}

fn text(result: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(result.into())])
}

fn refused(why: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(why.into())])
}

#[tool_router]
impl GatehouseTools {
    #[tool(
        description = "Ask a person to approve something before you do it, and wait for the answer. \
        The person sees the question and evidence as an approval card in the team's chat thread, \
        the console's inbox and the issue's status comment. Returns `approved by <person>` or \
        `denied by <person>: <reason>` (or that nobody answered in time: treat that as denied). \
        Use it for irreversible or risky steps, not for routine work."
    )]
    async fn request_approval(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(request): Parameters<ApprovalRequest>,
    ) -> Result<CallToolResult, ErrorData> {
        let attempt = attempt(&parts)?;
        match ask(
            &attempt,
            QuestionKind::Approval,
            &request.question,
            request.evidence.as_deref(),
        )
        .await
        {
            Ok(reply) if reply.approved() => Ok(text(reply.words())),
            Ok(reply) => Ok(refused(reply.words())),
            Err(error @ (AskError::Store(_) | AskError::Event(_))) => {
                tracing::warn!(%error, "an agent's question could not be asked");
                Ok(refused(error.to_string()))
            }
            Err(error) => Ok(refused(error.to_string())),
        }
    }

    #[tool(
        description = "Publish a text document (a design, a report, release notes) as an artifact \
        of this step, for people and later steps to read. Publishing the same name again replaces it."
    )]
    async fn publish_artifact(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(request): Parameters<ArtifactRequest>,
    ) -> Result<CallToolResult, ErrorData> {
        let attempt = attempt(&parts)?;
        let Some(dir) = &attempt.artifacts else {
            return Ok(refused(
                "a conversation's turn has no artifacts; write the file into the workspace instead",
            ));
        };
        if let Err(why) = check_artifact_name(&request.name) {
            return Ok(refused(why));
        }
        if request.text.len() > MAX_ARTIFACT_BYTES {
            return Ok(refused(format!(
                "the artifact is {} bytes; at most {MAX_ARTIFACT_BYTES} are taken",
                request.text.len()
            )));
        }
        let size = request.text.len();
        let (dir, name, body) = (dir.clone(), request.name.clone(), request.text);
        let written =
            tokio::task::spawn_blocking(move || write_artifact(&dir, &name, body.as_bytes()))
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        match written {
            Ok(()) => Ok(text(format!(
                "published `{}` ({} bytes); it is checked and stored with the step's other artifacts when the step ends",
                request.name, size
            ))),
            Err(error) => Ok(refused(format!(
                "`{}` could not be written: {error}",
                request.name
            ))),
        }
    }

    #[tool(
        description = "The requirement this work is for (title, body, link) and its project, as JSON."
    )]
    async fn get_requirement(
        &self,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let attempt = attempt(&parts)?;
        Ok(text(attempt.requirement.to_string()))
    }

    #[tool(
        description = "This step's inputs as JSON: the run's parameters, the text of the files earlier \
        steps produced (by step and file name), and a reviewer's comment when the work was sent back."
    )]
    async fn get_inputs(
        &self,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let attempt = attempt(&parts)?;
        Ok(text(attempt.inputs.to_string()))
    }

    #[tool(
        description = "Tell the people following this work how it is going, in a line or two. It \
        replaces the previous progress note in the chat thread and on the run's page."
    )]
    async fn post_progress(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(request): Parameters<ProgressRequest>,
    ) -> Result<CallToolResult, ErrorData> {
        let attempt = attempt(&parts)?;
        let note = request.text.trim();
        if note.is_empty() {
            return Ok(refused("the progress note is empty"));
        }
        if note.len() > MAX_PROGRESS_BYTES {
            return Ok(refused(format!(
                "the progress note is {} bytes; keep it under {MAX_PROGRESS_BYTES}",
                note.len()
            )));
        }
        (attempt.progress)(note.to_owned());
        Ok(text("posted"))
    }
}

#[tool_handler]
impl ServerHandler for GatehouseTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "Gatehouse runs this work for a team. Ask a person with request_approval before \
             irreversible or risky steps; publish documents with publish_artifact; read the \
             requirement and your inputs with get_requirement and get_inputs; keep people \
             informed with post_progress.",
        )
    }
}

/// A plain file name: no folder, no hidden file, nothing the shell or a path could read
/// another way.
fn check_artifact_name(name: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    if name.is_empty() || name.len() > MAX_ARTIFACT_NAME {
        return Err(format!(
            "an artifact's name is 1 to {MAX_ARTIFACT_NAME} characters"
        ));
    }
    if name.starts_with('.') || !name.chars().all(plain) {
        return Err(format!(
            "`{}` is not a plain file name: use letters, digits, `.`, `-` and `_`, not starting with `.`",
            name.escape_default()
        ));
    }
    Ok(())
}

/// Writes the artifact beside the agent's own files without trusting them: into a fresh
/// file (never through a link the agent left), then renamed over whatever had the name.
fn write_artifact(dir: &Path, name: &str, body: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let temporary = dir.join(format!(".publishing-{}", uuid::Uuid::new_v4().simple()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&temporary)?;
    let written = file.write_all(body).and_then(|()| file.sync_all());
    drop(file);
    match written.and_then(|()| std::fs::rename(&temporary, dir.join(name))) {
        Ok(()) => Ok(()),
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_names_are_plain_file_names() {
        for good in ["design.md", "notes_v2.txt", "a-b"] {
            assert!(check_artifact_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".env",
            "../x",
            "a/b",
            "/etc/passwd",
            "a b",
            "ü.md",
            &"x".repeat(200),
        ] {
            assert!(check_artifact_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_artifact_replaces_a_link_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().expect("dir");
        let outside = tempfile::tempdir().expect("outside");
        let target = outside.path().join("secret");
        std::fs::write(&target, "keep").expect("target");
        std::os::unix::fs::symlink(&target, dir.path().join("report.md")).expect("link");
        write_artifact(dir.path(), "report.md", b"the report").expect("written");
        assert_eq!(std::fs::read_to_string(&target).expect("target"), "keep");
        let written = dir.path().join("report.md");
        assert!(!written.is_symlink());
        assert_eq!(
            std::fs::read_to_string(written).expect("artifact"),
            "the report"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
    }
}
