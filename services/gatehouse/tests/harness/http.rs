//! Plain HTTP to a process under test, over a fresh loopback connection each time: what the
//! probes answer, and the wait until `/readyz` says 200.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long a process may take to become ready on a loaded test machine.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A GET to `port` over a fresh connection: the status and the body.
pub fn get(port: u16, path: &str, token: Option<&str>) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(parse(&answer))
}

/// The status and the body of an HTTP answer as read off the wire (status 0 when there is
/// none).
pub fn parse(answer: &str) -> (u16, String) {
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .find("\r\n\r\n")
        .map_or("", |i| &answer[i + 4..])
        .to_owned();
    (status, body)
}

/// Whether `port` answers `/readyz` with 200.
pub fn ready(port: u16) -> bool {
    get(port, "/readyz", None).is_ok_and(|(status, _)| status == 200)
}

/// Waits until `port` answers `/readyz` with 200; else fails naming `what`, its last
/// answer and what `why_not` says (its log, say).
pub fn wait_ready(port: u16, what: &str, why_not: impl Fn() -> String) {
    let start = Instant::now();
    while start.elapsed() < READY_WITHIN {
        if ready(port) {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!(
        "{what} never became ready on {port}: {:?}\n{}",
        get(port, "/readyz", None),
        why_not()
    );
}

/// `X-Hub-Signature-256` for `body` signed with `secret`, as GitHub sends it.
pub fn github_signature(secret: &[u8], body: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}
