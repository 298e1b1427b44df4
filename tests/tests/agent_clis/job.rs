//! The job both CLIs are given: write `hello.txt` with a known content through their own
//! file or shell tool, then answer. The fake scripts it as a tool call and a final text,
//! each turn with usage figures of its own so that sums are checked, not defaults.

use std::path::Path;

use gatehouse_fake_providers::{Tokens, Turn};
use gatehouse_gateway::Totals;
use serde_json::json;

/// What the CLI is asked (the fake answers from its script whatever the prompt says).
pub const PROMPT: &str = "Create hello.txt containing a greeting, then say that you did.";

/// The file the job writes, and what it holds.
pub const FILE: &str = "hello.txt";
pub const CONTENT: &str = "hello from the fake provider\n";

/// The final answer the fake gives.
pub const ANSWER: &str = "I created hello.txt with a greeting.";

/// Claude Code's job: its `Write` tool (an absolute `file_path` and the `content`), then
/// the answer. The figures include cache reads and writes, as Anthropic reports them.
pub fn claude_script(work: &Path) -> Vec<Turn> {
    vec![
        Turn::tool(
            "Write",
            json!({"file_path": work.join(FILE), "content": CONTENT}),
        )
        .tokens(Tokens {
            input: 1200,
            output: 45,
            cache_read: 3000,
            cache_write: 800,
            reasoning: 0,
        }),
        Turn::text(ANSWER).tokens(Tokens {
            input: 60,
            output: 12,
            cache_read: 4000,
            cache_write: 0,
            reasoning: 0,
        }),
    ]
}

/// Codex's job: its `exec_command` function (a shell command in `cmd`, run in the working
/// directory), then the answer. The Responses API reports no cache writes.
pub fn codex_script() -> Vec<Turn> {
    vec![
        Turn::tool(
            "exec_command",
            json!({"cmd": format!("printf 'hello from the fake provider\\n' > {FILE}")}),
        )
        .tokens(Tokens {
            input: 900,
            output: 40,
            cache_read: 2000,
            cache_write: 0,
            reasoning: 8,
        }),
        Turn::text(ANSWER).tokens(Tokens {
            input: 50,
            output: 10,
            cache_read: 2900,
            cache_write: 0,
            reasoning: 0,
        }),
    ]
}

/// What the gateway must have metered for a script answered once per turn.
pub fn metered(turns: &[Turn]) -> Totals {
    let sum = Tokens::total(turns);
    Totals {
        requests: turns.len() as u64,
        input: sum.input,
        output: sum.output,
        cache_read: sum.cache_read,
        cache_write: sum.cache_write,
    }
}
