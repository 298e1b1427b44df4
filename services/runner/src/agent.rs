//! Agent nodes: the role's coding-agent CLI, run in the sandbox like a script, on a prompt
//! rendered from the node's template; afterwards its report gives the tokens and cost.

use std::collections::BTreeMap;
use std::path::Path;

use gatehouse_agent::{
    MCP_PROGRAM_MISSING, ModelApi, ModelUsage, PriceTable, PromptContext, Report, Role,
    SandboxPlace, Tools, cost, invocation, mcp_preflight, parse_report, render_prompt,
};
use gatehouse_events::{AgentSpec, NodeDispatch};
use gatehouse_sandbox::{ExitStatus, Profile, SandboxKind, untrusted};
use gatehouse_store::UsageRow;

use crate::scope::RunScope;

/// Where the prompt files go, under the attempt's inputs directory.
pub(crate) const AGENT_DIR: &str = ".agent";
/// The part of each upstream file a prompt may quote.
const INPUT_TEXT_LIMIT: u64 = 64 * 1024;
/// The end of the CLI's output kept for its report.
pub(crate) const REPORT_TAIL: usize = 4 * 1024 * 1024;

/// What the node knows, as its prompt template and Gatehouse's tools read it: the run's
/// requirement and project (as its scope read them), its parameters, the upstream
/// artifacts' texts under `inputs` and a reviewer's comment.
pub(crate) fn context(
    job: &NodeDispatch,
    agent: &AgentSpec,
    scope: &RunScope,
    inputs: &Path,
) -> PromptContext {
    PromptContext {
        requirement: scope.prompt_requirement(),
        project: scope.prompt_project(),
        params: agent.work.params.clone(),
        inputs: upstream_texts(inputs),
        rework_comment: agent.work.rework_comment.clone(),
        run_id: job.run_id.to_string(),
        node: job.node.clone(),
        attempt: job.attempt,
    }
}

/// `get_requirement`'s answer: the requirement and project of `context`, and where in the
/// run the agent is.
pub(crate) fn requirement_json(context: &PromptContext) -> serde_json::Value {
    serde_json::json!({
        "requirement": context.requirement,
        "project": context.project,
        "run_id": context.run_id,
        "node": context.node,
        "attempt": context.attempt,
    })
}

/// `get_inputs`'s answer: the parameters, upstream texts and rework comment of `context`.
pub(crate) fn inputs_json(context: &PromptContext) -> serde_json::Value {
    serde_json::json!({
        "params": context.params,
        "inputs": context.inputs,
        "rework_comment": context.rework_comment,
    })
}

/// Renders the prompt over `context` and writes it (and the role's system text) where the
/// sandbox reads them. Returns the command to run, written for the API `api` when the
/// model requests go through the gateway, handing the CLI `tools` and `skills` (those
/// written into the inputs directory; for a CLI that reads no skills, listed in its system
/// text). `inputs_seen` is the inputs directory as the sandbox shows it to the script.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare(
    agent: &AgentSpec,
    context: &PromptContext,
    role: &Role,
    api: Option<ModelApi>,
    tools: &Tools,
    inputs: &Path,
    inputs_seen: &str,
    skills: &crate::skills::Attached,
) -> Result<String, String> {
    let prompt =
        render_prompt(&agent.prompt, context).map_err(|e| format!("the prompt template: {e}"))?;
    let dir = inputs.join(AGENT_DIR);
    let write = |name: &str, text: &str| {
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join(name), text))
            .map_err(|e| format!("writing the {name}: {e}"))
    };
    write("prompt.md", &prompt)?;
    let (tools, system) = with_skills(role, inputs_seen, tools, skills);
    if let Some(system) = &system {
        write("system.md", system)?;
    }
    let seen = |name: &str| format!("{inputs_seen}/{AGENT_DIR}/{name}");
    Ok(invocation(
        role,
        api,
        &tools,
        &seen("prompt.md"),
        system.as_ref().map(|_| seen("system.md")).as_deref(),
    ))
}

/// `script` behind the check that each stdio MCP server of `tools` has its program in the
/// sandbox of `profile`: an attempt whose server is missing fails before its CLI starts,
/// saying which ([`gatehouse_agent::mcp_preflight`]).
pub(crate) fn with_mcp_preflight(script: String, tools: &Tools, profile: &Profile) -> String {
    let checks = mcp_preflight(&tools.mcp, sandbox_place(profile));
    if checks.is_empty() {
        script
    } else {
        format!("{checks}{script}")
    }
}

/// The line the MCP check printed when it stopped an attempt (exited with
/// [`gatehouse_agent::MCP_PROGRAM_MISSING`], `stderr` its last line), to be the
/// attempt's reason as it is; `None` for any other end.
pub(crate) fn mcp_program_missing<'a>(
    status: &ExitStatus,
    stderr: Option<&'a str>,
) -> Option<&'a str> {
    let line = stderr?.trim();
    (*status == ExitStatus::Exited(MCP_PROGRAM_MISSING) && line.starts_with("MCP server `"))
        .then_some(line)
}

/// Where a job in `profile` runs, for a message saying what it lacks.
pub(crate) fn sandbox_place(profile: &Profile) -> SandboxPlace<'_> {
    match profile.kind {
        SandboxKind::Docker => SandboxPlace::Image(profile.image.as_deref().unwrap_or("not set")),
        SandboxKind::Process => SandboxPlace::Host,
    }
}

/// `tools` and the system text of an attempt with `skills`: the skills folder as the
/// sandbox sees it, and for a CLI that reads no skills of its own, the system text listing
/// them.
pub(crate) fn with_skills(
    role: &Role,
    inputs_seen: &str,
    tools: &Tools,
    skills: &crate::skills::Attached,
) -> (Tools, Option<String>) {
    let system = role.system_text();
    if skills.listed.is_empty() {
        return (tools.clone(), system);
    }
    let dir = format!("{inputs_seen}/{}", crate::skills::SKILLS_DIR);
    let note = (!role.executor.reads_skills())
        .then(|| gatehouse_agent::skills_note(&dir, &skills.listed))
        .flatten();
    let system = match (system, note) {
        (Some(system), Some(note)) => Some(format!("{system}\n\n{note}")),
        (system, note) => system.or(note),
    };
    let tools = Tools {
        skills_dir: Some(dir),
        ..tools.clone()
    };
    (tools, system)
}

/// Upstream artifacts (`inputs/<node>/<file>`) as text; binary files are left out and long
/// ones cut, so a prompt stays a prompt. The inputs are the runner's own copies, read all
/// the same as files a node wrote ([`gatehouse_sandbox::untrusted`]): only regular files,
/// no link followed, no more than the part a prompt may quote.
fn upstream_texts(inputs: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut texts = BTreeMap::new();
    let Ok(nodes) = std::fs::read_dir(inputs) else {
        return texts;
    };
    for node in nodes.flatten() {
        let name = node.file_name().to_string_lossy().into_owned();
        // The entry's own type: a link to a directory is not walked.
        if name == AGENT_DIR || !node.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let mut files = BTreeMap::new();
        for relative in walk(&node.path()) {
            let Ok(file) = untrusted::open(inputs, &format!("{name}/{relative}")) else {
                continue;
            };
            let Ok(start) = file.read_start(INPUT_TEXT_LIMIT) else {
                continue;
            };
            let Some(text) = text(&start) else {
                continue;
            };
            files.insert(relative, cut(text, file.size()));
        }
        texts.insert(name, files);
    }
    texts
}

/// The files below `dir`, as `/`-separated paths relative to it; links are not walked.
fn walk(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![(dir.to_owned(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let relative = format!("{prefix}{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push((entry.path(), format!("{relative}/"))),
                Ok(_) => files.push(relative),
                Err(_) => {}
            }
        }
    }
    files
}

/// `bytes` as text; `None` when they are not UTF-8, except for a character cut at the end.
fn text(bytes: &[u8]) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&bytes[..e.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

/// The text, with a note of how much of the file (`size` bytes) it leaves out.
fn cut(text: &str, size: u64) -> String {
    let mut text = text.to_owned();
    let more = size.saturating_sub(text.len() as u64);
    if more > 0 {
        text.push_str(&format!("\n… [{more} more bytes not shown]"));
    }
    text
}

/// Reads the CLI's report from the end of its output and prices its usage.
pub(crate) fn report(role: &Role, stdout_tail: &[u8]) -> Result<Report, String> {
    parse_report(role.executor, role.model.as_deref(), stdout_tail)
        .map_err(|e| format!("reading the agent's report: {e}"))
}

/// The rows to store for an attempt's usage, priced from `prices`.
pub(crate) fn usage_rows(
    job: &NodeDispatch,
    usage: &[ModelUsage],
    prices: &PriceTable,
) -> Vec<UsageRow> {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    usage
        .iter()
        .map(|u| UsageRow {
            run_id: job.run_id,
            node: job.node.clone(),
            attempt: i32::try_from(job.attempt).unwrap_or(i32::MAX),
            model: u.model.clone(),
            input_tokens: count(u.input_tokens),
            output_tokens: count(u.output_tokens),
            cache_read_tokens: count(u.cache_read_tokens),
            cache_write_tokens: count(u.cache_write_tokens),
            cost_usd: cost(u, prices),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_mcp_checks_own_line_and_status_are_its_reason() {
        let said = "MCP server `docs` runs `docs-mcp`, which this sandbox (image i) does not have";
        let missing = ExitStatus::Exited(MCP_PROGRAM_MISSING);
        assert_eq!(mcp_program_missing(&missing, Some(said)), Some(said));
        assert_eq!(mcp_program_missing(&missing, Some("config error")), None);
        assert_eq!(mcp_program_missing(&missing, None), None);
        assert_eq!(
            mcp_program_missing(&ExitStatus::Exited(1), Some(said)),
            None
        );
        let docker = Profile {
            kind: SandboxKind::Docker,
            image: Some("gatehouse-sandbox:agents".into()),
            ..Profile::default()
        };
        assert_eq!(
            sandbox_place(&docker),
            SandboxPlace::Image("gatehouse-sandbox:agents")
        );
        assert_eq!(sandbox_place(&Profile::default()), SandboxPlace::Host);
        // No stdio server: the script is the CLI's line, unchanged.
        assert_eq!(
            with_mcp_preflight("claude -p".into(), &Tools::none(), &docker),
            "claude -p"
        );
    }
}
