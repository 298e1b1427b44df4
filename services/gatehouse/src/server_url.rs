//! `<data_dir>/server.url`: where the process serving the API listens, as it bound it
//! (`--listen :0` gives a real port). It sits beside `admin.token`, so the CLI finds the
//! server that issued the token it reads, whatever port that server was given.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The file's name in the data directory.
const FILE: &str = "server.url";

/// The file in `data_dir`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

/// The URL a client on this host reaches `addr` at: an unspecified address (`0.0.0.0`,
/// `[::]`) is reached on loopback.
pub fn url_of(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

/// Removes what an earlier start left, so a start that fails leaves no address of a
/// server that is not there.
pub fn forget(data_dir: &Path) -> anyhow::Result<()> {
    let file = path(data_dir);
    match std::fs::remove_file(&file) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", file.display())),
    }
}

/// The file as this process wrote it; dropped, it is removed unless a later start in the
/// same data directory has written its own since.
pub struct Recorded {
    data_dir: PathBuf,
    url: String,
}

impl Recorded {
    /// Records `url` in `data_dir`.
    pub fn write(data_dir: &Path, url: &str) -> anyhow::Result<Self> {
        record(data_dir, url)?;
        Ok(Self {
            data_dir: data_dir.to_owned(),
            url: url.to_owned(),
        })
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        forget_if(&self.data_dir, &self.url);
    }
}

/// Removes the file if it still holds `url`.
fn forget_if(data_dir: &Path, url: &str) {
    if let Ok(Some(recorded)) = read(data_dir)
        && recorded == url
    {
        let _ = std::fs::remove_file(path(data_dir));
    }
}

/// Writes `url` to the file whole or not at all (a draft renamed over it).
fn record(data_dir: &Path, url: &str) -> anyhow::Result<()> {
    let file = path(data_dir);
    let draft = data_dir.join(format!("{FILE}.{}.tmp", uuid::Uuid::now_v7()));
    let written = std::fs::File::create(&draft)
        .and_then(|mut f| writeln!(f, "{url}").and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&draft, &file));
    if written.is_err() {
        let _ = std::fs::remove_file(&draft);
    }
    written.with_context(|| format!("writing {}", file.display()))
}

/// The URL in the file, checked; `None` when there is no file.
pub fn read(data_dir: &Path) -> anyhow::Result<Option<String>> {
    let file = path(data_dir);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let text = text.trim();
    match url::Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            Ok(Some(text.to_owned()))
        }
        _ => anyhow::bail!(
            "{} does not hold a server URL; delete it, or pass --server URL",
            file.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_addresses_are_reached_on_loopback() {
        let url = |s: &str| url_of(s.parse().unwrap());
        assert_eq!(url("0.0.0.0:8081"), "http://127.0.0.1:8081");
        assert_eq!(url("[::]:8081"), "http://[::1]:8081");
        assert_eq!(url("10.1.2.3:80"), "http://10.1.2.3:80");
    }

    #[test]
    fn recorded_urls_read_back_and_anything_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        record(dir.path(), "http://127.0.0.1:8081").unwrap();
        assert_eq!(
            read(dir.path()).unwrap().as_deref(),
            Some("http://127.0.0.1:8081")
        );
        forget_if(dir.path(), "http://127.0.0.1:9999");
        assert!(path(dir.path()).exists(), "another start's address stays");
        forget_if(dir.path(), "http://127.0.0.1:8081");
        assert!(!path(dir.path()).exists());
        forget(dir.path()).unwrap();
        std::fs::write(path(dir.path()), "file:///etc/passwd\n").unwrap();
        let error = read(dir.path()).unwrap_err().to_string();
        assert!(error.ends_with("does not hold a server URL; delete it, or pass --server URL"));
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no drafts are left behind");
    }
}
