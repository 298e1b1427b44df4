//! Skills for an attempt: the role's and the project's `[skills.NAME]` and the run's
//! repositories' own `.gatehouse/skills/<name>/`, each read and checked (untrusted, see
//! [`folder`] and [`git`]), packed into a bundle whose SHA-256 is its content hash, and
//! pinned with the run at its first use — the hash and source frozen as a run setting
//! (kind [`PINNED_KIND`]), the bundle put in the blob store under that hash — so every
//! later attempt of the run, on any runner, copies exactly the same files even if the
//! folder or the repository changed. The files are written into the attempt's inputs
//! directory (`.agent/skills/<name>/`, read-only to the agent), whence each executor copies
//! them to where its CLI reads skills.

mod folder;
mod git;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use gatehouse_agent::{
    MAX_FILES, MAX_TOTAL_BYTES, PINNED_KIND, PinnedSkill, SkillFiles, SkillSource,
};
use gatehouse_blobs::{BlobError, Digest};
use gatehouse_bus::HandlerError;
use uuid::Uuid;

use crate::patience::patiently;
use crate::runner::Runner;

/// Under the inputs directory: one folder per skill.
pub(crate) const SKILLS_DIR: &str = ".agent/skills";
/// The run setting kind listing the repository skills found at the run's first use.
const REPOSITORY_SET: (&str, &str) = ("skill-set", "repository");
/// A bundle's most bytes: the files, plus each one's path and lengths.
const MAX_BUNDLE: u64 =
    MAX_TOTAL_BYTES + (MAX_FILES as u64) * (12 + gatehouse_agent::MAX_DEPTH as u64 * 64 + 512) + 64;

/// The skills written for an attempt.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attached {
    /// `(name, description)`, by name.
    pub listed: Vec<(String, String)>,
}

/// A checked-out repository of the run: `owner/name` and its folder.
pub(crate) struct Checkout {
    pub repo: String,
    pub dir: PathBuf,
}

/// The skills `role` and the project of `workspace` attach, and the run's repositories as
/// checked out under `root` (one at the root, several each in its folder).
pub(crate) fn wanted(
    runner: &Runner,
    role: &gatehouse_agent::Role,
    workspace: &gatehouse_events::RunWorkspace,
    root: &Path,
) -> (Vec<String>, Vec<Checkout>) {
    let mut names = role.skills.clone();
    if let Some(project) = runner.options.project_skills.get(&workspace.project) {
        names.extend(project.iter().cloned());
    }
    let several = workspace.repositories.len() > 1;
    let checkouts = workspace
        .repositories
        .iter()
        .map(|r| Checkout {
            repo: r.repo.clone(),
            dir: if several {
                root.join(r.dir())
            } else {
                root.to_owned()
            },
        })
        .collect();
    (names, checkouts)
}

/// `Ok(Err(reason))`: a skill was refused, which fails the attempt before the agent runs.
type Step<T> = Result<Result<T, String>, HandlerError>;

impl Runner {
    /// Pins (at the run's first use) or reads back (after) the skills `names` attaches and
    /// those of `checkouts`, and writes them into `inputs`/[`SKILLS_DIR`].
    pub(crate) async fn attach_skills(
        &self,
        run: Uuid,
        names: &[String],
        checkouts: Vec<Checkout>,
        inputs: &Path,
    ) -> Step<Attached> {
        // Nothing attached and no repository to hold any: no store access at all.
        if names.is_empty() && checkouts.is_empty() {
            return Ok(Ok(Attached::default()));
        }
        let configured: BTreeSet<&String> = names.iter().collect();
        let mut skills: Vec<(PinnedSkill, SkillFiles)> = Vec::new();
        for name in &configured {
            let pinned = match self.frozen_skill(run, name).await? {
                Ok(Some(pinned)) => pinned,
                Err(reason) => return Ok(Err(reason)),
                Ok(None) => {
                    let Some(source) = self.options.skills.get(*name) else {
                        return Ok(Err(format!(
                            "skill `{name}` is not configured (add [skills.{name}] with `path` or `git` and `rev`)"
                        )));
                    };
                    match self.pin(run, name, source.clone(), None).await? {
                        Ok(pinned) => pinned,
                        Err(reason) => return Ok(Err(reason)),
                    }
                }
            };
            skills.push(pinned);
        }
        let repository = match self.repository_skills(run, &configured, checkouts).await? {
            Ok(found) => found,
            Err(reason) => return Ok(Err(reason)),
        };
        skills.extend(repository);
        if skills.is_empty() {
            return Ok(Ok(Attached::default()));
        }
        let dir = inputs.join(SKILLS_DIR);
        let files: Vec<SkillFiles> = skills.iter().map(|(_, f)| f.clone()).collect();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            for skill in &files {
                folder::write(&dir, skill)?;
            }
            Ok(())
        })
        .await??;
        let mut listed: Vec<(String, String)> = skills
            .into_iter()
            .map(|(p, f)| (f.name().to_owned(), p.description))
            .collect();
        listed.sort();
        Ok(Ok(Attached { listed }))
    }

    /// The repository skills: those frozen in the run's list, or at its first use those
    /// found in the checkouts (a configured name wins over a repository's skill of the same
    /// name), each pinned, then the list frozen.
    async fn repository_skills(
        &self,
        run: Uuid,
        configured: &BTreeSet<&String>,
        checkouts: Vec<Checkout>,
    ) -> Step<Vec<(PinnedSkill, SkillFiles)>> {
        let (kind, key) = REPOSITORY_SET;
        let mut skills = Vec::new();
        if let Some(body) = self.store.frozen_setting(run, kind, key).await? {
            let names: Vec<String> = serde_json::from_str(&body)?;
            for name in names {
                match self.frozen_skill(run, &name).await? {
                    Ok(Some(pinned)) => skills.push(pinned),
                    Ok(None) => {
                        return Ok(Err(format!(
                            "skill `{name}` was listed for this run but never pinned; start the run again"
                        )));
                    }
                    Err(reason) => return Ok(Err(reason)),
                }
            }
            return Ok(Ok(skills));
        }
        let found = tokio::task::spawn_blocking(move || {
            let mut found: BTreeMap<String, Checkout> = BTreeMap::new();
            for checkout in checkouts {
                let names = folder::repository_skills(&checkout.dir)
                    .map_err(|e| format!("{}: {e}", checkout.repo))?;
                for name in names {
                    if let Some(first) = found.get(&name) {
                        return Err(format!(
                            "skill `{name}` is in both {} and {}; rename one of the folders",
                            first.repo, checkout.repo
                        ));
                    }
                    found.insert(
                        name,
                        Checkout {
                            repo: checkout.repo.clone(),
                            dir: checkout.dir.clone(),
                        },
                    );
                }
            }
            Ok(found)
        })
        .await?;
        let found = match found {
            Ok(found) => found,
            Err(reason) => return Ok(Err(reason)),
        };
        let mut names = Vec::new();
        for (name, checkout) in found {
            if configured.contains(&name) {
                continue;
            }
            let source = SkillSource::Repository {
                repo: checkout.repo.clone(),
            };
            match self.pin(run, &name, source, Some(checkout.dir)).await? {
                Ok(pinned) => skills.push(pinned),
                Err(reason) => return Ok(Err(reason)),
            }
            names.push(name);
        }
        self.store
            .freeze_setting(run, kind, key, &serde_json::to_string(&names)?, false)
            .await?;
        Ok(Ok(skills))
    }

    /// Reads skill `name` from `source` (a repository's from `checkout`), stores its bundle
    /// and freezes it; when another attempt froze it first, that one is read back instead.
    async fn pin(
        &self,
        run: Uuid,
        name: &str,
        source: SkillSource,
        checkout: Option<PathBuf>,
    ) -> Step<(PinnedSkill, SkillFiles)> {
        let files = match self.read_skill(name, &source, checkout).await? {
            Ok(files) => files,
            Err(reason) => return Ok(Err(reason)),
        };
        let description = match files.check() {
            Ok(front) => front.description,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let bundle = Bytes::from(files.encode());
        let digest = Digest::of(&bundle);
        patiently("storing a skill", || self.blobs.put_bytes(bundle.clone())).await?;
        let ours = PinnedSkill {
            source,
            digest: digest.as_str().to_owned(),
            description,
        };
        let body = self
            .store
            .freeze_setting(
                run,
                PINNED_KIND,
                name,
                &serde_json::to_string(&ours)?,
                false,
            )
            .await?;
        let frozen: PinnedSkill = serde_json::from_str(&body)?;
        if frozen == ours {
            return Ok(Ok((ours, files)));
        }
        self.fetch(name, frozen).await
    }

    /// Reads a skill's files from where its source says.
    async fn read_skill(
        &self,
        name: &str,
        source: &SkillSource,
        checkout: Option<PathBuf>,
    ) -> Step<SkillFiles> {
        let name = name.to_owned();
        Ok(match source {
            SkillSource::Path { path } => {
                let base = PathBuf::from(path);
                tokio::task::spawn_blocking(move || folder::read(&name, &base, "")).await?
            }
            SkillSource::Repository { .. } => {
                let Some(base) = checkout else {
                    return Ok(Err(format!(
                        "skill `{name}`: its repository is not checked out"
                    )));
                };
                let prefix = format!("{}/{name}/", gatehouse_agent::REPOSITORY_SKILLS_DIR);
                tokio::task::spawn_blocking(move || folder::read(&name, &base, &prefix)).await?
            }
            SkillSource::Git { url, rev, subdir } => {
                let cache = self.options.data_dir.join("skills-git");
                git::read(&name, url, rev, subdir.as_deref(), &cache).await
            }
        })
    }

    /// The run's frozen skill `name`, its files read back from the blob store.
    async fn frozen_skill(&self, run: Uuid, name: &str) -> Step<Option<(PinnedSkill, SkillFiles)>> {
        let Some(body) = self.store.frozen_setting(run, PINNED_KIND, name).await? else {
            return Ok(Ok(None));
        };
        let pinned: PinnedSkill = serde_json::from_str(&body)?;
        Ok(self.fetch(name, pinned).await?.map(Some))
    }

    /// A pinned skill's files from the blob store, which checks them against the digest.
    /// `Ok(Err(reason))`: they are not there, or not a skill's bundle, which fails the
    /// attempt (a store that stays unreachable hands the job back).
    async fn fetch(&self, name: &str, pinned: PinnedSkill) -> Step<(PinnedSkill, SkillFiles)> {
        let digest: Digest = pinned.digest.parse()?;
        let got = patiently("fetching a skill", || {
            self.blobs.get_bytes(&digest, MAX_BUNDLE)
        })
        .await;
        let bytes = match got {
            Ok(bytes) => bytes,
            Err(BlobError::NotFound(_)) => {
                return Ok(Err(format!(
                    "skill `{name}`: its pinned files ({}) are not in the blob store; with \
                     several runners, keep blobs where every runner reaches them \
                     (storage.blobs = \"nats\")",
                    &pinned.digest[..12.min(pinned.digest.len())]
                )));
            }
            Err(err) => return Err(err.into()),
        };
        Ok(match SkillFiles::decode(name, &bytes) {
            Ok(files) => Ok((pinned, files)),
            Err(e) => Err(e.to_string()),
        })
    }
}

#[cfg(test)]
mod tests;
