//! `[skills.NAME]`: folders with a `SKILL.md` that roles (`skills = [...]`) and projects
//! attach to their agents, from a directory on the runner's host or a git repository at a
//! pinned commit. A project's repositories' own `.gatehouse/skills/` need no entry here.

use std::collections::BTreeMap;
use std::path::Path;

use gatehouse_agent::{SkillConfig, SkillSource};

use super::{Config, ConfigError};

impl Config {
    /// Resolves each `[skills.NAME] path` that is relative against `base`, the folder of
    /// the configuration file, so a runner started elsewhere reads the same folder.
    pub(super) fn resolve_skill_paths(&mut self, base: &Path) {
        for skill in self.skills.values_mut() {
            if let Some(path) = &skill.path
                && Path::new(path).is_relative()
                && !path.trim().is_empty()
            {
                skill.path = Some(base.join(path).to_string_lossy().into_owned());
            }
        }
    }

    /// Checks every `[skills.NAME]` (a name skills may have; `path` or `git` with a commit
    /// `rev`, not both) and every name a role or project attaches.
    pub(super) fn check_skills(&self) -> Result<(), ConfigError> {
        for (name, skill) in &self.skills {
            skill
                .source(name)
                .map_err(|e| ConfigError::Inconsistent(format!("skills.{name}: {e}")))?;
        }
        let known = || {
            if self.skills.is_empty() {
                "none is configured".to_owned()
            } else {
                format!(
                    "the skills are {}",
                    self.skills.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            }
        };
        let attached = self
            .roles
            .iter()
            .map(|(name, role)| (format!("roles.{name}"), &role.skills))
            .chain(
                self.projects
                    .iter()
                    .map(|p| (format!("project `{}`", p.name), &p.skills)),
            );
        for (whose, skills) in attached {
            for skill in skills {
                if !self.skills.contains_key(skill) {
                    return Err(ConfigError::Inconsistent(format!(
                        "{whose}: skill `{skill}` is not configured (add [skills.{skill}] with \
                         `path` or `git` and `rev`); {}",
                        known()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The skills' checked sources by name, for the runner; call after the configuration
    /// loaded (which checked them).
    pub fn skill_sources(&self) -> BTreeMap<String, SkillSource> {
        self.skills
            .iter()
            .filter_map(|(name, skill)| Some((name.clone(), skill.source(name).ok()?)))
            .collect()
    }

    /// The skills each project attaches to all its agents, by project name.
    pub fn project_skills(&self) -> BTreeMap<String, Vec<String>> {
        self.projects
            .iter()
            .filter(|p| !p.skills.is_empty())
            .map(|p| (p.name.clone(), p.skills.clone()))
            .collect()
    }
}

/// The configuration's `[skills]` table.
pub type SkillsConfig = BTreeMap<String, SkillConfig>;
