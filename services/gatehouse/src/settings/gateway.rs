//! `[providers]` turned into what the runner's model gateway forwards to: each provider's
//! address and its key, read now so a missing key stops the start rather than a node.

use anyhow::Context;
use gatehouse_gateway::{Provider, ProviderKind};

use crate::config::{Config, ProviderKindConfig};

/// Every configured provider with its key resolved.
pub fn providers(config: &Config) -> anyhow::Result<Vec<Provider>> {
    config
        .providers
        .iter()
        .map(|(name, p)| {
            let base_url = p
                .base_url()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("providers.{name}"))?;
            let key = p
                .key
                .resolve()
                .with_context(|| format!("providers.{name}.key"))?;
            Ok(Provider {
                name: name.clone(),
                kind: match p.kind {
                    ProviderKindConfig::Anthropic => ProviderKind::Anthropic,
                    ProviderKindConfig::Openai => ProviderKind::OpenAi,
                    ProviderKindConfig::OpenaiCompatible => ProviderKind::OpenAiCompatible,
                    ProviderKindConfig::Gemini => ProviderKind::Gemini,
                },
                base_url,
                key,
            })
        })
        .collect()
}

/// The relay binary isolated sandboxes run: `[runner] relay`, which must exist, else a
/// `gatehouse-relay` beside this binary, else none (attempts that need it fail saying so).
pub fn relay(config: &Config) -> anyhow::Result<Option<std::path::PathBuf>> {
    if let Some(path) = &config.runner.relay {
        anyhow::ensure!(
            path.is_file(),
            "runner.relay: {} is not a file; build it with deploy/sandbox/build-relay.sh",
            path.display()
        );
        anyhow::ensure!(
            is_static(path),
            "runner.relay: {} is linked dynamically, so it would not start in an image without \
             the same C library; build the static one with deploy/sandbox/build-relay.sh",
            path.display()
        );
        return Ok(Some(std::path::absolute(path)?));
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("gatehouse-relay")))
        .filter(|path| path.is_file() && is_static(path));
    Ok(beside)
}

/// The `gatehouse-acp` shim `acp` roles run: `[runner] acp`, which must exist and be
/// static, else a `gatehouse-acp` beside the relay binary (`relay`, as [`relay`] found it),
/// else none (`acp` attempts fail saying how to build it).
pub fn acp(
    config: &Config,
    relay: Option<&std::path::Path>,
) -> anyhow::Result<Option<std::path::PathBuf>> {
    if let Some(path) = &config.runner.acp {
        anyhow::ensure!(
            path.is_file(),
            "runner.acp: {} is not a file; build it with deploy/sandbox/build-relay.sh",
            path.display()
        );
        anyhow::ensure!(
            is_static(path),
            "runner.acp: {} is linked dynamically, so it would not start in an image without \
             the same C library; build the static one with deploy/sandbox/build-relay.sh",
            path.display()
        );
        return Ok(Some(std::path::absolute(path)?));
    }
    let beside = relay
        .and_then(|relay| Some(relay.parent()?.join("gatehouse-acp")))
        .filter(|path| path.is_file() && is_static(path));
    Ok(beside)
}

/// Whether the ELF file at `path` needs no dynamic loader: its program headers, at the
/// start of the file, name none (`PT_INTERP` holds the loader's path).
fn is_static(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4096];
    let Ok(read) = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)) else {
        return false;
    };
    let head = &head[..read];
    head.starts_with(b"\x7fELF") && !head.windows(7).any(|w| w == b"ld-linu")
}

#[cfg(test)]
mod tests {
    use super::acp;
    use crate::config::Config;

    /// A file that reads as a static ELF binary (no loader named in its head).
    fn static_elf(path: &std::path::Path) {
        let mut bytes = b"\x7fELF".to_vec();
        bytes.resize(64, 0);
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn the_acp_shim_is_the_configured_one_else_the_one_beside_the_relay() {
        let dir = tempfile::tempdir().unwrap();
        let relay = dir.path().join("gatehouse-relay");
        static_elf(&relay);
        let config = Config::default();
        assert_eq!(acp(&config, Some(&relay)).unwrap(), None);
        let beside = dir.path().join("gatehouse-acp");
        static_elf(&beside);
        assert_eq!(acp(&config, Some(&relay)).unwrap(), Some(beside.clone()));
        assert_eq!(acp(&config, None).unwrap(), None);

        let mut configured = Config::default();
        configured.runner.acp = Some(dir.path().join("missing"));
        let error = acp(&configured, Some(&relay)).unwrap_err().to_string();
        assert!(
            error.starts_with("runner.acp: ") && error.contains("is not a file"),
            "{error}"
        );
        let dynamic = dir.path().join("dynamic");
        std::fs::write(&dynamic, b"\x7fELF /lib64/ld-linux-x86-64.so.2").unwrap();
        configured.runner.acp = Some(dynamic);
        let error = acp(&configured, None).unwrap_err().to_string();
        assert!(error.contains("is linked dynamically"), "{error}");
        configured.runner.acp = Some(beside.clone());
        assert_eq!(acp(&configured, None).unwrap(), Some(beside));
    }
}
