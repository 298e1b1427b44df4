//! Repositories that are not on GitHub: the credentials of those that name their own
//! remote (`repositories[].url`), and the forges (`[forges.NAME]`) where merge requests
//! open. A run freezes where each repository is; what git authenticates with is the
//! runner's own, looked up here when a session opens.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gatehouse_forges::Forge;
use secrecy::SecretString;

/// How the runner reaches repositories that are not on GitHub.
#[derive(Clone, Default)]
pub struct Remotes {
    /// The credential of each remote that takes one, by its url as configured.
    pub credentials: BTreeMap<String, Credential>,
    /// The forges, by name.
    pub forges: BTreeMap<String, ForgeAccess>,
}

impl std::fmt::Debug for Remotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remotes")
            .field("credentials", &self.credentials.keys().collect::<Vec<_>>())
            .field("forges", &self.forges.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What git authenticates to one remote with.
#[derive(Clone)]
pub enum Credential {
    /// A token, sent over https as Basic credentials in a header scoped to the remote.
    Token(SecretString),
    /// A private key for ssh (OpenSSH format).
    DeployKey {
        key: SecretString,
        /// Host keys to trust strictly; `None` accepts a host's key the first time.
        known_hosts: Option<PathBuf>,
    },
}

/// One configured forge: its REST API, and where git reaches its repositories.
#[derive(Clone)]
pub struct ForgeAccess {
    /// The API client (merge requests, pull requests, default branches).
    pub api: Forge,
    /// `{git_url}/{path}.git` is a repository's remote when it names none.
    pub git_url: String,
    /// The token git pushes with over https, when the repository has no credential of
    /// its own.
    pub token: SecretString,
}
