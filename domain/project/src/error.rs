//! What is wrong with a project's configuration, or with what a request names. Both are
//! shown to people as they are, so each says what to change.

/// A `[[projects]]` entry that cannot be used; the configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("projects: {0}")]
pub struct ConfigError(pub String);

/// Why a request's project or repositories were refused (422 at the API).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("no project named `{name}`; the projects are {known}")]
    UnknownProject { name: String, known: String },
    #[error("no projects are configured; name repositories through a [[projects]] entry")]
    NoProjects,
    #[error("`{0}` is not a repository (write owner/name)")]
    NotARepository(String),
    #[error("{repo} is not a repository of project `{project}`; its repositories are {known}")]
    OutsideProject {
        repo: String,
        project: String,
        known: String,
    },
    #[error("no project lists {0}; add it to a [[projects]] entry's repositories")]
    InNoProject(String),
    #[error("{repo} belongs to several projects ({projects}); name one with --project")]
    Ambiguous { repo: String, projects: String },
    #[error("project `{project}` does not allow the SOP `{sop}`; it allows {allowed}")]
    SopNotAllowed {
        project: String,
        sop: String,
        allowed: String,
    },
}
