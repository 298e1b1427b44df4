//! The text of a turn's one progress message in its thread, edited in place while the
//! agent works and once more when the attempt ends. A pure function of the trace so far
//! and the time, so what people see can be asserted: short enough for a chat line, the
//! last few tools only, each cut to a few words.

use gatehouse_agent::{ModelUsage, Progress, ToolCall};

use super::home::Lost;

/// The tools a working message names, the most recent ones.
const TOOLS_SHOWN: usize = 3;
/// How many characters of a tool (name and summary) a message shows.
const TOOL_CHARS: usize = 40;

/// How an attempt ended, as its message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Done,
    Failed,
    Stopped,
    /// Its runner stopped before it ended; `again` when the turn gets another attempt.
    Interrupted {
        again: bool,
    },
}

/// While the agent works: `Working on it… 14s · 3 tools (Read src/lib.rs, Bash cargo
/// test, Edit src/x.rs) · now: Bash cargo test`; while its CLI waits to retry a model
/// request, `… · model API unreachable, retry 2/3 (503 server_error)`.
pub(crate) fn working(elapsed_ms: u64, progress: &Progress<'_>) -> String {
    let mut text = format!("Working on it… {}", duration(elapsed_ms));
    let tools = progress.tools;
    if !tools.is_empty() {
        let shown: Vec<String> = tools
            .iter()
            .skip(tools.len().saturating_sub(TOOLS_SHOWN))
            .map(label)
            .collect();
        let more = if tools.len() > TOOLS_SHOWN {
            "…, "
        } else {
            ""
        };
        text.push_str(&format!(
            " · {} ({more}{})",
            count(tools.len(), "tool"),
            shown.join(", ")
        ));
    }
    if let Some(running) = progress.running {
        text.push_str(&format!(" · now: {}", label(running)));
    }
    if let Some(retry) = progress.retry {
        text.push_str(&format!(" · {}", retry.progress()));
    }
    text
}

/// Once the attempt ended: `Done in 21s · 5 tools · 1,234 tokens`, `Failed after 3s`,
/// `Stopped after 5s`, `Interrupted (the runner stopped); trying again`.
pub(crate) fn ended(ending: Ending, elapsed_ms: u64, tools: usize, tokens: u64) -> String {
    match ending {
        Ending::Done => {
            let mut text = format!("Done in {}", duration(elapsed_ms));
            if tools > 0 {
                text.push_str(&format!(" · {}", count(tools, "tool")));
            }
            if tokens > 0 {
                text.push_str(&format!(" · {} tokens", thousands(tokens)));
            }
            text
        }
        Ending::Failed => format!("Failed after {}", duration(elapsed_ms)),
        Ending::Stopped => format!("Stopped after {}", duration(elapsed_ms)),
        Ending::Interrupted { again: true } => {
            "Interrupted (the runner stopped); trying again".to_owned()
        }
        Ending::Interrupted { again: false } => "Interrupted (the runner stopped)".to_owned(),
    }
}

/// What the message adds, to the end, when the session the turn was to resume is not
/// there: the CLI started a new one.
pub(crate) fn new_session(lost: Lost) -> &'static str {
    match lost {
        Lost::Missing => "started a new session (the earlier one was not available)",
        Lost::Refused => "started a new session (the earlier one could not be restored)",
    }
}

/// `text`, then ` · note` when there is one.
pub(crate) fn noted(mut text: String, note: Option<&str>) -> String {
    if let Some(note) = note {
        text.push_str(" · ");
        text.push_str(note);
    }
    text
}

/// Every token the attempt's models counted, cached ones included.
pub(crate) fn tokens(usage: &[ModelUsage]) -> u64 {
    usage
        .iter()
        .map(|u| {
            u.input_tokens
                .saturating_add(u.output_tokens)
                .saturating_add(u.cache_read_tokens)
                .saturating_add(u.cache_write_tokens)
        })
        .fold(0, u64::saturating_add)
}

/// `Bash cargo test`, cut to a few words.
fn label(call: &ToolCall) -> String {
    let text = if call.summary.is_empty() {
        call.tool.clone()
    } else {
        format!("{} {}", call.tool, call.summary)
    };
    if text.chars().count() <= TOOL_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(TOOL_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `14s`, `2m 05s`, `1h 02m`.
pub(super) fn duration(ms: u64) -> String {
    let seconds = ms / 1000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m {:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h {:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

/// `1 tool`, `3 tools`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, summary: &str, done: bool) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            summary: summary.into(),
            started_ms: 0,
            duration_ms: done.then_some(5),
            error: false,
        }
    }

    fn progress<'a>(tools: &'a [ToolCall], running: Option<&'a ToolCall>) -> Progress<'a> {
        Progress {
            session_id: None,
            tools,
            running,
            retry: None,
        }
    }

    #[test]
    fn a_working_message_names_the_last_three_tools_and_the_one_running() {
        assert_eq!(working(400, &progress(&[], None)), "Working on it… 0s");
        let tools = [
            call("Grep", "fn main", true),
            call("Read", "src/lib.rs", true),
            call("Bash", "cargo test", true),
            call("Edit", "src/x.rs", true),
            call("Bash", "cargo test", false),
        ];
        assert_eq!(
            working(14_200, &progress(&tools[1..4], None)),
            "Working on it… 14s · 3 tools (Read src/lib.rs, Bash cargo test, Edit src/x.rs)"
        );
        assert_eq!(
            working(125_000, &progress(&tools, Some(&tools[4]))),
            "Working on it… 2m 05s · 5 tools (…, Bash cargo test, Edit src/x.rs, Bash cargo test) · now: Bash cargo test"
        );
        let long = [call("Bash", &"x".repeat(200), false)];
        let text = working(1000, &progress(&long, Some(&long[0])));
        assert_eq!(
            text,
            format!(
                "Working on it… 1s · 1 tool (Bash {x}…) · now: Bash {x}…",
                x = "x".repeat(34)
            )
        );
    }

    #[test]
    fn a_working_message_says_when_the_model_cannot_be_reached() {
        let retry = gatehouse_agent::Retry {
            attempt: 2,
            max_retries: Some(3),
            status: Some(503),
            error: "server_error".into(),
            at_ms: 1000,
        };
        let waiting = Progress {
            retry: Some(&retry),
            ..progress(&[], None)
        };
        assert_eq!(
            working(4_000, &waiting),
            "Working on it… 4s · model API unreachable, retry 2/3 (503 server_error)"
        );
    }

    #[test]
    fn an_ended_message_says_how_and_how_long() {
        assert_eq!(
            ended(Ending::Done, 21_900, 5, 1234),
            "Done in 21s · 5 tools · 1,234 tokens"
        );
        assert_eq!(ended(Ending::Done, 3_000, 0, 0), "Done in 3s");
        assert_eq!(
            ended(Ending::Done, 3_700_000, 1, 7),
            "Done in 1h 01m · 1 tool · 7 tokens"
        );
        assert_eq!(ended(Ending::Failed, 3_000, 2, 10), "Failed after 3s");
        assert_eq!(ended(Ending::Stopped, 5_000, 0, 0), "Stopped after 5s");
        assert_eq!(
            ended(Ending::Interrupted { again: true }, 0, 0, 0),
            "Interrupted (the runner stopped); trying again"
        );
        assert_eq!(
            ended(Ending::Interrupted { again: false }, 0, 0, 0),
            "Interrupted (the runner stopped)"
        );
    }

    #[test]
    fn a_new_session_is_said_after_the_rest() {
        assert_eq!(
            noted(
                ended(Ending::Done, 3_000, 1, 7),
                Some(new_session(Lost::Missing))
            ),
            "Done in 3s · 1 tool · 7 tokens · started a new session (the earlier one was not available)"
        );
        assert_eq!(
            noted(
                working(1_000, &progress(&[], None)),
                Some(new_session(Lost::Refused))
            ),
            "Working on it… 1s · started a new session (the earlier one could not be restored)"
        );
        assert_eq!(noted("Done in 3s".into(), None), "Done in 3s");
    }

    #[test]
    fn tokens_are_counted_and_grouped() {
        let usage = [
            ModelUsage {
                model: "a".into(),
                input_tokens: 1000,
                output_tokens: 500,
                cache_read_tokens: 200,
                cache_write_tokens: 100,
            },
            ModelUsage {
                model: "b".into(),
                input_tokens: 1_000_000,
                ..ModelUsage::default()
            },
        ];
        assert_eq!(tokens(&usage), 1_001_800);
        assert_eq!(thousands(1_001_800), "1,001,800");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(0), "0");
    }
}
