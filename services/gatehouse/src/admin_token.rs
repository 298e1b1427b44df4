//! The first admin token: written to the data directory on first start, so whoever
//! started Gatehouse can use the API at once, and registered in the store on every start.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context;
use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scopes, hash_token, new_token};
use gatehouse_store::{NewToken, Store};

/// Writes an admin token to `path` (mode 0600) on first start, and makes sure the store
/// knows it on every start (a fresh database keeps working with the old file). Replicas
/// sharing a data directory may start together: the file appears whole or not at all (a
/// hard link of a finished file), the first one wins, and the others adopt its token.
pub async fn ensure_admin_token(store: &Store, path: &Path) -> anyhow::Result<()> {
    let token = match read_token(path)? {
        Some(token) => token,
        None => {
            let token = new_token();
            let draft = path.with_extension(format!("{}.tmp", uuid::Uuid::now_v7()));
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&draft)
                .with_context(|| format!("writing {}", draft.display()))?;
            writeln!(file, "{token}")?;
            drop(file);
            let linked = std::fs::hard_link(&draft, path);
            let _ = std::fs::remove_file(&draft);
            match linked {
                Ok(()) => token,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_token(path)?
                    .with_context(|| format!("{} vanished while being read", path.display()))?,
                Err(e) => return Err(e).with_context(|| format!("writing {}", path.display())),
            }
        }
    };
    let hash = hash_token(&token);
    // Named `admin`, or after its hash when an earlier admin token holds that name (the
    // file was replaced while the database stayed).
    for name in [
        BOOTSTRAP_ADMIN.to_owned(),
        format!("{BOOTSTRAP_ADMIN}-{}", &hash[..8]),
    ] {
        match store.token_by_hash(&hash).await? {
            Some(row) if row.revoked_at.is_some() => {
                tracing::warn!(token = %row.name, file = %path.display(),
                    "the admin token in this file was revoked; delete the file and restart for a new one");
                return Ok(());
            }
            Some(_) => return Ok(()),
            None => {}
        }
        let new = NewToken {
            name: &name,
            person: BOOTSTRAP_ADMIN,
            created_by: BOOTSTRAP_ADMIN,
            scopes: &Scopes::all().to_stored(),
            expires_at: None,
            hash: &hash,
            for_agent: false,
        };
        // `None`: another replica registered this token in between, or the name is taken.
        if store.create_token(&new).await?.is_some() {
            return Ok(());
        }
    }
    match store.token_by_hash(&hash).await? {
        Some(_) => Ok(()),
        None => anyhow::bail!("could not register the admin token of {}", path.display()),
    }
}

/// The token in `path`, or `None` when there is no such file yet.
fn read_token(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(token) => Ok(Some(token.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replicas starting together on one data directory end up with one admin token, which
    /// the store knows, and none of them fails.
    #[tokio::test]
    async fn replicas_starting_together_share_one_admin_token() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("g.db").display());
        let store = Store::connect(&url, crate::startup_retry()).await.unwrap();
        store.migrate().await.unwrap();
        let path = dir.path().join("admin.token");
        let starts = (0..8).map(|_| ensure_admin_token(&store, &path));
        for started in futures::future::join_all(starts).await {
            started.unwrap();
        }
        let token = std::fs::read_to_string(&path).unwrap();
        let row = store
            .token_by_hash(&hash_token(token.trim()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((row.name.as_str(), row.person.as_str()), ("admin", "admin"));
        assert_eq!(row.scopes, "read,run,decide,admin");
        let drafts: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(drafts.is_empty(), "drafts left behind: {drafts:?}");
    }
}
