//! pi, Mario Zechner's coding agent (`@mariozechner/pi-coding-agent` on npm).
//!
//! `pi -p --mode json` (print mode, one JSON event per line: see [`events`]). The prompt
//! comes on stdin, which pi reads as the message; the system text goes through
//! `--append-system-prompt`, keeping pi's own system prompt and tool instructions, and is
//! given again on every call, since pi builds its system prompt per invocation. A turn
//! continues the session with `--session <id>` (its UUIDv7). pi has no permission system at
//! all: its tools always run, inside Gatehouse's sandbox.
//!
//! Through the gateway pi reads its provider from `~/.pi/agent/models.json`, which the
//! command line writes before each call ([`super::home_file`]): a provider `gatehouse`
//! with the gateway's address (from its variable, expanded by the shell), the wire API
//! (`anthropic-messages` at the root, `openai-responses` at `…/v1`,
//! `google-generative-ai` at `…/v1beta`) and as `apiKey` the *name* of the variable
//! holding the attempt's token, which pi reads itself: the token is neither in the file
//! nor on the command line. `--provider gatehouse --model <model>` then picks it.
//!
//! `PI_OFFLINE=1` keeps it from the network at start (update check, install telemetry).
//! pi exits 0 even when its model request failed: the failure is in its output. It retries
//! a failed request 3 times (2, 4, 8 s), announcing each with an `auto_retry_start` event.
//!
//! Its sessions are `~/.pi/agent/sessions/--<cwd>--/<time>_<uuidv7>.jsonl`
//! (`PI_CODING_AGENT_DIR` moves `~/.pi/agent`); the `_` between time and id is not a form
//! [`crate::SessionFiles`] names, so the runner cannot tell whether a home holds one.

mod events;

use serde_json::json;

use super::{Call, Cli, ModelApi, home_file, pairs};
use crate::invocation::quote;
use crate::role::Role;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

pub(super) struct Pi;

/// The provider Gatehouse defines for the gateway in `models.json`.
const PROVIDER: &str = "gatehouse";

impl Cli for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn program(&self) -> Option<&'static str> {
        Some("pi")
    }

    fn install(&self) -> Option<&'static str> {
        Some("npm install -g @mariozechner/pi-coding-agent")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::Anthropic, ModelApi::OpenAi, ModelApi::Gemini]
    }

    /// No network at start (`PI_OFFLINE`: no update check, no install telemetry), and
    /// each of those turned off by name as well.
    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        pairs(&[
            ("PI_OFFLINE", "1"),
            ("PI_SKIP_VERSION_CHECK", "1"),
            ("PI_TELEMETRY", "0"),
        ])
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        let Call {
            prompt_file,
            system_file,
            resume,
            api,
            ..
        } = *call;
        let mut words: Vec<String> = ["pi", "-p", "--mode", "json"].map(String::from).into();
        let settings = api.map(|api| models_file(api, role.model.as_deref()));
        if settings.is_some() {
            words.push("--provider".to_owned());
            words.push(PROVIDER.to_owned());
        }
        if let Some(model) = &role.model {
            words.push("--model".to_owned());
            words.push(quote(model));
        }
        if let Some(id) = resume {
            words.push("--session".to_owned());
            words.push(quote(id));
        }
        if let Some(system_file) = system_file {
            words.push("--append-system-prompt".to_owned());
            words.push(format!("\"$(cat {})\"", quote(system_file)));
        }
        words.extend(role.args.iter().map(|arg| quote(arg)));
        words.push("<".to_owned());
        words.push(quote(prompt_file));
        let pi = words.join(" ");
        match settings {
            Some(step) => format!("{step} && {pi}"),
            None => pi,
        }
    }

    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"$HOME/.pi/agent/skills\""]
    }

    /// It has no MCP client.
    fn takes_mcp(&self) -> bool {
        false
    }

    fn events(&self) -> Box<dyn Events> {
        Box::<events::Reader>::default()
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        events::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::Pi, text))
    }
}

/// The shell step writing `~/.pi/agent/models.json` for the gateway in `api`'s terms.
fn models_file(api: ModelApi, model: Option<&str>) -> String {
    let (base_url, wire, key, var) = match api {
        ModelApi::Anthropic => (
            "${ANTHROPIC_BASE_URL}",
            "anthropic-messages",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
        ),
        ModelApi::OpenAi => (
            "${OPENAI_BASE_URL}",
            "openai-responses",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ),
        ModelApi::Gemini => (
            "${GOOGLE_GEMINI_BASE_URL}/v1beta",
            "google-generative-ai",
            "GEMINI_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
        ),
    };
    let models: Vec<_> = model.map(|id| json!({"id": id})).into_iter().collect();
    let contents = json!({
        "providers": {
            PROVIDER: {"baseUrl": base_url, "api": wire, "apiKey": key, "models": models}
        }
    });
    home_file(".pi/agent/models.json", &contents.to_string(), &[var])
}
