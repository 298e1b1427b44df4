//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::logging::LogFormat;

const EXAMPLES: &str = "\
Examples:
  # Prepare the embedded SQLite database in .gatehouse/
  gatehouse migrate

  # Prepare Postgres and the JetStream streams for distributed mode
  gatehouse migrate --database-url postgres://gatehouse@db/gatehouse --nats nats://nats:4222

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
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
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
    /// Check and list SOP definitions.
    Sop {
        /// What to do.
        #[command(subcommand)]
        command: SopCommand,
    },
    /// Inspect the configuration.
    Config {
        /// What to do with it.
        #[command(subcommand)]
        command: ConfigCommand,
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
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the SOPs this configuration can run: the built-ins and those in server.sop_dirs.
    List {
        /// Print a JSON array instead of a table.
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
