//! A nats-server of a test's own (the machine's binary on a free port with its own
//! storage), so a test can kill and restart NATS without disturbing any other test.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits up to 10 s until something listens on `port`.
pub fn wait_for_port(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on port {port}");
}

/// A nats-server of this test's own; killed when dropped.
pub struct PrivateNats {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl PrivateNats {
    /// Starts it with JetStream on a free port.
    pub fn start() -> Self {
        let port = free_port();
        let mut nats = Self {
            port,
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        nats.restart();
        nats
    }

    /// Its client URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts it again on the same port and storage (after [`PrivateNats::kill`]).
    pub fn restart(&mut self) {
        let binary = std::env::var("GATEHOUSE_TEST_NATS_SERVER")
            .unwrap_or_else(|_| "/usr/sbin/nats-server".into());
        let child = Command::new(binary)
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server is installed");
        self.child = Some(child);
        wait_for_port(self.port);
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for PrivateNats {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one durable JetStream consumer has not settled yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerBacklog {
    /// Its stream (`<PREFIX>_EVENTS` or `<PREFIX>_JOBS`).
    pub stream: String,
    /// The durable consumer's name.
    pub consumer: String,
    /// Messages of the stream it has not been given yet.
    pub pending: u64,
    /// Messages it was given and has not acknowledged yet.
    pub ack_pending: usize,
}

/// Every durable consumer of `prefix`'s two streams on the NATS at `url`, with what it has
/// left: how a test proves that no message was left unacknowledged. An error when NATS
/// or a stream does not answer.
pub async fn consumer_backlogs(
    url: &str,
    prefix: &gatehouse_events::Prefix,
) -> Result<Vec<ConsumerBacklog>, String> {
    use futures::TryStreamExt;
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(2))
        .connect(url)
        .await
        .map_err(|e| format!("connecting to {url}: {e}"))?;
    let js = async_nats::jetstream::new(client);
    let mut backlogs = Vec::new();
    for kind in [
        gatehouse_events::StreamKind::Events,
        gatehouse_events::StreamKind::Jobs,
    ] {
        let name = prefix.stream_name(kind);
        let stream = js
            .get_stream(&name)
            .await
            .map_err(|e| format!("stream {name}: {e}"))?;
        let infos: Vec<_> = stream
            .consumers()
            .try_collect()
            .await
            .map_err(|e| format!("consumers of {name}: {e}"))?;
        backlogs.extend(infos.into_iter().map(|info| ConsumerBacklog {
            stream: name.clone(),
            consumer: info.name,
            pending: info.num_pending,
            ack_pending: info.num_ack_pending,
        }));
    }
    backlogs.sort_by(|a, b| (&a.stream, &a.consumer).cmp(&(&b.stream, &b.consumer)));
    Ok(backlogs)
}
