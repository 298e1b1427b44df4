//! Forwarding: each accepted TCP connection joined to a fresh connection to its Unix
//! socket, bytes copied both ways on threads of their own until both sides are done.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// Connections open at once across all ports; more are closed as soon as accepted. Each
/// costs two threads, which count against a container's pids limit.
pub const MAX_CONNECTIONS: usize = 256;
/// A copying thread needs little: `io::copy` keeps an 8 KiB buffer on its stack.
const STACK_SIZE: usize = 64 * 1024;
/// How long to wait before accepting again after `accept` failed (out of descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Failures said on stderr (the job's output) at most this many times each, so a client
/// retrying in a loop cannot flood it.
const MAX_REPORTS: usize = 3;

/// The connections open now, bounded by a limit.
#[derive(Debug)]
pub struct Slots {
    open: AtomicUsize,
    limit: usize,
    refused: AtomicUsize,
    failed: AtomicUsize,
}

/// One taken slot, given back when dropped.
#[derive(Debug)]
struct Slot(Arc<Slots>);

impl Slots {
    /// Room for `limit` connections.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            open: AtomicUsize::new(0),
            limit,
            refused: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        })
    }

    /// A slot, unless `limit` connections are open.
    fn take(self: &Arc<Self>) -> Option<Slot> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.limit).then_some(open + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(self)))
    }

    /// Says `message` on stderr unless `counter` says it was said often enough.
    fn report(counter: &AtomicUsize, message: impl FnOnce() -> String) {
        if counter.fetch_add(1, Ordering::Relaxed) < MAX_REPORTS {
            eprintln!("gatehouse-relay: {}", message());
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts on `listener` forever on a thread of its own, joining each connection to
/// `socket`.
pub fn serve(listener: TcpListener, socket: PathBuf, slots: Arc<Slots>) -> io::Result<()> {
    let socket = Arc::new(socket);
    thread::Builder::new()
        .name("relay-accept".into())
        .stack_size(STACK_SIZE)
        .spawn(move || {
            loop {
                match listener.accept() {
                    Ok((tcp, _)) => accepted(tcp, &socket, &slots),
                    Err(e) => {
                        Slots::report(&slots.failed, || format!("accepting failed: {e}"));
                        thread::sleep(ACCEPT_BACKOFF);
                    }
                }
            }
        })
        .map(drop)
}

/// Starts joining `tcp` to `socket`, or closes it when no slot or thread is free.
fn accepted(tcp: TcpStream, socket: &Arc<PathBuf>, slots: &Arc<Slots>) {
    let Some(slot) = slots.take() else {
        Slots::report(&slots.refused, || {
            format!("{MAX_CONNECTIONS} connections are open; refusing more")
        });
        return;
    };
    let socket = Arc::clone(socket);
    let spawned = thread::Builder::new()
        .name("relay-conn".into())
        .stack_size(STACK_SIZE)
        .spawn(move || {
            let _slot = slot;
            join(tcp, &socket);
        });
    if let Err(e) = spawned {
        Slots::report(&slots.failed, || format!("starting a thread failed: {e}"));
    }
}

/// Copies both ways between `tcp` and a new connection to `socket` until both are done.
fn join(tcp: TcpStream, socket: &Path) {
    let unix = match UnixStream::connect(socket) {
        Ok(unix) => unix,
        Err(e) => {
            // Closing the TCP connection tells the client; once is enough on stderr.
            static FAILED: AtomicUsize = AtomicUsize::new(0);
            Slots::report(&FAILED, || {
                format!("connecting to {} failed: {e}", socket.display())
            });
            return;
        }
    };
    let _ = tcp.set_nodelay(true);
    let (Ok(tcp_in), Ok(unix_out)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let upstream = thread::Builder::new()
        .name("relay-up".into())
        .stack_size(STACK_SIZE)
        .spawn(move || copy(tcp_in, unix_out));
    // Without the second thread the connection cannot be served: both ends close.
    if let Ok(upstream) = upstream {
        copy(unix, tcp);
        let _ = upstream.join();
    }
}

/// The two ends of a copy: reading from one, writing to the other, shutting either down.
trait Half: io::Read + io::Write {
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
}

impl Half for TcpStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        TcpStream::shutdown(self, how)
    }
}

impl Half for UnixStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        UnixStream::shutdown(self, how)
    }
}

/// Copies `from` to `to` until `from` ends, then passes the end on (a half close, so a
/// client that shuts its writing side still gets its answer). A failed copy shuts both
/// down completely, which also ends the copy the other way.
fn copy(mut from: impl Half, mut to: impl Half) {
    match io::copy(&mut from, &mut to) {
        Ok(_) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    use super::*;

    /// A Unix socket echoing what it reads, upper-cased, until the writer is done.
    fn echo_server(dir: &Path) -> PathBuf {
        let path = dir.join("echo.sock");
        let listener = UnixListener::bind(&path).unwrap();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    stream.read_to_end(&mut got).unwrap();
                    stream.write_all(&got.to_ascii_uppercase()).unwrap();
                });
            }
        });
        path
    }

    fn relay(socket: PathBuf, slots: Arc<Slots>) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, socket, slots).unwrap();
        addr
    }

    #[test]
    fn bytes_go_both_ways_and_a_half_close_still_gets_the_answer() {
        let dir = tempdir();
        let addr = relay(echo_server(dir.path()), Slots::new(4));
        let mut tcp = TcpStream::connect(addr).unwrap();
        let big = "abc".repeat(100_000);
        tcp.write_all(big.as_bytes()).unwrap();
        tcp.shutdown(Shutdown::Write).unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, big.to_uppercase());
    }

    #[test]
    fn connections_beyond_the_limit_are_closed_and_slots_come_back() {
        let dir = tempdir();
        let slots = Slots::new(1);
        let addr = relay(echo_server(dir.path()), Arc::clone(&slots));
        let first = TcpStream::connect(addr).unwrap();
        wait_until(|| slots.open.load(Ordering::Acquire) == 1);
        let mut second = TcpStream::connect(addr).unwrap();
        second
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buffer = [0; 1];
        // Closed at once: end of stream (or a reset), never a wait.
        assert!(matches!(second.read(&mut buffer), Ok(0) | Err(_)));
        first.shutdown(Shutdown::Both).unwrap();
        drop(first);
        wait_until(|| slots.open.load(Ordering::Acquire) == 0);
        let mut third = TcpStream::connect(addr).unwrap();
        third.write_all(b"ok").unwrap();
        third.shutdown(Shutdown::Write).unwrap();
        let mut answer = String::new();
        third.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "OK");
    }

    #[test]
    fn a_missing_socket_closes_the_connection() {
        let dir = tempdir();
        let addr = relay(dir.path().join("absent.sock"), Slots::new(4));
        let mut tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buffer = [0; 1];
        assert!(matches!(tcp.read(&mut buffer), Ok(0) | Err(_)));
    }

    fn wait_until(condition: impl Fn() -> bool) {
        for _ in 0..500 {
            if condition() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        panic!("condition not met within 5 s");
    }

    fn tempdir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }
}
