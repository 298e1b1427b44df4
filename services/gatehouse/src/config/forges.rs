//! `[forges.NAME]`: GitLab and Gitea (Forgejo) servers where the merge requests (pull
//! requests) of the repositories that name them open.

use gatehouse_forges::ForgeKind;
use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// `[forges.NAME]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgeConfig {
    /// `gitlab` or `gitea` (Gitea and Forgejo speak one API).
    pub kind: ForgeKind,
    /// The REST API's root: `https://gitlab.example.com/api/v4`,
    /// `https://gitea.example.com/api/v1`.
    pub api_url: String,
    /// A token that may open merge requests (pull requests) and push: GitLab's
    /// `PRIVATE-TOKEN`, Gitea's `Authorization: token`; git sends it over https too.
    pub token: Secret,
    /// Where git reaches the forge's repositories (`{git_url}/{path}.git`); empty = the
    /// API's host (`api_url` without `/api/v4` or `/api/v1`). A repository's own `url`
    /// wins over it.
    #[serde(default)]
    pub git_url: String,
}
