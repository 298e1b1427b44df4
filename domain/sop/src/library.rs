//! The SOPs a running deployment offers, replaced whole when their files change: every
//! service reads the current [`Catalog`] from one [`Library`], so an edited file becomes a
//! new version for the next run without a restart, and runs already started keep the
//! version they were frozen with (their definition is stored by version, not read from
//! here).
//!
//! A reload that finds a broken file keeps it out of the catalog and keeps its errors, for
//! `gatehouse sop list` and the console to show; the SOP's previous version is not kept in
//! its place, so what runs is always what the files say.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use crate::{Catalog, Sop, SopError};

/// Builds the catalog afresh: the files, then whatever the deployment adds (a schedule's
/// agent task) and checks (the roles its agents use).
pub type Loader = Box<dyn Fn() -> (Catalog, Vec<SopError>) + Send + Sync>;

/// The current catalog and the files that were left out of it, with a way to load both
/// again.
pub struct Library {
    loaded: RwLock<Loaded>,
    loader: Option<Loader>,
    /// The directories the loader reads, and how their files looked before the last load.
    dirs: Vec<PathBuf>,
    stamp: Mutex<FilesStamp>,
}

#[derive(Clone)]
struct Loaded {
    catalog: Arc<Catalog>,
    invalid: Arc<Vec<SopError>>,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded = self.loaded();
        f.debug_struct("Library")
            .field("sops", &loaded.catalog.iter().count())
            .field("invalid", &loaded.invalid.len())
            .field("reloads", &self.loader.is_some())
            .finish()
    }
}

/// What a reload changed, by SOP name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// SOPs that were not offered before.
    pub added: Vec<String>,
    /// SOPs offered before with another version.
    pub changed: Vec<String>,
    /// SOPs no longer offered (their file was removed, renamed or broken).
    pub removed: Vec<String>,
    /// The files left out, each with its problems.
    pub invalid: Vec<SopError>,
}

impl Reloaded {
    /// Whether any SOP is offered differently than before.
    pub fn changed_anything(&self) -> bool {
        !(self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty())
    }
}

impl Library {
    /// A catalog that never changes (tests, and a deployment that does not reload).
    pub fn fixed(catalog: Catalog) -> Self {
        Self {
            loaded: RwLock::new(Loaded {
                catalog: Arc::new(catalog),
                invalid: Arc::new(Vec::new()),
            }),
            loader: None,
            dirs: Vec::new(),
            stamp: Mutex::default(),
        }
    }

    /// Loads with `loader` now, and again on each [`Library::reload`] (and on
    /// [`Library::reload_if_changed`] once the SOP files of `dirs` changed).
    pub fn loading(dirs: Vec<PathBuf>, loader: Loader) -> Self {
        // Stamped before reading: a file changed during the load is loaded again.
        let stamp = FilesStamp::of(&dirs);
        let (catalog, invalid) = loader();
        Self {
            loaded: RwLock::new(Loaded {
                catalog: Arc::new(catalog),
                invalid: Arc::new(invalid),
            }),
            loader: Some(loader),
            dirs,
            stamp: Mutex::new(stamp),
        }
    }

    /// The SOPs offered now. Held across a request, it stays whole whatever reloads.
    pub fn current(&self) -> Arc<Catalog> {
        self.loaded().catalog
    }

    /// The SOP named `name`, as offered now.
    pub fn get(&self, name: &str) -> Option<Arc<Sop>> {
        self.loaded().catalog.shared(name)
    }

    /// The files the last load left out, with their problems.
    pub fn invalid(&self) -> Arc<Vec<SopError>> {
        self.loaded().invalid
    }

    /// Reloads when an SOP file was added, removed or changed since the last load; what
    /// changed then.
    pub fn reload_if_changed(&self) -> Option<Reloaded> {
        self.loader.as_ref()?;
        let now = FilesStamp::of(&self.dirs);
        if *self.stamp.lock().unwrap_or_else(|e| e.into_inner()) == now {
            return None;
        }
        Some(self.reload())
    }

    /// Loads the SOPs again and offers them from now on; what changed. A library made
    /// with [`Library::fixed`] changes nothing.
    pub fn reload(&self) -> Reloaded {
        let Some(loader) = &self.loader else {
            return Reloaded {
                invalid: self.invalid().to_vec(),
                ..Reloaded::default()
            };
        };
        // One reload at a time, so that the last stamp goes with the last load.
        let mut stamp = self.stamp.lock().unwrap_or_else(|e| e.into_inner());
        *stamp = FilesStamp::of(&self.dirs);
        let (catalog, invalid) = loader();
        let before = self.current();
        let versions = |c: &Catalog| -> BTreeMap<String, String> {
            c.iter()
                .map(|s| (s.name.clone(), s.version.clone()))
                .collect()
        };
        let (old, new) = (versions(&before), versions(&catalog));
        let reloaded = Reloaded {
            added: new
                .keys()
                .filter(|n| !old.contains_key(*n))
                .cloned()
                .collect(),
            changed: new
                .iter()
                .filter(|(n, v)| old.get(*n).is_some_and(|o| o != *v))
                .map(|(n, _)| n.clone())
                .collect(),
            removed: old
                .keys()
                .filter(|n| !new.contains_key(*n))
                .cloned()
                .collect(),
            invalid: invalid.clone(),
        };
        let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
        *loaded = Loaded {
            catalog: Arc::new(catalog),
            invalid: Arc::new(invalid),
        };
        reloaded
    }

    fn loaded(&self) -> Loaded {
        self.loaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// What the SOP files of some directories look like from outside — each file's path,
/// size and modification time — so that a change is noticed without reading them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilesStamp(Vec<(PathBuf, u64, Option<SystemTime>)>);

impl FilesStamp {
    /// The stamp of the `*.yaml` / `*.yml` files in `dirs` now (a directory that cannot
    /// be read counts as empty).
    pub fn of(dirs: &[impl AsRef<Path>]) -> Self {
        let mut files = Vec::new();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir.as_ref()) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let path = entry.path();
                if !path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                    continue;
                }
                let meta = std::fs::metadata(&path).ok();
                files.push((
                    path,
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                ));
            }
        }
        files.sort();
        Self(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "name: tick\nnodes:\n  a: { kind: script, run: 'true' }\n";
    const TWO: &str = "name: tick\nnodes:\n  a: { kind: script, run: 'echo 2' }\n";

    fn library(dir: &Path) -> Library {
        let dirs = vec![dir.to_path_buf()];
        let read = dirs.clone();
        Library::loading(dirs, Box::new(move || Catalog::load(&read)))
    }

    #[test]
    fn a_reload_offers_new_versions_and_reports_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tick.yaml"), ONE).unwrap();
        let library = library(dir.path());
        let first = library.get("tick").unwrap().version.clone();
        let held = library.current();

        assert_eq!(library.reload_if_changed(), None, "nothing changed");
        std::fs::write(dir.path().join("tick.yaml"), TWO).unwrap();
        std::fs::write(dir.path().join("tock.yaml"), ONE.replace("tick", "tock")).unwrap();
        let reloaded = library.reload_if_changed().expect("a change");
        assert_eq!(reloaded.changed, ["tick"]);
        assert_eq!(reloaded.added, ["tock"]);
        assert!(reloaded.removed.is_empty());
        assert_ne!(library.get("tick").unwrap().version, first);
        // A catalog taken before the reload is still the one it was.
        assert_eq!(held.get("tick").unwrap().version, first);
        assert_eq!(library.reload_if_changed(), None, "loaded already");
    }

    #[test]
    fn a_broken_file_is_left_out_with_its_error_not_kept_at_its_old_version() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tick.yaml"), ONE).unwrap();
        let library = library(dir.path());
        std::fs::write(dir.path().join("tick.yaml"), "name: tick\nnodes: [\n").unwrap();
        let reloaded = library.reload();
        assert_eq!(reloaded.removed, ["tick"]);
        assert!(library.get("tick").is_none());
        let invalid = library.invalid();
        assert_eq!(invalid.len(), 1);
        assert!(invalid[0].diagnostics[0].file.ends_with("tick.yaml"));

        std::fs::write(dir.path().join("tick.yaml"), ONE).unwrap();
        assert_eq!(library.reload().added, ["tick"]);
        assert!(library.invalid().is_empty());
    }

    #[test]
    fn the_stamp_changes_with_a_file_and_not_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tick.yaml"), ONE).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let dirs = [dir.path()];
        let before = FilesStamp::of(&dirs);
        assert_eq!(before, FilesStamp::of(&dirs));
        std::fs::write(dir.path().join("notes.txt"), "xy").unwrap();
        assert_eq!(before, FilesStamp::of(&dirs), "not an SOP file");
        std::fs::write(dir.path().join("tick.yaml"), TWO).unwrap();
        assert_ne!(before, FilesStamp::of(&dirs));
    }
}
