//! aider (`aider-chat` on PyPI), which edits files from a model's plain-text answer.
//!
//! aider calls no tools: the model answers in an edit format (a whole file, or
//! SEARCH/REPLACE blocks) and aider applies it, printing `Applied edit to <file>`. Its
//! output is plain text only (see [`events`] for what the trace reads from it). One call is
//! `aider --message-file <file>` with:
//! - `--yes-always`: answer every question (create a file, add it to the chat) with yes;
//!   nobody is at a terminal, and stdin is `/dev/null` in case something still asks.
//! - `--no-auto-commits`, `--no-git`, `--no-gitignore`: Gatehouse commits the workspace
//!   itself. Even without auto-commits aider `git add`s each file it creates, appends
//!   `.aider*` to `.gitignore` and keeps its repo-map cache (`.aider.tags.cache.v4/`) in
//!   the repository's root; `--no-git` stops all three. The price: no repo map, so the
//!   model sees only the files the prompt's author adds (`args = ["--file", "src/x.rs"]`,
//!   or `--read` for context), and new files it writes.
//! - `--no-check-update`, `--no-show-release-notes`, `--analytics-disable`: no network but
//!   the model's (it still tries to fetch litellm's price list from GitHub at every start,
//!   which nothing turns off; without DNS it fails at once).
//! - `--no-show-model-warnings`: a model litellm does not know (any name behind the
//!   gateway) would otherwise stop the call to ask.
//! - `--no-pretty`, `--no-stream`: plain lines, each answer printed once, whole.
//! - `--chat-history-file`, `--input-history-file` under `$HOME/.aider/`: by default they
//!   are in the workspace, where Gatehouse would commit them.
//!
//! aider has no system-prompt flag: on a conversation's first call the system text and the
//! prompt are joined into `$HOME/.aider/message.md`, which is the message. Neither has it a
//! session id: its conversation is the chat history file in the (per-conversation) home,
//! which `--restore-chat-history` reads back. The trace reports the fixed session id
//! [`SESSION`] once an answer came, so a turn has a `resume` and restores the history
//! (without the system text again: the history holds it).
//!
//! Through the gateway the model is `openai/<model>` or `anthropic/<model>` (litellm's
//! provider prefixes), at the address aider reads from `OPENAI_API_BASE` (with `/v1`) or
//! `ANTHROPIC_API_BASE` (the root), set on the command line from the gateway's variables;
//! the keys are the gateway's `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` as they are. Without
//! the gateway the role's `model` is passed as litellm names it.
//!
//! A failed model request does not fail the process: aider prints litellm's error
//! (`litellm.AuthenticationError: …`) and exits 0. It retries errors that may pass (5xx,
//! no connection) itself, printing `Retrying in 0.2 seconds...`, doubling up to a minute
//! (8 retries, 75 s against a gateway answering 500). Nothing sets that bound, so the
//! role's `max_retries` does not apply to aider.
//! Its state is `~/.aider/` (analytics switch, install id, caches, and here the histories).

mod events;

use super::{Call, Cli, ModelApi};
use crate::invocation::quote;
use crate::role::Role;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

pub(super) struct Aider;

/// The session id the trace reports after an answer: aider's conversation is the history
/// file in the home, so any id would do; this one only tells a turn to restore it.
pub(crate) const SESSION: &str = "aider";

/// Where the message (system text, then prompt) is written on a first call.
const MESSAGE_FILE: &str = "\"$HOME\"/.aider/message.md";

/// The flags every call passes; see the module documentation for why.
const FLAGS: [&str; 10] = [
    "--yes-always",
    "--no-auto-commits",
    "--no-git",
    "--no-gitignore",
    "--no-check-update",
    "--no-show-release-notes",
    "--analytics-disable",
    "--no-show-model-warnings",
    "--no-pretty",
    "--no-stream",
];

impl Cli for Aider {
    fn name(&self) -> &'static str {
        "aider"
    }

    fn program(&self) -> Option<&'static str> {
        Some("aider")
    }

    fn install(&self) -> Option<&'static str> {
        Some("pip install aider-chat")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::Anthropic, ModelApi::OpenAi]
    }

    /// litellm reads its bundled price list instead of fetching it at import.
    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        super::pairs(&[("LITELLM_LOCAL_MODEL_COST_MAP", "True")])
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        let Call {
            prompt_file,
            system_file,
            resume,
            api,
            ..
        } = *call;
        let mut steps = vec!["mkdir -p \"$HOME\"/.aider".to_owned()];
        // The history holds the system text from the first call.
        let message = match system_file.filter(|_| resume.is_none()) {
            Some(system_file) => {
                steps.push(format!(
                    "{{ cat {} && printf '\\n' && cat {}; }} > {MESSAGE_FILE}",
                    quote(system_file),
                    quote(prompt_file)
                ));
                MESSAGE_FILE.to_owned()
            }
            None => quote(prompt_file),
        };
        let mut words = Vec::new();
        match api {
            Some(ModelApi::OpenAi) => words.push("OPENAI_API_BASE=\"${OPENAI_BASE_URL}\""),
            Some(ModelApi::Anthropic) => {
                words.push("ANTHROPIC_API_BASE=\"${ANTHROPIC_BASE_URL}\"");
            }
            Some(ModelApi::Gemini) | None => {}
        }
        let mut words: Vec<String> = words.into_iter().map(str::to_owned).collect();
        words.extend(["aider", "--message-file"].map(str::to_owned));
        words.push(message);
        words.extend(FLAGS.map(str::to_owned));
        words.push("--chat-history-file".to_owned());
        words.push("\"$HOME\"/.aider/chat.md".to_owned());
        words.push("--input-history-file".to_owned());
        words.push("\"$HOME\"/.aider/input.history".to_owned());
        if resume.is_some() {
            words.push("--restore-chat-history".to_owned());
        }
        if let Some(model) = &role.model {
            words.push("--model".to_owned());
            words.push(quote(&litellm_model(model, api)));
        }
        words.extend(role.args.iter().map(|arg| quote(arg)));
        words.push("< /dev/null".to_owned());
        steps.push(words.join(" "));
        steps.join(" && ")
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
            .ok_or_else(|| crate::parse::no_result(super::Executor::Aider, text))
    }
}

/// The model as litellm routes it: with the provider prefix of the gateway's API (unless
/// the role wrote it already), as written otherwise.
fn litellm_model(model: &str, api: Option<ModelApi>) -> String {
    let prefix = match api {
        Some(ModelApi::OpenAi) => "openai/",
        Some(ModelApi::Anthropic) => "anthropic/",
        Some(ModelApi::Gemini) | None => "",
    };
    if model.starts_with(prefix) {
        model.to_owned()
    } else {
        format!("{prefix}{model}")
    }
}
