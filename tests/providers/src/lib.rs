//! Fake model providers for tests, as `gatehouse-fake-forge` is for GitHub: real HTTP on
//! loopback speaking the providers' real wire formats, so the gateway's tests and the real
//! Claude Code and Codex CLIs (`tests/tests/agent_clis.rs` in `gatehouse-tests`) can be
//! pointed at them.
//!
//! - [`FakeProvider`]: one server answering `POST /v1/messages` (Anthropic Messages),
//!   `POST /v1/responses` (OpenAI Responses) and `POST /v1/chat/completions` (OpenAI Chat
//!   Completions, for openai-compatible providers) and `POST /v1beta/models/{model}:generateContent`
//!   / `:streamGenerateContent?alt=sse` (Google's Gemini API, key in `x-goog-api-key` or
//!   `?key=`), streamed (server-sent events) or not, and `GET /v1/models` and
//!   `GET /v1beta/models` (model lists, as `gatehouse doctor` asks for).
//! - [`Turn`]: the script. The n-th request of a conversation gets the n-th turn, with the
//!   usage figures the test chose; [`Fault`]s (5xx, 429, a hang, a cut or slow stream) are
//!   queued for the next requests.
//! - [`Recorded`]: every request (path, headers, body) and the time of each event sent.
//! - [`sse`]: server-sent events, written by the fake and read by the tests' clients.

mod anthropic;
mod chat;
mod gemini;
mod record;
mod responses;
mod script;
mod server;
pub mod sse;

pub use record::{Recorded, Sent};
pub use script::{Fault, Reply, Tokens, Turn};
pub use server::{FakeProvider, SIDE_ANSWER};
