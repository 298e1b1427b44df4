//! `gatehouse role check ROLE`: the role's CLI run once, for real, as a node's attempt runs
//! it — its command line, in its sandbox profile, its model reached through the runner's
//! gateway — on a prompt asking for one word. What it printed is read by the executor's
//! own trace reader, so an operator sees before any run needs it what a node would meet:
//! the CLI's version, for an ACP agent its name and protocol, the tools it called, the
//! model's answer, the usage the gateway metered, or the one line saying why it failed.

use gatehouse_agent::Tools;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gatehouse_agent::{Role, TraceParser, invocation};
use gatehouse_sandbox::{ExitStatus, Job, JobLabels, LogLine, Profile, Stream};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Outcome;
use crate::network::Wants;
use crate::runner::Runner;
use crate::scratch::Scratch;

/// The check's prompt: the smallest real task, which any model answers in one word.
pub(crate) const PROMPT: &str = "This is a check of your setup by Gatehouse. Do not use any \
    tool. Reply with the single word OK.";
/// How long the CLI may take, cold image and model included.
const TIMEOUT: Duration = Duration::from_secs(300);
/// The stdout lines kept for the trace; a one-word answer needs far fewer.
const MAX_LINES: usize = 5_000;
/// The marker of the version line the script prints on stderr before the CLI runs.
const VERSION: &str = "gatehouse-version: ";

/// Runs the role's CLI once on [`PROMPT`] in `profile`.
pub(super) async fn check(
    runner: &Runner,
    name: &str,
    role: &Role,
    profile: &Profile,
    stop: &CancellationToken,
) -> Outcome {
    let scratch = match Scratch::new(&runner.options.data_dir.join("doctor"), "run") {
        Ok(scratch) => scratch,
        Err(e) => return Outcome::Failed(format!("making a directory for the check: {e}")),
    };
    let reach = match runner.reach(Wants {
        label: format!("role check {name}"),
        provider: role
            .provider
            .as_deref()
            .map(|p| (p, role.models.as_slice())),
        role_egress: &role.egress,
        profile,
        budget: None,
        tools: None,
    }) {
        Ok(reach) => reach,
        Err(why) => return Outcome::Failed(why),
    };
    let run = format!(
        "role-check-{}",
        scratch
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let mut env: BTreeMap<String, String> = role.cli_environment().into_iter().collect();
    env.extend(role.env.clone());
    if let Some(reach) = &reach {
        env.extend(reach.env.iter().cloned());
    }
    let mut job = Job {
        script: String::new(),
        env,
        workspace: scratch.path().join("workspace"),
        artifacts: scratch.path().join("artifacts"),
        inputs: scratch.path().join("inputs"),
        timeout: Some(TIMEOUT),
        profile: profile.clone(),
        labels: JobLabels {
            run: run.clone(),
            node: name.to_owned(),
            attempt: 1,
        },
        stdout_tail: 0,
        relay: reach.as_ref().and_then(|r| r.relay.clone()),
        home: Some(scratch.path().join("home")),
    };
    if let Err(why) = crate::acp::equip(&mut job, role, runner.options.acp.as_deref()) {
        return Outcome::Failed(why);
    }
    let prompt_dir = job.inputs.join(crate::agent::AGENT_DIR);
    let made = [&job.workspace, &prompt_dir]
        .iter()
        .try_for_each(std::fs::create_dir_all)
        .and_then(|()| std::fs::write(prompt_dir.join("prompt.md"), PROMPT));
    if let Err(e) = made {
        return Outcome::Failed(format!("writing the check's prompt: {e}"));
    }
    let prompt_seen = format!(
        "{}/{}/prompt.md",
        job.inputs_seen(),
        crate::agent::AGENT_DIR
    );
    let api = reach.as_ref().and_then(crate::network::Reach::model_api);
    job.script = format!(
        "{}\n{}",
        version_step(role),
        invocation(role, api, &Tools::none(), &prompt_seen, None)
    );

    let started = Instant::now();
    let (logs, mut lines) = mpsc::channel::<LogLine>(256);
    let model = role.model.clone();
    let executor = role.executor;
    let read = tokio::spawn(async move {
        let mut parser = TraceParser::new(executor, model.as_deref());
        let (mut version, mut agent, mut kept) = (None, None, 0);
        while let Some(line) = lines.recv().await {
            let at = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            match line.stream {
                Stream::Stderr => {
                    if let Some(found) = line.line.strip_prefix(VERSION) {
                        version = Some(found.trim().to_owned());
                    }
                }
                Stream::Stdout if kept < MAX_LINES => {
                    kept += 1;
                    if agent.is_none() {
                        agent = acp_agent(&line.line);
                    }
                    parser.feed(&line.line, at);
                }
                _ => {}
            }
        }
        let at = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        (parser.finish(at), version, agent)
    });
    let exit = runner.sandbox.run(&job, logs, stop.child_token()).await;
    let (trace, version, agent) = match read.await {
        Ok(read) => read,
        Err(e) => return Outcome::Failed(format!("reading the CLI's output: {e}")),
    };
    if let Err(e) = runner.sandbox.run_ended(&run).await {
        tracing::debug!(error = %e, "letting go of the role check's workspace");
    }
    let metered = reach
        .as_ref()
        .and_then(crate::network::Reach::usage)
        .map(|usage| {
            let (input, output) = usage.iter().fold((0, 0), |(i, o), u| {
                (i + u.input_tokens, o + u.output_tokens)
            });
            format!("; the gateway metered {input} tokens in, {output} out")
        })
        .unwrap_or_default();
    let seconds = started.elapsed().as_secs_f64();
    let about = [
        version.map(|v| format!("version {v}")),
        agent,
        trace.session_id.as_ref().map(|id| format!("session {id}")),
        (!trace.tools.is_empty()).then(|| {
            let names: Vec<&str> = trace.tools.iter().map(|t| t.tool.as_str()).collect();
            format!("tools called: {}", names.join(", "))
        }),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    let about = if about.is_empty() {
        String::new()
    } else {
        format!(" ({about})")
    };
    match (exit.map(|e| e.status), &trace.failure) {
        (Ok(ExitStatus::Exited(0)), None) => Outcome::Passed(format!(
            "`{}` answered {:?} in {seconds:.1}s{about}{metered}",
            role.executor,
            shorten(trace.reply.as_deref().unwrap_or("nothing"))
        )),
        (Ok(ExitStatus::TimedOut), _) => Outcome::Failed(format!(
            "`{}` did not finish within {}s{about}: see that it runs headless, and that its \
             model answers",
            role.executor,
            TIMEOUT.as_secs()
        )),
        (Ok(_), Some(failure)) => Outcome::Failed(format!(
            "`{}` failed after {seconds:.1}s{about}: {}",
            role.executor,
            shorten(failure)
        )),
        (Ok(status), None) => Outcome::Failed(format!(
            "`{}` ended with {status:?} after {seconds:.1}s{about}",
            role.executor
        )),
        (Err(e), _) => Outcome::Failed(format!("the sandbox could not run the check: {e}")),
    }
}

/// A shell step printing the first line of the CLI's `--version` on stderr, marked; nothing
/// for a program of the role's own, whose flags are its own.
fn version_step(role: &Role) -> String {
    match role.executor.program() {
        Some(program) => format!(
            "{program} --version 2>/dev/null | head -n 1 | sed 's/^/{VERSION}/' >&2 || true"
        ),
        None => ":".to_owned(),
    }
}

/// `agent NAME VERSION, ACP protocol N` from the shim's session line.
fn acp_agent(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line.trim()).ok()?;
    if value["type"] != "session" {
        return None;
    }
    let agent = &value["agent"];
    let name = agent["name"].as_str().unwrap_or("an agent");
    let version = agent["version"].as_str().unwrap_or("");
    let protocol = value["protocolVersion"]
        .as_u64()
        .map(|v| format!(", ACP protocol {v}"))
        .unwrap_or_default();
    Some(shorten(&format!("agent {name} {version}{protocol}")).replace("  ", " "))
}

/// At most 200 characters on one line: what the CLI printed is untrusted and unbounded.
fn shorten(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}
