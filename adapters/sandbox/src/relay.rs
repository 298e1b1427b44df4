//! The relay a job may run behind: the only way out of a sandbox without a network, to the
//! runner's Unix sockets (its model gateway and egress proxy).

use std::collections::BTreeSet;
use std::path::PathBuf;

use thiserror::Error;

/// At most this many forwards (the relay's own limit).
pub const MAX_FORWARDS: usize = 16;
/// The longest socket path a Unix socket address holds (`sun_path`, less its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// `gatehouse-relay` (built by deploy/sandbox/build-relay.sh) and the ports it forwards.
/// With one, the script reaches `127.0.0.1:PORT` for each forward and nothing else: a
/// container keeps its profile's network (`none` by default) and gets the binary and the
/// sockets mounted read-only; a process runs in new user, network and pid namespaces
/// where the kernel allows it (see [`crate::ProcessSandbox::namespaces_work`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    /// The static relay binary on the host.
    pub binary: PathBuf,
    /// The ports and the sockets behind them.
    pub forwards: Vec<Forward>,
}

/// One loopback port inside the sandbox and the Unix socket its connections reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// The port on 127.0.0.1 the script connects to.
    pub port: u16,
    /// The host path of a Unix socket the runner serves, which the sandbox's user must be
    /// able to connect to (mode 0666).
    pub socket: PathBuf,
}

/// Why a relay cannot be used as given.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RelayError {
    /// No forwards: a relay would do nothing.
    #[error("the relay has no forwards; give at least one port and socket")]
    NoForwards,
    /// More than [`MAX_FORWARDS`].
    #[error("the relay has {0} forwards; at most {MAX_FORWARDS} are allowed")]
    TooMany(usize),
    /// Port 0.
    #[error("a relay forward has port 0; give a fixed port")]
    PortZero,
    /// The same port twice.
    #[error("the relay forwards port {0} twice")]
    DuplicatePort(u16),
    /// A socket path the relay cannot take.
    #[error("relay socket `{0}` must be an absolute UTF-8 path of at most {MAX_SOCKET_PATH} bytes")]
    BadSocket(PathBuf),
}

impl Relay {
    /// Checks the forwards (the binary and sockets are checked when the job starts).
    pub fn check(&self) -> Result<(), RelayError> {
        if self.forwards.is_empty() {
            return Err(RelayError::NoForwards);
        }
        if self.forwards.len() > MAX_FORWARDS {
            return Err(RelayError::TooMany(self.forwards.len()));
        }
        let mut ports = BTreeSet::new();
        for forward in &self.forwards {
            if forward.port == 0 {
                return Err(RelayError::PortZero);
            }
            if !ports.insert(forward.port) {
                return Err(RelayError::DuplicatePort(forward.port));
            }
            let usable = forward
                .socket
                .to_str()
                .is_some_and(|s| s.starts_with('/') && s.len() <= MAX_SOCKET_PATH);
            if !usable {
                return Err(RelayError::BadSocket(forward.socket.clone()));
            }
        }
        Ok(())
    }

    /// The relay's arguments up to and including `--`, each forward's socket as
    /// `socket(i, forward)` names it where the relay runs.
    pub(crate) fn arguments(&self, socket: impl Fn(usize, &Forward) -> String) -> Vec<String> {
        let mut arguments = Vec::with_capacity(self.forwards.len() * 2 + 1);
        for (i, forward) in self.forwards.iter().enumerate() {
            arguments.push("--forward".into());
            arguments.push(format!("127.0.0.1:{}={}", forward.port, socket(i, forward)));
        }
        arguments.push("--".into());
        arguments
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay(ports: &[u16]) -> Relay {
        Relay {
            binary: "/bin/relay".into(),
            forwards: ports
                .iter()
                .map(|&port| Forward {
                    port,
                    socket: format!("/run/{port}.sock").into(),
                })
                .collect(),
        }
    }

    #[test]
    fn forwards_are_checked() {
        assert_eq!(relay(&[8080, 3128]).check(), Ok(()));
        assert_eq!(relay(&[]).check(), Err(RelayError::NoForwards));
        assert_eq!(relay(&[0]).check(), Err(RelayError::PortZero));
        assert_eq!(relay(&[1, 1]).check(), Err(RelayError::DuplicatePort(1)));
        let mut relative = relay(&[1]);
        relative.forwards[0].socket = "gw.sock".into();
        assert_eq!(
            relative.check(),
            Err(RelayError::BadSocket("gw.sock".into()))
        );
        let mut long = relay(&[1]);
        long.forwards[0].socket = format!("/{}", "a".repeat(107)).into();
        assert!(matches!(long.check(), Err(RelayError::BadSocket(_))));
        let many: Vec<u16> = (1..=17).collect();
        assert_eq!(relay(&many).check(), Err(RelayError::TooMany(17)));
    }

    #[test]
    fn arguments_name_each_socket_as_seen_where_the_relay_runs() {
        assert_eq!(
            relay(&[8080, 3128]).arguments(|i, _| format!("/gatehouse/sockets/{i}.sock")),
            [
                "--forward",
                "127.0.0.1:8080=/gatehouse/sockets/0.sock",
                "--forward",
                "127.0.0.1:3128=/gatehouse/sockets/1.sock",
                "--",
            ]
        );
    }
}
