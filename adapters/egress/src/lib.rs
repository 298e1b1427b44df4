//! Gatehouse's egress proxy: how a sandbox reaches the network, and only the part of it
//! its profile allows.
//!
//! A sandbox has no route out; this proxy is its one way to other hosts. It serves HTTP
//! `CONNECT` only (HTTPS and anything else tunnelled over TLS), to the `host:port`s its
//! [`Policy`] allows — host [`Pattern`]s from the profile's and role's `egress` and the
//! curated [`DEFAULTS`] named in `egress_defaults` — and never to a private, loopback or
//! link-local address, whatever name resolves to it (see [`special_range`]), unless that
//! network is explicitly allowed. It connects to the addresses it checked, so DNS
//! rebinding cannot slip another one in. Every connection, tunnelled or refused, is a
//! [`Connection`] record for a [`Recorder`].
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use gatehouse_egress::{Egress, Grants, Policy};
//!
//! let grants = Grants::new();
//! let policy = Policy::from_config(["github.com"], ["rust"])?;
//! let grant = grants.grant("attempt 7", policy);
//! // The sandbox gets grant.environment("egress:3128"): HTTPS_PROXY and friends.
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:3128").await?;
//! Egress::default()
//!     .serve(listener, grants.clone(), |c| println!("{c:?}"), std::future::pending())
//!     .await;
//! # drop(grant);
//! # Ok(())
//! # }
//! ```
//!
//! Which sandbox a request comes from is an [`Admit`]'s answer: one listener per attempt
//! (an [`Admission`]), or one listener for all with a token per attempt ([`Grants`]).
//!
//! The runner serves one on a Unix socket (reached through a sandbox's relay) and a loopback
//! port, with a token per attempt; profiles and roles say what each may reach.

mod address;
mod admission;
mod defaults;
mod error;
mod listener;
mod pattern;
mod policy;
mod proxy;
mod record;
mod resolve;
mod target;
mod tunnel;

pub use address::{SpecialRange, special_range};
pub use admission::{Admission, Admit, Grant, Grants, PROXY_USER};
pub use defaults::{DEFAULTS, Defaults, defaults};
pub use error::{EgressError, PatternProblem};
pub use listener::Listener;
pub use pattern::{DEFAULT_PORT, Pattern};
pub use policy::{DEFAULT_MAX_TUNNELS, Policy};
pub use proxy::{Egress, Limits};
pub use record::{Connection, Recorder, Refusal, Verdict};
pub use resolve::{Resolve, SystemResolver};
