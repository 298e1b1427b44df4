//! `gatehouse run logs RUN [--node N] [--tail N] [--follow]`: a run's output, as a
//! script's `tail -f` would show it, ending when the run ends.
//!
//! The lines were written by the run's nodes — scripts and agents — so they are untrusted:
//! terminal control characters are dropped before they reach the terminal (`--json` keeps
//! each line as it was stored, one JSON object per line).

use std::time::Duration;

use anyhow::bail;
use gatehouse_ingest::views::{LogView, RunDetail};

use crate::cli::client::{Client, path_segment};

/// Lines asked for per request: the API's most.
const PAGE: usize = 5000;

/// How often a followed run is asked for new lines.
const POLL: Duration = Duration::from_millis(500);

/// What `run logs` was asked for.
pub struct LogsRequest<'a> {
    pub id: &'a str,
    pub node: Option<&'a str>,
    pub tail: Option<u32>,
    pub follow: bool,
    pub as_json: bool,
}

/// Prints the lines asked for; with `follow`, keeps printing until the run has ended and
/// its last line is out, then says how it ended on standard error.
pub async fn logs(client: &Client, request: LogsRequest<'_>) -> anyhow::Result<()> {
    let segment = path_segment(request.id);
    let run: RunDetail = client.get(&format!("/runs/{segment}")).await?;
    if let Some(node) = request.node
        && !run.nodes.iter().any(|n| n.node == node)
    {
        let nodes: Vec<&str> = run.nodes.iter().map(|n| n.node.as_str()).collect();
        bail!(
            "run {} has no node `{node}`; its nodes are {}",
            run.run.id,
            nodes.join(", ")
        );
    }
    let path = |query: String| {
        let node = request
            .node
            .map(|n| format!("&node={}", path_segment(n)))
            .unwrap_or_default();
        format!("/runs/{}/logs?{query}{node}", run.run.id)
    };
    let mut after = 0;
    if let Some(tail) = request.tail {
        let lines: Vec<LogView> = client.get(&path(format!("tail={tail}"))).await?;
        after = show(&lines, request.as_json)?.unwrap_or(after);
        if !request.follow {
            return Ok(());
        }
    }
    loop {
        // The status is read before the lines: a run seen ended has written its last line.
        let ended = if request.follow {
            let now: RunDetail = client.get(&format!("/runs/{}", run.run.id)).await?;
            ended(&now.run.status).then_some(now.run.status)
        } else {
            None
        };
        loop {
            let lines: Vec<LogView> = client
                .get(&path(format!("after={after}&limit={PAGE}")))
                .await?;
            after = show(&lines, request.as_json)?.unwrap_or(after);
            if lines.len() < PAGE {
                break;
            }
        }
        if !request.follow {
            return Ok(());
        }
        if let Some(status) = ended {
            eprintln!("run {} {status}", run.run.id);
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether a run in `status` will write no more output.
pub(crate) fn ended(status: &str) -> bool {
    matches!(status, "succeeded" | "failed" | "cancelled")
}

/// Prints `lines`; returns the last one's position.
fn show(lines: &[LogView], as_json: bool) -> anyhow::Result<Option<i64>> {
    for line in lines {
        if as_json {
            println!("{}", serde_json::to_string(line)?);
        } else {
            println!("{}", log_line(line));
        }
    }
    Ok(lines.last().map(|l| l.seq))
}

/// One line as the terminal shows it: `node #attempt | text`, standard error's lines
/// marked `!`, control characters (escape sequences' first byte, carriage returns) dropped.
pub(crate) fn log_line(line: &LogView) -> String {
    let text: String = line
        .line
        .chars()
        .filter(|c| *c == '\t' || !c.is_control())
        .collect();
    let mark = if line.stream == "stderr" { "!" } else { "|" };
    format!("{} #{} {mark} {text}", line.node, line.attempt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stream: &str, text: &str) -> LogView {
        LogView {
            seq: 7,
            node: "build".into(),
            attempt: 2,
            stream: stream.into(),
            line: text.into(),
            at: chrono::Utc::now(),
        }
    }

    #[test]
    fn a_line_names_its_node_and_attempt_and_marks_standard_error() {
        assert_eq!(log_line(&line("stdout", "ok")), "build #2 | ok");
        assert_eq!(log_line(&line("stderr", "warning")), "build #2 ! warning");
    }

    #[test]
    fn what_a_node_wrote_cannot_drive_the_terminal() {
        let shown = log_line(&line("stdout", "\u{1b}[2J\u{1b}]0;owned\u{7}done\r\tnext"));
        assert!(
            !shown.chars().any(|c| c != '\t' && c.is_control()),
            "{shown:?}"
        );
        assert!(shown.ends_with("[2J]0;owneddone\tnext"), "{shown:?}");
    }
}
