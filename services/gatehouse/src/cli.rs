//! The command line: its grammar (`args.rs`, clap), the HTTP client the client verbs use,
//! and what each group of verbs does. The verbs that talk to a running Gatehouse go through
//! its API with a token, exactly as any other client would; `up`, `serve`, `migrate`,
//! `config` and the local `sop`/`schedule preview` verbs run here.

pub mod args;
mod budgets;
pub mod client;
pub mod conversations;
pub mod deliveries;
pub mod doctor;
pub mod identity;
mod logs;
pub mod mcp;
mod network;
pub mod projects;
pub mod reports;
pub mod requirements;
pub mod runs;
pub mod schedules;
pub mod sops;
mod watch;
