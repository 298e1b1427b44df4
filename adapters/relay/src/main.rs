//! `gatehouse-relay`: the only way out of a sandbox without a network. It listens on
//! loopback TCP ports and joins each connection to a Unix socket the runner serves (the
//! model gateway, the egress proxy), bind-mounted into the sandbox, then runs the job's
//! program and exits with its code. Standard library only and linked statically, so it runs
//! in any image.
//!
//! `gatehouse-relay --forward 127.0.0.1:8080=/gatehouse/sockets/0.sock [--forward ...] -- PROGRAM ARGS...`
//!
//! Exit codes: the program's (128 + the signal when one killed it); 125 when the relay
//! could not start (bad arguments, a port it cannot bind, a socket that is not there); 126
//! when the program could not be run, 127 when it was not found.

mod args;
mod child;
mod forward;
mod loopback;

use std::fs;
use std::io;
use std::net::TcpListener;
use std::os::unix::fs::FileTypeExt;
use std::process::Command;

use crate::args::{ArgsError, Forward, Invocation, USAGE};
use crate::forward::{MAX_CONNECTIONS, Slots};

/// The relay itself could not start.
const FAILED: i32 = 125;
/// The program exists but could not be run.
const CANNOT_RUN: i32 = 126;
/// The program was not found.
const NOT_FOUND: i32 = 127;

fn main() {
    std::process::exit(run());
}

/// Everything, returning the exit code. Once this returns, `exit` ends the forwarding
/// threads with their connections: the program's end is the relay's.
fn run() -> i32 {
    let invocation = match args::parse(std::env::args_os().skip(1)) {
        Ok(invocation) => invocation,
        Err(ArgsError::Help) => {
            println!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("gatehouse-relay: {e}\n{USAGE}");
            return FAILED;
        }
    };
    let listeners = match bind(&invocation.forwards) {
        Ok(listeners) => listeners,
        Err(message) => {
            eprintln!("gatehouse-relay: {message}");
            return FAILED;
        }
    };
    let slots = Slots::new(MAX_CONNECTIONS);
    for (listener, forward) in listeners.into_iter().zip(&invocation.forwards) {
        if let Err(e) = forward::serve(listener, forward.socket.clone(), slots.clone()) {
            eprintln!("gatehouse-relay: starting a thread failed: {e}");
            return FAILED;
        }
    }
    spawn_and_wait(&invocation)
}

/// Binds every forward's port, after checking its socket is there; the first failure,
/// said so that it tells what to change.
fn bind(forwards: &[Forward]) -> Result<Vec<TcpListener>, String> {
    // A fresh network namespace has its loopback down; a failure here shows as the bind
    // or the connections failing, explained there.
    let loopback = loopback::ensure_up();
    let mut listeners = Vec::with_capacity(forwards.len());
    for forward in forwards {
        let socket = forward.socket.display();
        match fs::metadata(&forward.socket) {
            Ok(meta) if meta.file_type().is_socket() => {}
            Ok(_) => return Err(format!("{socket} is not a Unix socket")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(format!(
                    "{socket} does not exist: mount the runner's socket there"
                ));
            }
            Err(e) => return Err(format!("{socket}: {e}")),
        }
        let listener = TcpListener::bind(forward.listen).map_err(|e| {
            let hint = match &loopback {
                Err(lo) => format!(" (bringing the loopback interface up failed: {lo})"),
                Ok(_) => String::new(),
            };
            format!("cannot listen on {}: {e}{hint}", forward.listen)
        })?;
        listeners.push(listener);
    }
    Ok(listeners)
}

/// Runs the program with the relay's stdio and environment; its exit code.
fn spawn_and_wait(invocation: &Invocation) -> i32 {
    let program = invocation.program.to_string_lossy();
    let child = match Command::new(&invocation.program)
        .args(&invocation.args)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("gatehouse-relay: cannot run {program}: {e}");
            return if e.kind() == io::ErrorKind::NotFound {
                NOT_FOUND
            } else {
                CANNOT_RUN
            };
        }
    };
    match child::wait_for(child.id()) {
        Ok(ended) => ended.code(),
        Err(e) => {
            eprintln!("gatehouse-relay: waiting for {program} failed: {e}");
            FAILED
        }
    }
}
