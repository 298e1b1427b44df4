//! Where a run's repositories go in its workspace and on which branches, planned from the
//! run's frozen [`RunWorkspace`](gatehouse_events::RunWorkspace), and the record of how
//! they were checked out.
//!
//! The record (`runs/<run>/checkouts.json`, beside the workspace, written by the runner
//! alone) is what later nodes and delivery go by: that the workspace is prepared (it is
//! written only once every repository is in place), the base branch each repository was
//! cloned from (resolved once, so the remote's default branch changing mid-run changes
//! nothing), its work branch (named once, so an issue retitled mid-run keeps its branch),
//! and the commit the work started from.
//!
//! The record travels with the workspace's checkpoints, and a checkpoint is no more
//! trusted than whatever wrote it: the record is held to the plan of the run or
//! conversation each time it is read ([`load`]). Each repository must be a planned one,
//! in its planned folder, mode and work branch, or nothing is made of the record.

use std::path::{Path, PathBuf};

use gatehouse_events::{History, RepositoryCheckout, RepositoryMode};
use gatehouse_project::is_branch_name;
use serde::{Deserialize, Serialize};

use super::Origin;

/// One repository as it was checked out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Checkout {
    /// `owner/name`.
    pub repo: String,
    /// Its directory, relative to the workspace; empty for the workspace itself.
    pub dir: String,
    pub mode: RepositoryMode,
    /// The branch the work started from and is delivered into. `None` only for a
    /// repository cloned before this record existed (the default branch then).
    pub base: Option<String>,
    /// The work branch; `None` for a read-only repository.
    pub branch: Option<String>,
    /// The commit the work branch started at, when known.
    pub start: Option<String>,
    /// Where the repository is: never read from the record, always the run's plan.
    #[serde(skip)]
    pub origin: Origin,
    /// How much history it has (which mirror it shares objects with): the run's plan too.
    #[serde(skip)]
    pub history: History,
}

impl Checkout {
    /// Where it is.
    pub(crate) fn path(&self, workspace: &Path) -> PathBuf {
        if self.dir.is_empty() {
            workspace.to_owned()
        } else {
            workspace.join(&self.dir)
        }
    }

    /// Whether delivery may push it.
    pub(crate) fn writable(&self) -> bool {
        self.mode != RepositoryMode::ReadOnly
    }
}

/// One repository to check out: where, and on which work branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    pub checkout: RepositoryCheckout,
    /// Relative to the workspace; empty for the workspace itself.
    pub dir: String,
    /// The work branch (`None` for read-only).
    pub branch: Option<String>,
}

impl Planned {
    /// The record of a repository found already cloned (a workspace prepared before
    /// checkouts were recorded): its base as configured, its planned branch.
    pub(crate) fn adopted(&self) -> Checkout {
        Checkout {
            repo: self.checkout.repo.clone(),
            dir: self.dir.clone(),
            mode: self.checkout.mode,
            base: self.checkout.branch.clone(),
            branch: self.branch.clone(),
            start: None,
            origin: Origin::of(&self.checkout),
            history: self.checkout.history,
        }
    }
}

/// Plans the repositories: one at the workspace's root, several each under its name;
/// `auto` is the work branch of `auto` repositories. `Err`: a repository that cannot be
/// checked out as configured, named.
pub(crate) fn plan(
    repositories: &[RepositoryCheckout],
    auto: &str,
) -> Result<Vec<Planned>, String> {
    let several = repositories.len() > 1;
    let mut planned: Vec<Planned> = Vec::new();
    for checkout in repositories {
        let repo = &checkout.repo;
        let dir = if several {
            checkout.dir().to_owned()
        } else {
            String::new()
        };
        if several && (!is_plain_name(&dir) || planned.iter().any(|p| p.dir == dir)) {
            return Err(format!(
                "{repo} cannot be checked out under `{dir}` in the workspace (another repository has that name, or it is not a plain name)"
            ));
        }
        if let Some(base) = &checkout.branch
            && !is_branch_name(base)
        {
            return Err(format!(
                "`{base}`, the base branch of {repo}, is not a branch name"
            ));
        }
        let named = || match &checkout.branch_name {
            Some(name) if is_branch_name(name) => Ok(name.clone()),
            Some(name) => Err(format!(
                "`{name}`, the work branch of {repo}, is not a branch name"
            )),
            None => Err(format!(
                "{repo} is in mode {} but names no branch_name",
                checkout.mode.as_str()
            )),
        };
        let branch = match checkout.mode {
            RepositoryMode::Auto => Some(auto.to_owned()),
            RepositoryMode::New | RepositoryMode::Existing => Some(named()?),
            RepositoryMode::ReadOnly => None,
        };
        planned.push(Planned {
            checkout: checkout.clone(),
            dir,
            branch,
        });
    }
    Ok(planned)
}

/// The record, if the workspace was prepared, once it is found to be `planned`'s (see
/// [`vouch`]). `Err`: why it cannot be read or trusted.
pub(crate) fn load(path: &Path, planned: &[Planned]) -> Result<Option<Vec<Checkout>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading the workspace's checkouts: {e}")),
    };
    let mut recorded = serde_json::from_str::<Record>(&text)
        .map_err(|e| format!("reading the workspace's checkouts: {e}"))?
        .repositories;
    vouch(&recorded, planned).map_err(|reason| {
        tracing::warn!(record = %path.display(), %reason, "the workspace's record of its checkouts is not trusted");
        format!("the workspace's record of its checkouts is not what was planned for it, so nothing is made of it: {reason}")
    })?;
    for (record, plan) in recorded.iter_mut().zip(planned) {
        record.origin = Origin::of(&plan.checkout);
        record.history = plan.checkout.history;
    }
    Ok(Some(recorded))
}

/// `Err` naming the first way `recorded` is not `planned`: another number or order of
/// repositories, another repository, folder or mode, a work branch other than the planned
/// one (an `auto` branch may differ only in its title words: named once, it outlives a
/// retitled requirement), a base other than the configured one (or no branch name), or a
/// start that is no commit id.
fn vouch(recorded: &[Checkout], planned: &[Planned]) -> Result<(), String> {
    if recorded.len() != planned.len() {
        return Err(format!(
            "it names {} repositories where {} were planned",
            recorded.len(),
            planned.len()
        ));
    }
    for (record, plan) in recorded.iter().zip(planned) {
        let repo = &plan.checkout.repo;
        if record.repo != *repo {
            return Err(format!("it names {} where {repo} was planned", record.repo));
        }
        if record.dir != plan.dir {
            return Err(format!(
                "it puts {repo} in `{}`, not `{}`",
                record.dir, plan.dir
            ));
        }
        if record.mode != plan.checkout.mode {
            return Err(format!(
                "it has {repo} in mode {}, not {}",
                record.mode.as_str(),
                plan.checkout.mode.as_str()
            ));
        }
        let branch_planned = match (&record.branch, &plan.branch) {
            (None, None) => true,
            (Some(recorded), Some(planned)) if recorded == planned => true,
            (Some(recorded), Some(planned)) => {
                plan.checkout.mode == RepositoryMode::Auto
                    && is_branch_name(recorded)
                    && auto_stem(recorded).is_some_and(|stem| auto_stem(planned) == Some(stem))
            }
            _ => false,
        };
        if !branch_planned {
            return Err(format!(
                "it has {repo} on the work branch {}, not {}",
                shown(record.branch.as_deref()),
                shown(plan.branch.as_deref())
            ));
        }
        let base_planned = match (&record.base, &plan.checkout.branch) {
            (None, _) => true,
            (Some(recorded), Some(configured)) => recorded == configured,
            (Some(recorded), None) => is_branch_name(recorded),
        };
        if !base_planned {
            let configured = plan.checkout.branch.as_deref();
            return Err(format!(
                "it has {repo} based on {}, not {}",
                shown(record.base.as_deref()),
                configured.map_or_else(|| "a branch name".to_owned(), |b| format!("`{b}`"))
            ));
        }
        if let Some(start) = &record.start
            && !crate::deliver::trees::is_object_id(start)
        {
            return Err(format!(
                "it has {repo} start at `{start}`, which is no commit id"
            ));
        }
    }
    Ok(())
}

/// A branch in backquotes, or `none`.
fn shown(branch: Option<&str>) -> String {
    branch.map_or_else(|| "none".to_owned(), |b| format!("`{b}`"))
}

/// What of an `auto` work branch names its issue, requirement or run (`gatehouse/12`,
/// `gatehouse/r-2e3f4a5b`, `gatehouse/run-2e3f4a5b`), without the title words after it.
fn auto_stem(branch: &str) -> Option<&str> {
    let rest = branch.strip_prefix("gatehouse/")?;
    let parts = if rest.starts_with("r-") || rest.starts_with("run-") {
        2
    } else {
        1
    };
    let end = rest
        .match_indices('-')
        .nth(parts - 1)
        .map_or(rest.len(), |(at, _)| at);
    Some(&branch[..branch.len() - rest.len() + end])
}

/// Writes the record beside and renames it into place: it is there whole or not at all.
pub(crate) fn save(path: &Path, repositories: &[Checkout]) -> Result<(), String> {
    let record = Record {
        repositories: repositories.to_vec(),
    };
    let text = serde_json::to_vec_pretty(&record).map_err(|e| e.to_string())?;
    let partial = path.with_extension("partial");
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| format!("recording the workspace's checkouts: {e}"))
}

#[derive(Serialize, Deserialize)]
struct Record {
    repositories: Vec<Checkout>,
}

/// `gatehouse/<number>-<title words>`: the work branch of a GitHub issue, one per
/// requirement, readable in GitHub.
pub(crate) fn issue_branch(number: u64, title: &str) -> String {
    named(&number.to_string(), title)
}

/// `gatehouse/r-<id>-<title words>`: the work branch of a requirement that is not a
/// GitHub issue (a chat request); the id's last eight hex digits (the random part of a
/// UUIDv7) keep two requirements with one title apart.
pub(crate) fn requirement_branch(id: uuid::Uuid, title: &str) -> String {
    named(&format!("r-{}", tail(id)), title)
}

/// `gatehouse/run-<id>-<sop>`: the work branch of a run on no requirement.
pub(crate) fn run_branch(id: uuid::Uuid, sop: &str) -> String {
    named(&format!("run-{}", tail(id)), sop)
}

fn tail(id: uuid::Uuid) -> String {
    let hex = id.simple().to_string();
    hex[hex.len() - 8..].to_owned()
}

fn named(prefix: &str, words: &str) -> String {
    let mut slug = String::new();
    for c in words.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("gatehouse/{prefix}")
    } else {
        format!("gatehouse/{prefix}-{slug}")
    }
}

/// A directory name of one component.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && name != ".git"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkout(repo: &str, mode: RepositoryMode, branch_name: Option<&str>) -> RepositoryCheckout {
        RepositoryCheckout {
            repo: repo.into(),
            branch: None,
            mode,
            branch_name: branch_name.map(Into::into),
            url: None,
            forge: None,
            path: None,
            history: Default::default(),
        }
    }

    #[test]
    fn branches_are_named_after_the_requirement() {
        assert_eq!(
            issue_branch(12, "Spelling error in the README file"),
            "gatehouse/12-spelling-error-in-the-readme-file"
        );
        assert_eq!(issue_branch(3, "¿Qué?"), "gatehouse/3-qu");
        assert_eq!(issue_branch(4, "!!!"), "gatehouse/4");
        assert!(issue_branch(5, &"long ".repeat(30)).len() <= "gatehouse/5-".len() + 40);
        let id = uuid::Uuid::parse_str("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").unwrap();
        assert_eq!(
            requirement_branch(id, "Checkout 500s on Safari"),
            "gatehouse/r-2e3f4a5b-checkout-500s-on-safari"
        );
        assert_eq!(
            run_branch(id, "nightly-deps"),
            "gatehouse/run-2e3f4a5b-nightly-deps"
        );
    }

    #[test]
    fn one_repository_is_the_workspace_several_are_under_their_names() {
        let one = plan(
            &[checkout("acme/api", RepositoryMode::Auto, None)],
            "gatehouse/1-x",
        )
        .unwrap();
        assert_eq!(one[0].dir, "");
        assert_eq!(one[0].branch.as_deref(), Some("gatehouse/1-x"));
        let several = plan(
            &[
                checkout("acme/api", RepositoryMode::Existing, Some("release")),
                checkout("acme/web", RepositoryMode::New, Some("feature/x")),
                checkout("acme/shared", RepositoryMode::ReadOnly, None),
            ],
            "gatehouse/1-x",
        )
        .unwrap();
        let dirs: Vec<_> = several
            .iter()
            .map(|p| (p.dir.as_str(), p.branch.as_deref()))
            .collect();
        assert_eq!(
            dirs,
            [
                ("api", Some("release")),
                ("web", Some("feature/x")),
                ("shared", None)
            ]
        );
    }

    #[test]
    fn a_record_is_trusted_only_as_planned() {
        let planned = plan(
            &[
                checkout("acme/api", RepositoryMode::Auto, None),
                checkout("acme/shared", RepositoryMode::ReadOnly, None),
            ],
            "gatehouse/12-fix-the-login",
        )
        .unwrap();
        let start = "a".repeat(40);
        let record = || -> Vec<Checkout> {
            planned
                .iter()
                .map(|p| Checkout {
                    base: Some("main".into()),
                    start: Some(start.clone()),
                    ..p.adopted()
                })
                .collect()
        };
        assert_eq!(vouch(&record(), &planned), Ok(()));
        // An issue retitled since keeps the branch it was named.
        let mut retitled = record();
        retitled[0].branch = Some("gatehouse/12-fix-login-on-safari".into());
        assert_eq!(vouch(&retitled, &planned), Ok(()));

        let refused = |change: fn(&mut Vec<Checkout>)| {
            let mut changed = record();
            change(&mut changed);
            vouch(&changed, &planned).unwrap_err()
        };
        assert_eq!(
            refused(|r| r[0].repo = "acme/web".into()),
            "it names acme/web where acme/api was planned"
        );
        assert_eq!(
            refused(|r| r[0].dir = "../../../runs/x/workspace".into()),
            "it puts acme/api in `../../../runs/x/workspace`, not `api`"
        );
        assert_eq!(
            refused(|r| r[1].mode = RepositoryMode::Auto),
            "it has acme/shared in mode auto, not read-only"
        );
        assert_eq!(
            refused(|r| r[0].branch = Some("gatehouse/13-fix-the-login".into())),
            "it has acme/api on the work branch `gatehouse/13-fix-the-login`, not `gatehouse/12-fix-the-login`"
        );
        assert_eq!(
            refused(|r| r[0].branch = Some("main".into())),
            "it has acme/api on the work branch `main`, not `gatehouse/12-fix-the-login`"
        );
        assert!(refused(|r| r[0].base = Some("--force".into())).contains("based on `--force`"));
        assert!(refused(|r| r[0].start = Some("--all".into())).contains("no commit id"));
        assert!(refused(|r| r.truncate(1)).contains("1 repositories where 2"));
        assert!(refused(|r| r.swap(0, 1)).contains("acme/shared where acme/api"));
    }

    #[test]
    fn an_auto_branch_is_known_by_what_it_is_named_after() {
        assert_eq!(auto_stem("gatehouse/12-fix-it"), Some("gatehouse/12"));
        assert_eq!(auto_stem("gatehouse/12"), Some("gatehouse/12"));
        assert_eq!(
            auto_stem("gatehouse/r-2e3f4a5b-checkout"),
            Some("gatehouse/r-2e3f4a5b")
        );
        assert_eq!(
            auto_stem("gatehouse/run-2e3f4a5b-nightly"),
            Some("gatehouse/run-2e3f4a5b")
        );
        assert_eq!(auto_stem("release"), None);
    }

    #[test]
    fn a_plan_that_cannot_be_checked_out_names_the_repository() {
        let missing = plan(&[checkout("acme/api", RepositoryMode::New, None)], "b").unwrap_err();
        assert_eq!(missing, "acme/api is in mode new but names no branch_name");
        let option = plan(
            &[checkout(
                "acme/api",
                RepositoryMode::Existing,
                Some("--force"),
            )],
            "b",
        )
        .unwrap_err();
        assert!(
            option.contains("`--force`, the work branch of acme/api"),
            "{option}"
        );
        let twice = plan(
            &[
                checkout("acme/api", RepositoryMode::Auto, None),
                checkout("other/api", RepositoryMode::Auto, None),
            ],
            "b",
        )
        .unwrap_err();
        assert!(
            twice.starts_with("other/api cannot be checked out under `api`"),
            "{twice}"
        );
    }
}
