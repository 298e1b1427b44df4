//! `[storage]`: where artifacts, workspace checkpoints and other blobs are kept.

use serde::{Deserialize, Serialize};

/// `[storage]`
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// `local` (the data directory) or `nats` (the JetStream object store every process
    /// reaches, so no two need a shared disk). Unset: `nats` when `server.nats_url` is
    /// set, else `local`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blobs: Option<BlobBackend>,
}

/// A blob store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlobBackend {
    Local,
    Nats,
}

impl StorageConfig {
    /// The store this deployment uses: as configured, else by its bus.
    pub fn backend(&self, nats_url: &str) -> BlobBackend {
        self.blobs.unwrap_or(if nats_url.is_empty() {
            BlobBackend::Local
        } else {
            BlobBackend::Nats
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bus_decides_unless_the_file_does() {
        let unset = StorageConfig::default();
        assert_eq!(unset.backend(""), BlobBackend::Local);
        assert_eq!(unset.backend("nats://127.0.0.1:4222"), BlobBackend::Nats);
        let local = StorageConfig {
            blobs: Some(BlobBackend::Local),
        };
        assert_eq!(local.backend("nats://127.0.0.1:4222"), BlobBackend::Local);
    }
}
