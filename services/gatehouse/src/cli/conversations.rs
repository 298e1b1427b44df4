//! The client verbs `conversation list`, `conversation show` and `conversation stop`: chat
//! threads' conversations with the assistant, their turns and what each attempt did.

use gatehouse_ingest::views::{
    ConversationDetail, ConversationSummary, StopAccepted, TurnAttemptView,
};

use crate::cli::args::ConversationCommand;
use crate::cli::client::{Client, path_segment};
use crate::cli::network;
use crate::cli::runs::{one_line, print, total};

pub async fn conversation(
    client: &Client,
    command: ConversationCommand,
    as_json: bool,
) -> anyhow::Result<()> {
    match command {
        ConversationCommand::List { project } => {
            let path = match project {
                Some(p) => format!("/conversations?project={}", path_segment(&p)),
                None => "/conversations".to_owned(),
            };
            let conversations: Vec<ConversationSummary> = client.get(&path).await?;
            print(as_json, &conversations, || table(&conversations))
        }
        ConversationCommand::Show { id } => {
            let detail: ConversationDetail = client
                .get(&format!("/conversations/{}", path_segment(&id)))
                .await?;
            print(as_json, &detail, || describe(&detail))
        }
        ConversationCommand::Stop { id } => {
            let accepted: StopAccepted = client
                .post(
                    &format!("/conversations/{}/stop", path_segment(&id)),
                    &serde_json::json!({}),
                )
                .await?;
            print(as_json, &accepted, || {
                format!(
                    "stop sent to conversation {} (message {}); its thread is answered",
                    accepted.conversation_id, accepted.seq
                )
            })
        }
    }
}

fn table(conversations: &[ConversationSummary]) -> String {
    let mut out = format!(
        "{:<36}  {:<12}  {:<9}  {:>5}  {:>6}  THREAD\n",
        "ID", "PROJECT", "ACTIVITY", "TURNS", "QUEUED"
    );
    for c in conversations {
        out.push_str(&format!(
            "{:<36}  {:<12}  {:<9}  {:>5}  {:>6}  {}:{}:{}\n",
            c.id, c.project, c.activity, c.turn_count, c.queued, c.platform, c.channel, c.thread
        ));
    }
    out.trim_end().to_owned()
}

fn describe(d: &ConversationDetail) -> String {
    let c = &d.conversation;
    let mut out = format!(
        "conversation {} · project {} · {}\n  {}:{} thread {}\n  started by {} on {} · requirement {}\n",
        c.id,
        c.project,
        c.activity,
        c.platform,
        c.channel,
        c.thread,
        c.started_by,
        c.created_at.format("%Y-%m-%d %H:%M:%S"),
        c.requirement_id
    );
    if !d.repositories.is_empty() {
        out.push_str(&format!("  repositories {}\n", d.repositories.join(", ")));
    }
    if let Some(session) = &d.session_id {
        out.push_str(&format!("  CLI session {session}\n"));
    }
    out.push_str("turns:\n");
    if d.turns.is_empty() {
        out.push_str("  none\n");
    }
    for turn in &d.turns {
        let how = match (turn.kind.as_str(), &turn.role, turn.steer) {
            ("ask", Some(role), _) => format!(" (ask {role})"),
            ("deliver", _, _) => " (deliver)".to_owned(),
            (_, _, true) => " (steer)".to_owned(),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  #{} {:<8} {}{how}: {}\n",
            turn.seq,
            turn.status,
            turn.person,
            one_line(&turn.text)
        ));
        for attempt in &turn.attempts {
            out.push_str(&attempt_lines(attempt));
        }
        if let Some(failure) = &turn.failure {
            out.push_str(&format!("      failed: {}\n", one_line(failure)));
        }
    }
    if !d.pull_requests.is_empty() {
        out.push_str("pull requests:\n");
        for pr in &d.pull_requests {
            out.push_str(&format!(
                "  {}#{}  {:<7}  from {}\n",
                pr.repo, pr.number, pr.state, pr.branch
            ));
        }
    }
    out.push_str(&format!("usage: {}\n", total(&d.usage)));
    out.trim_end().to_owned()
}

fn attempt_lines(a: &TurnAttemptView) -> String {
    let took = match (a.duration_ms, a.cli_ms) {
        (Some(all), Some(cli)) => format!(" in {all} ms (CLI {cli} ms)"),
        (Some(all), None) => format!(" in {all} ms"),
        _ => String::new(),
    };
    let mut out = format!(
        "      attempt {} · {} · {}{took} · {}\n",
        a.attempt,
        a.role,
        a.status,
        total(&a.usage)
    );
    for tool in &a.tools {
        let took = tool
            .duration_ms
            .map(|ms| format!(" {ms} ms"))
            .unwrap_or_default();
        let failed = if tool.failed { " (failed)" } else { "" };
        out.push_str(&format!(
            "        {} {}{took}{failed}\n",
            tool.tool,
            one_line(&tool.summary)
        ));
    }
    out.push_str(&network::attempt_section(&a.connections, "        "));
    if let Some(reply) = &a.reply {
        out.push_str(&format!("        reply: {}\n", one_line(reply)));
    }
    if let Some(failure) = &a.failure {
        out.push_str(&format!("        failed: {}\n", one_line(failure)));
    }
    out
}
