//! `[assistant]`: conversations in chat threads.

use std::time::Duration;

use gatehouse_scheduler::AssistantSettings;
use serde::{Deserialize, Serialize};

/// With this section, a mention in prose in a project's channel starts or continues the
/// thread's conversation, each message a turn of `role`; without it, prose only records
/// the thread's requirement (and starts the channel's SOP, when it has one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantConfig {
    /// A role of `[roles]`: its executor, model, system prompt, rules and sandbox run
    /// every turn.
    pub role: String,
    /// How long a conversation's workspace is kept with nothing running before it is
    /// checkpointed and its disk freed (the next message restores it).
    #[serde(default = "idle_timeout", with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// Messages that may wait while a turn runs; more are refused.
    #[serde(default = "max_queue")]
    pub max_queue: usize,
    /// A turn's wall-clock limit.
    #[serde(default = "turn_timeout", with = "humantime_serde")]
    pub turn_timeout: Duration,
}

// The scheduler's defaults, declared there once.
fn defaults() -> AssistantSettings {
    AssistantSettings::new("")
}

fn idle_timeout() -> Duration {
    defaults().rules.idle_timeout
}

fn max_queue() -> usize {
    defaults().rules.max_queue
}

fn turn_timeout() -> Duration {
    defaults().turn_timeout
}
