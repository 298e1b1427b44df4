//! `[storage]`: where artifacts, workspace checkpoints, conversations' homes and other
//! blobs are kept.

use serde::{Deserialize, Serialize};

/// `[storage]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// `local` (the data directory) or `nats` (the JetStream object store every process
    /// reaches, so no two need a shared disk). Unset: `nats` when `server.nats_url` is
    /// set, else `local`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blobs: Option<BlobBackend>,
    /// The largest pack of a workspace checkpoint: a runner takes none larger (the
    /// checkpoint fails) and fetches none recorded as larger, and never more of a pack
    /// than its manifest records.
    pub checkpoint_pack_limit: bytesize::ByteSize,
    /// The most a conversation's home (its CLI's sessions) packs to: a home past it is not
    /// saved, and a turn on another runner starts a new session. 0 saves none.
    pub conversation_home_limit: bytesize::ByteSize,
    /// What a runner's mirrors of repositories (`<data_dir>/mirrors`, one per remote,
    /// fetched before each run and shared by its workspaces) may hold together: past it,
    /// the least recently used ones no attempt holds are removed. 0 turns mirrors off:
    /// every run clones its repositories whole.
    pub mirror_limit: bytesize::ByteSize,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            blobs: None,
            checkpoint_pack_limit: bytesize::ByteSize::gib(4),
            conversation_home_limit: bytesize::ByteSize::b(gatehouse_runner::HOME_LIMIT),
            mirror_limit: bytesize::ByteSize::b(gatehouse_runner::MIRROR_LIMIT),
        }
    }
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
            ..StorageConfig::default()
        };
        assert_eq!(local.backend("nats://127.0.0.1:4222"), BlobBackend::Local);
    }

    #[test]
    fn the_checkpoint_pack_limit_reads_as_a_size() {
        let default = StorageConfig::default();
        assert_eq!(default.checkpoint_pack_limit.as_u64(), 4 << 30);
        let set: StorageConfig = toml::from_str("checkpoint_pack_limit = \"512MiB\"").unwrap();
        assert_eq!(set.checkpoint_pack_limit.as_u64(), 512 << 20);
    }

    #[test]
    fn the_conversation_home_limit_reads_as_a_size() {
        let default = StorageConfig::default();
        assert_eq!(default.conversation_home_limit.as_u64(), 16 << 20);
        let set: StorageConfig = toml::from_str("conversation_home_limit = \"4MiB\"").unwrap();
        assert_eq!(set.conversation_home_limit.as_u64(), 4 << 20);
    }
}
