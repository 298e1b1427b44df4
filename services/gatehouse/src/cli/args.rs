//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::logging::LogFormat;

const EXAMPLES: &str = "\
Examples:
  # Run everything on this machine (SQLite and workspaces in .gatehouse/)
  gatehouse up

  # From a second terminal: start the built-in check; a lead reads its report and
  # approves its gate (the requester may not approve their own work)
  gatehouse run start platform-check
  gatehouse person add ana --group leads
  T=$(gatehouse token create ana --json | jq -r .token)
  gatehouse run artifact <RUN> report welcome.md --token $T
  gatehouse gate approve <RUN>/confirm --token $T
  gatehouse run watch <RUN>

  # Prepare the embedded SQLite database in .gatehouse/
  gatehouse migrate

  # Prepare Postgres and the JetStream streams for distributed mode
  gatehouse migrate --database-url postgres://gatehouse@db/gatehouse --nats nats://nats:4222

  # When does a schedule fire? (daylight-saving changes included)
  gatehouse schedule preview \"30 2 * * *\" --tz Europe/Berlin --from 2026-03-27T00:00:00Z -n 3

  # Check SOP files before committing them; the SOPs available to run
  gatehouse sop validate sops/*.yaml
  gatehouse sop list

  # Check a configuration file, its secrets and environment overrides
  gatehouse --config /etc/gatehouse/gatehouse.toml config check

  # JSON logs at debug level
  GATEHOUSE_LOG=debug gatehouse --log-format json migrate

Configuration: --config FILE, else ./gatehouse.toml if present, then GATEHOUSE_* variables
(GATEHOUSE_DATABASE_URL, GATEHOUSE_GITHUB__API_URL, ...). See deploy/gatehouse.example.toml.";

/// Gatehouse: GitHub issues and chat messages carried through versioned SOPs (agent steps,
/// scripts, human approval gates) to pull requests.
#[derive(Debug, Parser)]
#[command(name = "gatehouse", version, after_help = EXAMPLES)]
pub struct Cli {
    /// Configuration file (default: ./gatehouse.toml if it exists).
    #[arg(long, global = true, env = "GATEHOUSE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Log format on stderr.
    #[arg(
        long,
        global = true,
        env = "GATEHOUSE_LOG_FORMAT",
        value_enum,
        default_value_t
    )]
    pub log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub command: GatehouseCommand,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum GatehouseCommand {
    /// Apply database migrations and, with a NATS URL, create or update the JetStream
    /// streams. Safe to run again and from several replicas at once.
    Migrate {
        /// Database URL (overrides server.database_url).
        #[arg(long, value_name = "URL")]
        database_url: Option<String>,
        /// NATS URL (overrides server.nats_url).
        #[arg(long = "nats", value_name = "URL")]
        nats_url: Option<String>,
    },
    /// Run every service in this process: the API on --listen, the scheduler, a runner
    /// with the local-process sandbox, on SQLite in --data-dir and the in-process bus
    /// (or Postgres and NATS when configured). Writes DATA_DIR/admin.token on first start.
    Up {
        /// Data directory (overrides server.data_dir).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Listen address (overrides server.listen).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
    },
    /// Run one service on Postgres and NATS JetStream, beside any number of replicas of
    /// each service in other processes. Run `gatehouse migrate` first (until then the
    /// service waits). Answers /healthz, /readyz and /metrics on --listen (ingest: also the
    /// API and the webhooks).
    Serve {
        /// Which service.
        #[arg(value_enum)]
        service: crate::serve::Service,
        /// Database URL (overrides server.database_url); must be Postgres.
        #[arg(long, value_name = "URL")]
        database_url: Option<String>,
        /// NATS URL (overrides server.nats_url).
        #[arg(long = "nats", value_name = "URL")]
        nats_url: Option<String>,
        /// Data directory (overrides server.data_dir).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Listen address (overrides server.listen).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
    },
    /// Start, list, show, watch and steer runs.
    Run {
        /// What to do.
        #[command(subcommand)]
        command: RunCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List and decide gates.
    Gate {
        /// What to do.
        #[command(subcommand)]
        command: GateCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// The configured projects: their repositories, channels, SOPs and rights.
    Project {
        /// What to do.
        #[command(subcommand)]
        command: ProjectCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// What people asked for (GitHub issues, chat threads), with its runs and pull requests.
    Requirement {
        /// What to do.
        #[command(subcommand)]
        command: RequirementCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Every webhook and chat event received, with what became of it: why nothing
    /// happened, or what it started.
    Delivery {
        /// What to do.
        #[command(subcommand)]
        command: DeliveryCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Conversations with the assistant in chat threads: their turns, replies and tools.
    Conversation {
        /// What to do.
        #[command(subcommand)]
        command: ConversationCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Reports: tokens, cost, runs and durations, grouped.
    Report {
        /// What to do.
        #[command(subcommand)]
        command: ReportCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// The people known to Gatehouse (administrators add and remove them).
    Person {
        /// What to do.
        #[command(subcommand)]
        command: PersonCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Print a one-time link that signs you (or, for an administrator, PERSON) in to the
    /// web console. It works once, for a few minutes (`[console] login_link_ttl`).
    Login {
        /// Who it signs in (default: yourself; someone else needs an administrator).
        #[arg(long = "for", value_name = "PERSON")]
        person: Option<String>,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Serve Gatehouse's API as MCP tools on standard input and output, for your own
    /// assistant (Claude Code, Codex, ...): list and show runs, requirements and gates,
    /// read logs and artifacts, start and steer runs, and decide gates, with this token's
    /// scopes (deciding only with a token of your own, never one made --for-agent).
    Mcp {
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Manage API tokens: each acts for one person, with scopes.
    Token {
        /// What to do.
        #[command(subcommand)]
        command: TokenCommand,
        /// Server and credentials.
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Cron schedules.
    Schedule {
        /// What to do.
        #[command(subcommand)]
        command: ScheduleCommand,
        /// Server and credentials (not needed by `preview`).
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Check SOP files; list and reload the SOPs the server runs.
    Sop {
        /// What to do.
        #[command(subcommand)]
        command: SopCommand,
        /// Server and credentials (for `list` and `reload`).
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Check that every agent role can work, on this host's sandboxes and the runner's
    /// gateway and egress proxy: its CLI is in its sandbox, it reaches its provider
    /// through the gateway with the real key (never printed), and a host outside its
    /// allow-list is refused. One line per check; exits non-zero when any fails.
    Doctor {
        /// Data directory (overrides server.data_dir); the checks' scratch files go under it.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Inspect the configuration.
    Config {
        /// What to do with it.
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Check one agent role for real.
    Role {
        /// What to do with it.
        #[command(subcommand)]
        command: RoleCommand,
    },
}

/// Where the client verbs send their requests.
#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    /// Server URL (default: the address `gatehouse up` recorded in the data directory's
    /// server.url, else http://<server.listen>).
    #[arg(long, global = true, env = "GATEHOUSE_SERVER", value_name = "URL")]
    pub server: Option<String>,
    /// API token (default: the admin token in the data directory).
    #[arg(long, global = true, env = "GATEHOUSE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Data directory holding admin.token (overrides server.data_dir).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// `gatehouse report ...`
#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Tokens, cost, run counts and durations of the runs created in a window.
    Usage {
        /// Group by project, person, sop, sop-version or model.
        #[arg(long, default_value = "sop")]
        by: String,
        /// The window: a duration back from now (30d, 12h) or an RFC 3339 time.
        #[arg(long, default_value = "30d")]
        since: String,
        /// Print CSV (a header row, then a row per group) instead of a table.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
    },
}

/// `gatehouse project ...`
#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// List the projects with their repositories.
    List,
}

/// `gatehouse delivery ...`
#[derive(Debug, Subcommand)]
pub enum DeliveryCommand {
    /// List deliveries, newest first, with what became of each.
    List {
        /// Only this source's: github, slack or discord.
        #[arg(long)]
        source: Option<String>,
        /// Only those that came to this: processed, ignored, pending or failed.
        #[arg(long)]
        outcome: Option<String>,
        /// At most this many (default 50, at most 500).
        #[arg(long)]
        limit: Option<i64>,
    },
    /// Show a delivery: what became of it, what it started, and (for administrators)
    /// its payload.
    Show {
        /// `SOURCE:DELIVERY_ID` as listed, or the sender's delivery id alone.
        id: String,
    },
}

/// `gatehouse requirement ...`
#[derive(Debug, Subcommand)]
pub enum RequirementCommand {
    /// List requirements, newest first.
    List {
        /// Only those in this state: open, closed or delivered.
        #[arg(long)]
        state: Option<String>,
    },
    /// Show a requirement: where it came from, its runs, pull requests and usage.
    Show {
        /// Requirement id.
        id: String,
    },
}

/// `gatehouse conversation ...`
#[derive(Debug, Subcommand)]
pub enum ConversationCommand {
    /// List conversations, newest first.
    List {
        /// Only this project's.
        #[arg(long)]
        project: Option<String>,
    },
    /// Show a conversation: its turns, each attempt's tools, reply and usage.
    Show {
        /// Conversation id.
        id: String,
    },
    /// Stop the conversation's running turn, as `stop` in its thread does.
    Stop {
        /// Conversation id.
        id: String,
    },
}

/// `gatehouse run ...`
#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// Start a run of an SOP.
    Start {
        /// SOP name (`gatehouse sop list`).
        sop: String,
        /// A parameter, KEY=VALUE; repeat for more.
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = key_value)]
        params: Vec<(String, String)>,
        /// The project it works on (`gatehouse project list`); found from --repo or
        /// --issue when not given.
        #[arg(long)]
        project: Option<String>,
        /// A repository of the project to check out, owner/name; repeat for more (default:
        /// all of the project's).
        #[arg(long = "repo", value_name = "OWNER/NAME")]
        repositories: Vec<String>,
        /// The GitHub issue it works on, owner/name#N (its pull request closes it).
        #[arg(long, value_name = "OWNER/NAME#N")]
        issue: Option<String>,
    },
    /// List runs, newest first.
    List {
        /// Only runs with this status.
        #[arg(long)]
        status: Option<String>,
    },
    /// Show a run as a tree of nodes with status, attempt, rework count and duration.
    Show {
        /// Run id.
        id: String,
        /// Draw the tree (the default; kept for scripts that ask for it).
        #[arg(long)]
        graph: bool,
        /// Also write the run's graph as an SVG picture to FILE (`-` for stdout, alone).
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Follow a run's progress and output until it ends, saying where it waits for
    /// people; exit code 1 unless it succeeded.
    Watch {
        /// Run id.
        id: String,
    },
    /// Print a run's output: every line, or the last `--tail` lines; `--follow` keeps
    /// printing new lines until the run ends.
    Logs {
        /// Run id.
        id: String,
        /// Only this node's lines.
        #[arg(long)]
        node: Option<String>,
        /// Only the last N lines (at most 5000).
        #[arg(long, value_name = "N")]
        tail: Option<u32>,
        /// Keep printing new lines until the run ends.
        #[arg(short, long)]
        follow: bool,
    },
    /// Cancel a run.
    Cancel {
        /// Run id.
        id: String,
    },
    /// Pause a run.
    Pause {
        /// Run id.
        id: String,
    },
    /// Resume a paused run.
    Resume {
        /// Run id.
        id: String,
    },
    /// Run a node again, with everything after it.
    Retry {
        /// Run id.
        id: String,
        /// The node.
        #[arg(long)]
        node: String,
    },
    /// Print (or save) an artifact a node produced, e.g. the report a gate asks about.
    Artifact {
        /// Run id.
        run: String,
        /// The node that produced it.
        node: String,
        /// The artifact's name, as `run show` lists it.
        name: String,
        /// Which attempt of the node (default: the latest that has it).
        #[arg(long)]
        attempt: Option<u32>,
        /// Write it to this file instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))
}

/// `gatehouse gate ...`
#[derive(Debug, Subcommand)]
pub enum GateCommand {
    /// Gates waiting for a decision.
    List,
    /// Approve a gate (RUN/NODE).
    Approve {
        /// RUN/NODE.
        gate: String,
        /// A comment for the record.
        #[arg(long)]
        comment: Option<String>,
    },
    /// Reject a gate: the run fails.
    Reject {
        /// RUN/NODE.
        gate: String,
        /// Why.
        #[arg(long)]
        comment: Option<String>,
    },
    /// Send the work back to an earlier node, with a comment for whoever redoes it.
    SendBack {
        /// RUN/NODE.
        gate: String,
        /// The node to redo.
        #[arg(long)]
        to: String,
        /// What to change.
        #[arg(long)]
        comment: Option<String>,
    },
}

/// `gatehouse token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token acting for PERSON (default: yourself); it is printed once. Only an
    /// administrator creates tokens for others.
    Create {
        /// The person it acts for (`gatehouse person list`).
        person: Option<String>,
        /// A unique name for it (default: the person's id, numbered if taken).
        #[arg(long)]
        name: Option<String>,
        /// What it may do: read, run, decide, admin; repeat or separate with commas
        /// (default: read, run and decide, as far as your own token has them).
        #[arg(long = "scope", value_name = "SCOPE", value_delimiter = ',')]
        scopes: Vec<String>,
        /// It stops working after this long (`30d`, `12h`; default: never).
        #[arg(long, value_name = "DURATION")]
        expires: Option<String>,
        /// For an agent to use (an assistant, a bot): it acts for the person but the API
        /// refuses it every gate decision, whatever its scopes.
        #[arg(long)]
        for_agent: bool,
    },
    /// Tokens in use: your own, or everyone's for an administrator.
    List {
        /// Only this person's (administrators).
        #[arg(long)]
        person: Option<String>,
    },
    /// Revoke a token by name: it stops working at once.
    Revoke {
        /// The token's name (`gatehouse token list`).
        name: String,
    },
}

/// `gatehouse person ...`
#[derive(Debug, Subcommand)]
pub enum PersonCommand {
    /// Add a person (administrators). Configured `[[people]]` are changed in the file.
    Add {
        /// Their Gatehouse id (what gates and tokens name).
        id: String,
        /// Their GitHub login.
        #[arg(long)]
        github: Option<String>,
        /// Their Slack user id (U...).
        #[arg(long)]
        slack: Option<String>,
        /// Their Discord user id.
        #[arg(long)]
        discord: Option<String>,
        /// A group (gates name them as group:NAME; `admins` administer Gatehouse); repeat
        /// or separate with commas.
        #[arg(long = "group", value_name = "GROUP", value_delimiter = ',')]
        groups: Vec<String>,
    },
    /// Everyone known: configured people and those added here.
    List,
    /// Remove a person added here, revoking their tokens (administrators).
    Remove {
        /// Their id.
        id: String,
    },
}

/// `gatehouse schedule ...`
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Print the next fire times of a cron expression as RFC 3339 with offset, one per
    /// line: the same computation the scheduler uses, daylight-saving rules included.
    Preview {
        /// Five fields (or six with seconds first), or @hourly, @daily, @weekly, @monthly.
        expr: String,
        /// IANA time zone.
        #[arg(long = "tz", default_value = "UTC", value_name = "ZONE")]
        timezone: String,
        /// Start after this RFC 3339 time (default: now).
        #[arg(long, value_name = "TIME")]
        from: Option<String>,
        /// How many fire times.
        #[arg(short = 'n', default_value_t = 5)]
        count: usize,
    },
    /// List schedules with their last and next fire.
    List,
    /// A schedule: its definition, next fire times and recent fires.
    Show {
        /// Schedule name.
        name: String,
    },
    /// Create a schedule. Fires are owed from now on (use backfill for the past).
    Create {
        /// Unique name: letters, digits, `.`, `_` and `-`.
        name: String,
        /// Five fields (or six with seconds first), or @hourly, @daily, @weekly, @monthly.
        #[arg(long)]
        cron: String,
        /// IANA time zone.
        #[arg(long = "tz", default_value = "UTC", value_name = "ZONE")]
        timezone: String,
        /// SOP to run.
        #[arg(long)]
        sop: String,
        /// A parameter for the SOP, KEY=VALUE; repeat for more.
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = key_value)]
        params: Vec<(String, String)>,
        /// skip, buffer_one, buffer_all, cancel_other or allow_all.
        #[arg(long, default_value = "skip")]
        overlap: String,
        /// How late a missed fire may still start (e.g. 1h, 0s).
        #[arg(long, default_value = "1h", value_name = "DURATION")]
        catchup_window: String,
        /// Start each fire up to this much after its cron time (e.g. 5m).
        #[arg(long, value_name = "DURATION")]
        jitter: Option<String>,
        /// No fire before this RFC 3339 time.
        #[arg(long, value_name = "TIME")]
        start: Option<String>,
        /// No fire after this RFC 3339 time.
        #[arg(long, value_name = "TIME")]
        end: Option<String>,
        /// The project its runs work on (all of the project's repositories).
        #[arg(long)]
        project: Option<String>,
    },
    /// Pause a schedule; fires that fall due while paused are not owed.
    Pause {
        /// Schedule name.
        name: String,
        /// Why, for whoever looks next.
        #[arg(long)]
        note: Option<String>,
    },
    /// Resume a paused schedule from now on.
    Resume {
        /// Schedule name.
        name: String,
    },
    /// Fire a schedule now (its overlap policy applies).
    Trigger {
        /// Schedule name.
        name: String,
    },
    /// Run the cron times between --from and --to that never ran, one after another.
    Backfill {
        /// Schedule name.
        name: String,
        /// From this RFC 3339 time (inclusive).
        #[arg(long, value_name = "TIME")]
        from: String,
        /// To this RFC 3339 time (inclusive).
        #[arg(long, value_name = "TIME")]
        to: String,
    },
    /// Delete a schedule created through the API (runs it started stay).
    Delete {
        /// Schedule name.
        name: String,
    },
}

/// `gatehouse sop ...`
#[derive(Debug, Subcommand)]
pub enum SopCommand {
    /// Validate SOP files; every problem is printed as FILE:LINE:COLUMN: MESSAGE and the exit
    /// code is 1 when any file is invalid.
    Validate {
        /// The files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// List the SOPs the server runs now (the built-ins and its server.sop_dirs), and the
    /// files it left out with their problems.
    List,
    /// Make the server read its SOP files again now (it also does every
    /// server.sop_reload); exit code 1 when a file is invalid.
    Reload,
}

/// `gatehouse role ...`
#[derive(Debug, Subcommand)]
pub enum RoleCommand {
    /// The doctor's checks of one role, then its CLI run once in its sandbox against its
    /// provider on a one-word prompt: prints the CLI's version (for an ACP agent its name
    /// and protocol), the tools it called, its answer and the tokens the gateway metered,
    /// or why it failed. Spends one small model request.
    Check {
        /// The role (`[roles.NAME]`).
        name: String,
        /// Data directory (overrides server.data_dir); the check's scratch files go under it.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `gatehouse config ...`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Load and validate the configuration, read every secret it references, and print the
    /// effective configuration as TOML with secrets shown by source only.
    Check,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
