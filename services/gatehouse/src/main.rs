//! The `gatehouse` binary: parses the command line, loads configuration, and runs the
//! chosen command.

mod admin_token;
mod cli;
mod config;
mod health;
mod logging;
mod metrics;
mod secret;
mod serve;
mod server_url;
mod settings;
mod startup;
mod telemetry;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use backon::ExponentialBuilder;
use clap::Parser;
use gatehouse_bus::JetStreamBus;
use gatehouse_events::StreamKind;
use gatehouse_store::Store;

use crate::cli::args::{
    Cli, ConfigCommand, GatehouseCommand, RoleCommand, ScheduleCommand, SopCommand,
};
use crate::cli::{
    conversations, deliveries, doctor, identity, mcp, projects, reports, requirements, runs,
    schedules, sops,
};
use crate::config::Config;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The configuration says whether spans are exported, which the subscriber must know
    // when it is installed; until then errors go to stderr as every error does.
    let fail = |err: anyhow::Error| {
        eprintln!("error: {}", report(&err));
        ExitCode::FAILURE
    };
    let config = match Config::load(cli.config.as_deref()).context("loading the configuration") {
        Ok(config) => config,
        Err(err) => return fail(err),
    };
    let runtime = match tokio::runtime::Runtime::new().context("cannot start the async runtime") {
        Ok(rt) => rt,
        Err(err) => return fail(err),
    };
    let telemetry = match telemetry_service(&cli.command)
        .map(|service| {
            telemetry::Telemetry::start(&config.telemetry, &service, runtime.handle().clone())
        })
        .transpose()
    {
        Ok(telemetry) => telemetry.flatten(),
        Err(err) => return fail(err),
    };
    logging::init(cli.log_format, telemetry.as_ref());
    if let Some(t) = &telemetry {
        tracing::info!(
            endpoint = t.endpoint(),
            service = t.service_name(),
            "exporting spans over OTLP"
        );
    }
    let result = runtime.block_on(run(cli, config));
    // After the services stopped, while the runtime still carries the last export.
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(err),
    }
}

/// The default `service.name` of exported spans for the commands that run services
/// (`gatehouse` for `up`, `gatehouse-<service>` for `serve`); `None` for the client
/// commands, which export nothing.
fn telemetry_service(command: &GatehouseCommand) -> Option<String> {
    match command {
        GatehouseCommand::Up { .. } => Some("gatehouse".into()),
        GatehouseCommand::Serve { service, .. } => Some(format!("gatehouse-{}", service.name())),
        _ => None,
    }
}

/// The error and its causes on one line, leaving out causes whose text an outer error
/// already quotes (sqlx and async-nats errors repeat their sources).
fn report(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain().map(ToString::to_string) {
        if !message.contains(&cause) {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&cause);
        }
    }
    message
}

async fn run(cli: Cli, mut config: Config) -> anyhow::Result<()> {
    let client = cli::client::Client::for_args;
    match cli.command {
        GatehouseCommand::Up { data_dir, listen } => {
            if let Some(dir) = data_dir {
                config.server.data_dir = dir;
            }
            if let Some(listen) = listen {
                config.server.listen = listen;
            }
            serve::up(&config).await
        }
        GatehouseCommand::Serve {
            service,
            database_url,
            nats_url,
            data_dir,
            listen,
        } => {
            let server = &mut config.server;
            if let Some(url) = database_url {
                server.database_url = url;
            }
            if let Some(url) = nats_url {
                server.nats_url = url;
            }
            if let Some(dir) = data_dir {
                server.data_dir = dir;
            }
            if let Some(listen) = listen {
                server.listen = listen;
            }
            serve::serve(&config, service).await
        }
        GatehouseCommand::Run {
            command,
            client: args,
        } => runs::run(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Gate {
            command,
            client: args,
        } => runs::gate(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Login {
            person,
            client: args,
        } => identity::login(&client(&args, &config)?, person, args.json).await,
        GatehouseCommand::Mcp { client: args } => mcp::serve(client(&args, &config)?).await,
        GatehouseCommand::Token {
            command,
            client: args,
        } => identity::token(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Person {
            command,
            client: args,
        } => identity::person(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Report {
            command,
            client: args,
        } => reports::report(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Project {
            command,
            client: args,
        } => projects::project(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Requirement {
            command,
            client: args,
        } => requirements::requirement(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Delivery {
            command,
            client: args,
        } => deliveries::delivery(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Conversation {
            command,
            client: args,
        } => conversations::conversation(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Migrate {
            database_url,
            nats_url,
        } => migrate(&config, database_url, nats_url).await,
        GatehouseCommand::Schedule {
            command:
                ScheduleCommand::Preview {
                    expr,
                    timezone,
                    from,
                    count,
                },
            client: args,
        } => schedules::preview(&expr, &timezone, from.as_deref(), count, args.json),
        GatehouseCommand::Schedule {
            command,
            client: args,
        } => schedules::schedule(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Sop {
            command: SopCommand::Validate { files },
            client: args,
        } => sops::validate(&files, args.json),
        GatehouseCommand::Sop {
            command,
            client: args,
        } => sops::sop(&client(&args, &config)?, command, args.json).await,
        GatehouseCommand::Config {
            command: ConfigCommand::Check,
        } => check_config(&config),
        GatehouseCommand::Doctor { data_dir, json } => {
            if let Some(dir) = data_dir {
                config.server.data_dir = dir;
            }
            doctor::doctor(&config, json).await
        }
        GatehouseCommand::Role {
            command:
                RoleCommand::Check {
                    name,
                    data_dir,
                    json,
                },
        } => {
            if let Some(dir) = data_dir {
                config.server.data_dir = dir;
            }
            doctor::role_check(&config, &name, json).await
        }
    }
}

/// Retries for services that may still be starting beside Gatehouse: about a minute in all.
pub(crate) fn startup_retry() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(250))
        .with_max_delay(Duration::from_secs(10))
        .with_max_times(10)
        .with_jitter()
}

async fn migrate(
    config: &Config,
    database_url: Option<String>,
    nats_url: Option<String>,
) -> anyhow::Result<()> {
    let url = database_url.unwrap_or_else(|| config.server.effective_database_url());
    let store = Store::connect(&url, startup_retry()).await?;
    store
        .migrate()
        .await
        .with_context(|| format!("migrating {} at {}", store.backend(), store.target()))?;
    println!(
        "{} at {}: migrations applied",
        store.backend(),
        store.target()
    );
    store.close().await;

    let nats_url = nats_url.unwrap_or_else(|| config.server.nats_url.clone());
    if !nats_url.is_empty() {
        let prefix = &config.server.nats_prefix;
        JetStreamBus::connect(&nats_url, prefix.clone(), startup_retry()).await?;
        println!(
            "NATS at {}: streams {} and {} ready",
            gatehouse_bus::redact_url(&nats_url),
            prefix.stream_name(StreamKind::Events),
            prefix.stream_name(StreamKind::Jobs)
        );
    }
    Ok(())
}

/// `config check`: the configuration as read (URLs without their passwords), its
/// warnings, and what a start would refuse, from the one check `up` and `serve` make.
fn check_config(config: &Config) -> anyhow::Result<()> {
    let catalog = settings::catalog(config)?.current();
    let problems = settings::check::refusals(config, &catalog);
    // The URLs may carry passwords; what is printed must not.
    let mut shown = config.clone();
    shown.server.database_url = gatehouse_bus::redact_url(&shown.server.database_url);
    shown.server.nats_url = gatehouse_bus::redact_url(&shown.server.nats_url);
    print!(
        "{}",
        toml::to_string_pretty(&shown).context("printing the configuration")?
    );
    for warning in config.warnings() {
        eprintln!("warning: {warning}");
    }
    if problems.is_empty() {
        eprintln!("configuration is valid; every secret is readable");
        Ok(())
    } else {
        anyhow::bail!(
            "gatehouse up and serve would refuse this configuration:\n  {}",
            problems.join("\n  ")
        )
    }
}
