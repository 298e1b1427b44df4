//! `gatehouse-acp`: runs one prompt through any Agent Client Protocol agent, inside the
//! sandbox, and prints what the agent did as JSON lines for the runner's trace.
//!
//! `gatehouse-acp --prompt-file F [--system-file S] [--resume SESSION]
//! [--transcript-file T] [--permissions FILE] [--mode MODE] [--timeout SECS] [--cancel-grace SECS] -- AGENT ARGS...`
//! — or `gatehouse-acp hook NAME`, a CLI's pre-tool hook ([`hook`]).
//!
//! ACP is JSON-RPC between an editor and a coding agent over the agent's stdio; Gatehouse
//! runs each CLI as a command line whose stdout it reads, so this shim is the editor: it
//! starts the agent (in a process group of its own), opens or loads a session, sends the
//! prompt, answers permission requests by policy, and prints one line per event in the
//! schema of [`output`]. The runner bind-mounts it read-only into Docker sandboxes (as it
//! does `gatehouse-relay`), so it is linked statically (deploy/sandbox/build-relay.sh).
//!
//! It never waits forever on the agent: every request before the prompt has `--timeout`
//! (60 s), an agent that exits, prints no protocol or asks for a login is reported on one
//! line naming its command, and once the prompt returns the agent gets 2 s to exit after
//! its stdin closes before its group gets SIGTERM, then SIGKILL.
//!
//! Exit codes: 0 when the prompt returned (stop reason other than `cancelled`); 1 when it
//! did not (the last line is an `error`) or was cancelled; 2 for a usage error; 128 + the
//! signal when SIGTERM or SIGINT stopped it.

mod agent;
mod args;
mod ask;
mod failure;
mod hook;
mod mcp;
mod output;
mod permission;
mod rpc;
mod session;

use crate::args::ArgsError;
use crate::output::Output;
use crate::session::{Outcome, Run};

/// The prompt did not complete.
const FAILED: i32 = 1;
/// The command line was wrong.
const USAGE_ERROR: i32 = 2;

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let mut words = std::env::args_os().skip(1);
    if words.next().is_some_and(|word| word == "hook") {
        let name = words.next().map(|name| name.to_string_lossy().into_owned());
        return hook::run(name.as_deref().unwrap_or_default());
    }
    let invocation = match args::parse(std::env::args_os().skip(1)) {
        Ok(invocation) => invocation,
        Err(ArgsError::Help) => {
            println!("{}", args::USAGE);
            return 0;
        }
        Err(e) => {
            eprintln!("gatehouse-acp: {e}\n{}", args::USAGE);
            return USAGE_ERROR;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            Output.error(&format!("gatehouse-acp cannot start its runtime: {e}"));
            return FAILED;
        }
    };
    let outcome = runtime.block_on(async {
        let run = Run::start(&invocation)?;
        run.run().await
    });
    // The agent's group is ended; tasks still reading its pipes go with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match outcome {
        Ok(Outcome::Returned { cancelled: false }) => 0,
        Ok(Outcome::Returned { cancelled: true }) => FAILED,
        Ok(Outcome::Signalled(signal)) => 128 + signal,
        Err(failure) => {
            Output.error(&failure.to_string());
            match failure {
                failure::Failure::Interrupted { signal, .. }
                | failure::Failure::CancelIgnored { signal, .. } => 128 + signal,
                _ => FAILED,
            }
        }
    }
}
