//! Token usage as the gateway meters it from providers' answers.

/// The tokens of one request, read from the provider's answer. `input` excludes cached
/// input, as Anthropic counts it: for OpenAI, whose input figure includes the cached part,
/// `input = input_tokens - cached_tokens`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// The model that answered, or the one asked for when the answer did not say.
    pub model: Option<String>,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// A grant's totals so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Requests forwarded to the provider.
    pub requests: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Totals {
    pub(crate) fn add(&mut self, usage: &Usage) {
        self.requests += 1;
        self.input += usage.input;
        self.output += usage.output;
        self.cache_read += usage.cache_read;
        self.cache_write += usage.cache_write;
    }
}

/// One forwarded request, as it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metered {
    /// The grant's label (the attempt, for the runner's records and logs).
    pub label: String,
    pub provider: String,
    /// The provider's status.
    pub status: u16,
    pub usage: Usage,
    /// Whether the answer arrived whole; `false` when the provider or the client cut it
    /// off, and `usage` holds what was seen.
    pub complete: bool,
}

/// Where the runner records each request of a grant as it ends.
pub trait UsageSink: Send + Sync {
    fn record(&self, metered: &Metered);
}
