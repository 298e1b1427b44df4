//! The command line: `--forward ADDR=SOCKET ... -- PROGRAM ARGS...`, checked before
//! anything is bound or run, every mistake said in a way that tells what to change.

use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// At most this many `--forward`s: a sandbox needs a handful (gateway, egress proxy), and
/// each costs a thread.
pub const MAX_FORWARDS: usize = 16;
/// `sun_path` holds 108 bytes, the terminating NUL included.
const MAX_SOCKET_PATH: usize = 107;

/// How to use the relay, printed with `--help` and after a usage error.
pub const USAGE: &str = "usage: gatehouse-relay --forward 127.0.0.1:PORT=/path/to/unix.sock \
[--forward ...] -- PROGRAM [ARGS...]";

/// One loopback TCP port and the Unix socket its connections are forwarded to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// Where the relay listens: a loopback address only.
    pub listen: SocketAddr,
    /// The Unix socket each accepted connection is joined to.
    pub socket: PathBuf,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The ports to forward, in the order given.
    pub forwards: Vec<Forward>,
    /// The program to run once every port is bound.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// Why the command line was not accepted (or `--help`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsError {
    /// `--help` or `-h`: not an error, the usage is printed and the relay exits 0.
    Help,
    /// An option the relay does not know.
    Unknown(String),
    /// `--forward` as the last argument.
    MissingValue,
    /// A `--forward` value without `=`, or not valid UTF-8.
    NotAForward(String),
    /// The part before `=` is not `IP:PORT`.
    BadAddress(String),
    /// The address is not a loopback one.
    NotLoopback(SocketAddr),
    /// Port 0 would listen on a port nobody knows.
    PortZero(String),
    /// The same address twice.
    Duplicate(SocketAddr),
    /// The socket path is not absolute, empty or too long.
    BadSocket(String),
    /// More than [`MAX_FORWARDS`].
    TooMany,
    /// No `--forward` at all: the relay would do nothing.
    NoForwards,
    /// Nothing after `--`.
    NoProgram,
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::Help => f.write_str(USAGE),
            ArgsError::Unknown(arg) => write!(
                f,
                "unknown argument `{arg}`: put the program to run after `--`"
            ),
            ArgsError::MissingValue => f.write_str("`--forward` needs a value: ADDR=SOCKET"),
            ArgsError::NotAForward(value) => write!(
                f,
                "`--forward {value}` is not ADDR=SOCKET (e.g. 127.0.0.1:8080=/gatehouse/sockets/0.sock)"
            ),
            ArgsError::BadAddress(addr) => write!(
                f,
                "`{addr}` is not an IP:PORT address (e.g. 127.0.0.1:8080)"
            ),
            ArgsError::NotLoopback(addr) => write!(
                f,
                "{addr} is not a loopback address: the relay listens on 127.0.0.1 or [::1] only"
            ),
            ArgsError::PortZero(addr) => write!(f, "`{addr}` has port 0: give a fixed port"),
            ArgsError::Duplicate(addr) => write!(f, "{addr} is forwarded twice"),
            ArgsError::BadSocket(path) => write!(
                f,
                "`{path}` is not a usable socket path: it must be absolute and at most {MAX_SOCKET_PATH} bytes"
            ),
            ArgsError::TooMany => write!(f, "at most {MAX_FORWARDS} `--forward`s"),
            ArgsError::NoForwards => f.write_str("no `--forward`: nothing to relay"),
            ArgsError::NoProgram => f.write_str("no program after `--`"),
        }
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, ArgsError> {
    let mut args = args.into_iter();
    let mut forwards: Vec<Forward> = Vec::new();
    loop {
        let Some(arg) = args.next() else {
            return Err(ArgsError::NoProgram);
        };
        let value = match arg.to_str() {
            Some("--") => break,
            Some("-h" | "--help") => return Err(ArgsError::Help),
            Some("--forward") => args.next().ok_or(ArgsError::MissingValue)?,
            Some(other) => match other.strip_prefix("--forward=") {
                Some(value) => OsString::from(value),
                None => return Err(ArgsError::Unknown(shorten(other))),
            },
            None => return Err(ArgsError::Unknown(shorten(&arg.to_string_lossy()))),
        };
        if forwards.len() == MAX_FORWARDS {
            return Err(ArgsError::TooMany);
        }
        let forward = forward(&value)?;
        if forwards.iter().any(|f| f.listen == forward.listen) {
            return Err(ArgsError::Duplicate(forward.listen));
        }
        forwards.push(forward);
    }
    if forwards.is_empty() {
        return Err(ArgsError::NoForwards);
    }
    let program = args.next().ok_or(ArgsError::NoProgram)?;
    Ok(Invocation {
        forwards,
        program,
        args: args.collect(),
    })
}

/// One `ADDR=SOCKET`.
fn forward(value: &std::ffi::OsStr) -> Result<Forward, ArgsError> {
    let text = value
        .to_str()
        .ok_or_else(|| ArgsError::NotAForward(shorten(&value.to_string_lossy())))?;
    let (addr, socket) = text
        .split_once('=')
        .ok_or_else(|| ArgsError::NotAForward(shorten(text)))?;
    let listen: SocketAddr = addr
        .parse()
        .map_err(|_| ArgsError::BadAddress(shorten(addr)))?;
    if !listen.ip().is_loopback() {
        return Err(ArgsError::NotLoopback(listen));
    }
    if listen.port() == 0 {
        return Err(ArgsError::PortZero(shorten(addr)));
    }
    if !socket.starts_with('/') || socket.len() > MAX_SOCKET_PATH {
        return Err(ArgsError::BadSocket(shorten(socket)));
    }
    Ok(Forward {
        listen,
        socket: PathBuf::from(socket),
    })
}

/// An argument quoted in an error, cut so a hostile one cannot flood the output.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 200;
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Invocation, ArgsError> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn forwards_and_the_program_are_read() {
        let invocation = parse_strs(&[
            "--forward",
            "127.0.0.1:8080=/s/gateway.sock",
            "--forward=[::1]:3128=/s/egress.sock",
            "--",
            "sh",
            "-c",
            "echo hi",
        ])
        .unwrap();
        assert_eq!(
            invocation.forwards,
            [
                Forward {
                    listen: "127.0.0.1:8080".parse().unwrap(),
                    socket: "/s/gateway.sock".into(),
                },
                Forward {
                    listen: "[::1]:3128".parse().unwrap(),
                    socket: "/s/egress.sock".into(),
                },
            ]
        );
        assert_eq!(invocation.program, "sh");
        assert_eq!(invocation.args, ["-c", "echo hi"]);
    }

    #[test]
    fn arguments_after_the_separator_are_the_programs_even_if_they_look_like_options() {
        let invocation =
            parse_strs(&["--forward", "127.0.0.1:1=/s", "--", "--forward", "--"]).unwrap();
        assert_eq!(invocation.program, "--forward");
        assert_eq!(invocation.args, ["--"]);
    }

    #[test]
    fn mistakes_are_refused() {
        let cases: &[(&[&str], ArgsError)] = &[
            (&["--", "sh"], ArgsError::NoForwards),
            (&["--forward", "127.0.0.1:1=/s"], ArgsError::NoProgram),
            (&["--forward", "127.0.0.1:1=/s", "--"], ArgsError::NoProgram),
            (&["--forward"], ArgsError::MissingValue),
            (&["sh"], ArgsError::Unknown("sh".into())),
            (
                &["--forward", "127.0.0.1:1"],
                ArgsError::NotAForward("127.0.0.1:1".into()),
            ),
            (
                &["--forward", "localhost:1=/s"],
                ArgsError::BadAddress("localhost:1".into()),
            ),
            (
                &["--forward", "0.0.0.0:1=/s"],
                ArgsError::NotLoopback("0.0.0.0:1".parse().unwrap()),
            ),
            (
                &["--forward", "10.0.0.1:1=/s"],
                ArgsError::NotLoopback("10.0.0.1:1".parse().unwrap()),
            ),
            (
                &["--forward", "127.0.0.1:0=/s"],
                ArgsError::PortZero("127.0.0.1:0".into()),
            ),
            (
                &["--forward", "127.0.0.1:1=s.sock"],
                ArgsError::BadSocket("s.sock".into()),
            ),
            (
                &["--forward", "127.0.0.1:1=/a", "--forward", "127.0.0.1:1=/b"],
                ArgsError::Duplicate("127.0.0.1:1".parse().unwrap()),
            ),
            (&["--help"], ArgsError::Help),
        ];
        for (args, expected) in cases {
            assert_eq!(parse_strs(args).as_ref(), Err(expected), "{args:?}");
        }
    }

    #[test]
    fn long_socket_paths_and_too_many_forwards_are_refused() {
        let long = format!("127.0.0.1:1=/{}", "a".repeat(MAX_SOCKET_PATH));
        assert!(matches!(
            parse_strs(&["--forward", &long, "--", "sh"]),
            Err(ArgsError::BadSocket(_))
        ));
        let mut args: Vec<String> = Vec::new();
        for port in 1..=MAX_FORWARDS + 1 {
            args.push("--forward".into());
            args.push(format!("127.0.0.1:{port}=/s"));
        }
        args.extend(["--".into(), "sh".into()]);
        assert_eq!(
            parse(args.iter().map(OsString::from)),
            Err(ArgsError::TooMany)
        );
    }

    #[test]
    fn quoted_arguments_are_cut() {
        let huge = "x".repeat(10_000);
        let Err(e) = parse_strs(&[&huge]) else {
            panic!("accepted")
        };
        assert!(e.to_string().len() < 400, "{e}");
    }
}
