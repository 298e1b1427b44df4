use std::time::Duration;

use super::*;

/// Loads `toml` as `gatehouse.toml` with `env` set, in a private working directory.
// figment's Jail fixes the closure's error type.
#[allow(clippy::result_large_err)]
fn load_with(toml: &str, env: &[(&str, &str)]) -> Result<Config, String> {
    let mut result = None;
    figment::Jail::expect_with(|jail| {
        jail.create_file("gatehouse.toml", toml)?;
        for (k, v) in env {
            jail.set_env(k, v);
        }
        result = Some(Config::load(None).map_err(|e| e.to_string()));
        Ok(())
    });
    result.unwrap()
}

#[test]
fn defaults_without_a_file() {
    let c = load_with("", &[]).unwrap();
    assert_eq!(c.server.listen, "127.0.0.1:8080");
    assert_eq!(
        c.server.effective_database_url(),
        "sqlite:.gatehouse/gatehouse.db"
    );
    assert_eq!(c.server.nats_prefix.as_str(), "gatehouse");
    assert_eq!(
        c.sandbox.profiles["default"].kind,
        gatehouse_sandbox::SandboxKind::Process
    );
}

#[test]
fn a_schedule_runs_an_sop_or_an_agent_task() {
    let role = "[roles.triager]\nexecutor = \"codex\"\n";
    let schedule = |target: &str| {
        format!("{role}[[schedules]]\nname = \"triage\"\ncron = \"0 3 * * *\"\n{target}")
    };
    let c = load_with(
        &schedule("role = \"triager\"\nprompt = \"Triage {{ params }}.\"\n"),
        &[],
    )
    .unwrap();
    assert_eq!(c.schedules[0].target(), "schedule-triage");
    let task = c.schedules[0].agent_task().unwrap().unwrap();
    assert_eq!(task.name, "schedule-triage");
    assert!(matches!(
        &task.node("agent").unwrap().kind,
        gatehouse_sop::NodeKind::Agent { role, .. } if role == "triager"
    ));
    for (target, error) in [
        (
            "sop = \"tick\"\nrole = \"triager\"\nprompt = \"x\"\n",
            "schedule `triage`: give either `sop` or `role` and `prompt`",
        ),
        (
            "",
            "schedule `triage`: needs `sop`, or `role` and `prompt` for an agent task",
        ),
        (
            "role = \"triager\"\n",
            "schedule `triage`: `role` and `prompt` go together",
        ),
        (
            "role = \"nobody\"\nprompt = \"x\"\n",
            "schedule `triage`: the agent role `nobody` is not configured (add [roles.nobody])",
        ),
    ] {
        assert_eq!(load_with(&schedule(target), &[]).unwrap_err(), error);
    }
    let bad = load_with(
        &schedule("role = \"triager\"\nprompt = \"{{ nope }}\"\n"),
        &[],
    );
    assert!(
        bad.unwrap_err().contains("`nope` is undefined"),
        "a bad prompt is refused at load"
    );
}

#[test]
fn the_documented_example_parses() {
    let c = load_with(
        include_str!("../../../../deploy/gatehouse.example.toml"),
        &[],
    )
    .unwrap();
    let github = c.github.unwrap();
    assert_eq!(github.triggers[0].label, "sop:bug-fix");
    assert_eq!(github.webhook_secrets.len(), 1);
    assert_eq!(c.people[0].groups, vec!["leads"]);
    assert_eq!(c.schedules[0].catchup_window, Duration::from_secs(3600));
    assert_eq!(c.schedules[0].overlap, "skip");
    assert_eq!(c.sandbox.profiles["default"].pids, Some(256));
    assert_eq!(
        c.slack.unwrap().approvals_channel.as_deref(),
        Some("C0123456")
    );
}

#[test]
fn environment_overrides_the_file() {
    let c = load_with(
        "[server]\ndatabase_url = \"sqlite:file.db\"\n[github]\n",
        &[
            ("GATEHOUSE_DATABASE_URL", "postgres://root@db/gatehouse"),
            ("GATEHOUSE_SERVER__NATS_PREFIX", "staging"),
            ("GATEHOUSE_GITHUB__API_URL", "http://127.0.0.1:9000"),
            ("GATEHOUSE_TOKEN", "a CLI token, not a config key"),
        ],
    )
    .unwrap();
    assert_eq!(c.server.database_url, "postgres://root@db/gatehouse");
    assert_eq!(c.server.nats_prefix.as_str(), "staging");
    assert_eq!(c.github.unwrap().api_url, "http://127.0.0.1:9000");
}

#[test]
fn unknown_keys_and_bad_values_name_the_key() {
    let err = load_with("[server]\ndatabse_url = \"x\"\n", &[]).unwrap_err();
    assert!(err.contains("databse_url"), "{err}");
    let err = load_with("[server]\nnats_prefix = \"a.b\"\n", &[]).unwrap_err();
    assert!(err.contains("invalid subject prefix `a.b`"), "{err}");
    let err = load_with("[[schedules]]\nname = \"n\"\ncron = \"* * * * *\"\nsop = \"s\"\ncatchup_window = \"soon\"\n", &[]).unwrap_err();
    assert!(err.contains("catchup_window"), "{err}");
}

#[test]
fn duplicates_are_refused() {
    let err = load_with(
        "[[people]]\nid = \"ana\"\nslack = \"U1\"\n[[people]]\nid = \"bo\"\nslack = \"U1\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(err, "Slack id `U1` is defined twice");
}

#[test]
fn schedules_are_checked_when_loaded() {
    let schedule = |cron: &str, tz: &str| {
        format!(
            "[[schedules]]\nname = \"n\"\ncron = \"{cron}\"\ntimezone = \"{tz}\"\nsop = \"s\"\n"
        )
    };
    assert_eq!(
        load_with(&schedule("0 3 * * *", "Mars/Base"), &[]).unwrap_err(),
        "schedule `n`: timezone `Mars/Base` is not a known IANA time zone (e.g. Europe/Berlin, UTC)"
    );
    assert_eq!(
        load_with(&schedule("0 0 30 2 *", "UTC"), &[]).unwrap_err(),
        "schedule `n`: cron `0 0 30 2 *` never fires: no date matches it"
    );
    assert!(load_with(&schedule("0 3 * * *", "Europe/Berlin"), &[]).is_ok());
    let windowed = |start: &str, end: &str| {
        format!(
            "{}start = \"{start}\"\nend = \"{end}\"\n",
            schedule("0 3 * * *", "UTC")
        )
    };
    assert_eq!(
        load_with(
            &windowed("2026-12-01T04:00:00Z", "2026-12-01T05:00:00Z"),
            &[]
        )
        .unwrap_err(),
        "schedule `n`: cron `0 3 * * *` never fires before the schedule's end 2026-12-01T05:00:00Z"
    );
    assert_eq!(
        load_with(&windowed("tomorrow", "2026-12-01T05:00:00Z"), &[]).unwrap_err(),
        "schedule `n`: `tomorrow` is not an RFC 3339 time with offset (e.g. 2026-03-29T00:00:00+01:00)"
    );
    assert!(
        load_with(
            &windowed("2026-12-01T00:00:00Z", "2027-01-01T00:00:00+01:00"),
            &[]
        )
        .is_ok()
    );
}

#[test]
fn github_app_keys_go_together() {
    assert_eq!(
        load_with("[github]\napp_id = 12345\n", &[]).unwrap_err(),
        "github.app_id and github.private_key go together: a GitHub App needs both"
    );
    let app = load_with(
        "[github]\napp_id = 12345\nprivate_key = { file = \"app.pem\" }\n",
        &[],
    )
    .unwrap();
    assert_eq!(app.github.unwrap().app_id, Some(12345));
}

#[test]
fn a_trigger_names_the_repositories_it_may_reach() {
    let trigger = |extra: &str| {
        load_with(
            &format!("[github]\n[[github.triggers]]\nlabel = \"bug\"\nsop = \"bug-fix\"\n{extra}"),
            &[],
        )
    };
    assert_eq!(
        trigger("").unwrap_err(),
        "github.triggers (label `bug`): no `repos`: write repos = [\"owner/*\"] (or list the repositories, e.g. [\"acme/api\"]) so the label starts runs only there and reconciliation searches only there"
    );
    assert_eq!(
        trigger("repos = [\"*/api\"]").unwrap_err(),
        "github.triggers (label `bug`): `*/api` has a wildcard owner; name the owner (`acme/*`), so GitHub is searched only there"
    );
    assert_eq!(
        trigger("repos = [\"acme/..\"]").unwrap_err(),
        "github.triggers (label `bug`): `acme/..` has a `.` or `..` segment"
    );
    assert_eq!(
        trigger("repos = [\"acme/*\"]\nstarters = [\"group:\"]").unwrap_err(),
        "github.triggers (label `bug`): starters: `group:` names no group; write group:<name>"
    );
    let ok = trigger("repos = [\"acme/*\"]\nrequire_person = true\nstarters = [\"group:leads\"]")
        .unwrap();
    let t = &ok.github.unwrap().triggers[0];
    assert!(t.require_person);
    assert_eq!(t.starters.as_deref(), Some(&["group:leads".to_owned()][..]));
}

#[test]
fn listener_limits_take_durations_and_refuse_zero() {
    let c = load_with("", &[]).unwrap();
    assert_eq!(c.server.header_timeout, Duration::from_secs(10));
    assert_eq!(c.server.body_timeout, Duration::from_secs(60));
    assert_eq!(c.server.idle_timeout, Duration::from_secs(60));
    assert_eq!(c.server.max_connections, 1024);
    let c = load_with(
        "[server]\nheader_timeout = \"2s\"\nbody_timeout = \"1m 30s\"\nmax_connections = 8\n",
        &[("GATEHOUSE_SERVER__IDLE_TIMEOUT", "5s")],
    )
    .unwrap();
    assert_eq!(c.server.header_timeout, Duration::from_secs(2));
    assert_eq!(c.server.body_timeout, Duration::from_secs(90));
    assert_eq!(c.server.idle_timeout, Duration::from_secs(5));
    assert_eq!(c.server.max_connections, 8);
    assert_eq!(
        load_with("[server]\nheader_timeout = \"0s\"\n", &[]).unwrap_err(),
        "server.header_timeout must be more than zero"
    );
    assert_eq!(
        load_with("[server]\nmax_connections = 0\n", &[]).unwrap_err(),
        "server.max_connections must be more than zero"
    );
}

#[test]
fn webhook_bodies_are_bounded_by_default() {
    let c = load_with("[github]\n[slack]\n[discord]\n", &[]).unwrap();
    assert_eq!(c.server.max_unverified_bodies, 16);
    assert_eq!(c.github.unwrap().max_body_bytes, 5 * 1024 * 1024);
    assert_eq!(c.slack.unwrap().max_body_bytes, 1024 * 1024);
    assert_eq!(c.discord.unwrap().max_body_bytes, 1024 * 1024);
    assert_eq!(
        load_with("[server]\nmax_unverified_bodies = 0\n", &[]).unwrap_err(),
        "server.max_unverified_bodies must be more than zero"
    );
}

#[test]
fn the_metrics_token_is_a_secret_config_check_reads() {
    let c = load_with(
        "[server]\nmetrics_listen = \"127.0.0.1:9090\"\nmetrics_token = { env = \"GATEHOUSE_TEST_METRICS\" }\n",
        &[],
    )
    .unwrap();
    assert_eq!(c.server.metrics_listen, "127.0.0.1:9090");
    let secrets: Vec<String> = c.secrets().map(|(key, s)| format!("{key}: {s}")).collect();
    assert_eq!(
        secrets,
        ["server.metrics_token: environment variable GATEHOUSE_TEST_METRICS"]
    );
}

#[test]
fn an_explicit_file_must_exist() {
    let err = Config::load(Some(Path::new("/nonexistent/gatehouse.toml"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "config file /nonexistent/gatehouse.toml does not exist"
    );
}

#[test]
fn roles_reach_their_model_through_a_configured_provider() {
    let providers = "[providers.anthropic]\nkind = \"anthropic\"\nkey = { env = \"ANTHROPIC_API_KEY\" }\n\
                     [providers.local]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:8000/v1\"\nkey = { env = \"LOCAL_KEY\" }\n";
    let c = load_with(
        &format!(
            "{providers}[roles.coder]\nexecutor = \"claude-code\"\nprovider = \"anthropic\"\n\
             models = [\"claude-sonnet-4-5\"]\nmodel = \"claude-sonnet-4-5\"\n\
             [roles.reviewer]\nexecutor = \"codex\"\nprovider = \"local\"\n"
        ),
        &[],
    )
    .unwrap();
    assert_eq!(
        c.providers["anthropic"].base_url().unwrap().as_str(),
        "https://api.anthropic.com/"
    );
    assert_eq!(c.roles["coder"].provider.as_deref(), Some("anthropic"));
    let keys: Vec<String> = c.secrets().map(|(k, _)| k).collect();
    assert!(keys.contains(&"providers.local.key".to_owned()), "{keys:?}");

    for (toml, error) in [
        (
            "[roles.coder]\nexecutor = \"claude-code\"\nprovider = \"anthropic\"\n".to_owned(),
            "roles.coder: provider `anthropic` is not configured (add [providers.anthropic]); none is configured",
        ),
        (
            format!("{providers}[roles.coder]\nexecutor = \"codex\"\nprovider = \"anthropic\"\n"),
            "roles.coder: executor \"codex\" speaks OpenAI's API, but provider `anthropic` is of kind \"anthropic\"",
        ),
        (
            "[providers.x]\nkind = \"openai-compatible\"\nkey = \"k\"\n".to_owned(),
            "providers.x: a provider of kind \"openai-compatible\" needs `base_url`",
        ),
        (
            "[providers.x]\nkind = \"openai\"\nbase_url = \"https://u:p@api.example.com\"\nkey = \"k\"\n"
                .to_owned(),
            "carries credentials",
        ),
        (
            "[providers.\"a b\"]\nkind = \"openai\"\nkey = \"k\"\n".to_owned(),
            "providers.a b: a provider's name may hold only letters",
        ),
        (
            format!(
                "{providers}[roles.coder]\nexecutor = \"claude-code\"\nprovider = \"anthropic\"\nmodels = [\"a\"]\nmodel = \"b\"\n"
            ),
            "roles.coder: `model` \"b\" is not in the role's `models`",
        ),
        (
            "[roles.coder]\nexecutor = \"claude-code\"\negress = [\"https://pypi.org/\"]\n".to_owned(),
            "roles.coder: egress entry `https://pypi.org/`: is a URL",
        ),
        (
            "[sandbox.profiles.open]\nkind = \"docker\"\nimage = \"i\"\nnetwork = \"host\"\n".to_owned(),
            "sandbox.profiles.open: network \"host\" shares the host's network",
        ),
        (
            "[sandbox.profiles.open]\nkind = \"docker\"\nimage = \"i\"\negress_defaults = [\"cobol\"]\n"
                .to_owned(),
            "sandbox.profiles.open: ",
        ),
    ] {
        let got = load_with(&toml, &[]).unwrap_err();
        assert!(got.contains(error), "{toml}\n=> {got}");
    }
}

#[test]
fn a_whole_network_or_a_key_in_secrets_is_warned_about() {
    let c = load_with(
        "[providers.anthropic]\nkind = \"anthropic\"\nkey = { env = \"ANTHROPIC_API_KEY\" }\n\
         [roles.coder]\nexecutor = \"claude-code\"\nsecrets = [\"ANTHROPIC_API_KEY\"]\n\
         [sandbox.profiles.wide]\nkind = \"docker\"\nimage = \"i\"\nnetwork = \"bridge\"\n",
        &[],
    )
    .unwrap();
    let warnings = c.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].starts_with("sandbox.profiles.wide: network \"bridge\" gives"));
    assert!(warnings[1].contains("roles.coder: `secrets` hands the agent ANTHROPIC_API_KEY"));
    assert!(load_with("", &[]).unwrap().warnings().is_empty());
}

#[test]
fn budgets_are_read_everywhere_and_bad_ones_say_what_to_write() {
    let c = load_with(
        r#"
[budget]
daily = "$50"

[pricing."claude-x"]
input = 3.0
output = 15.0

[providers.model]
kind = "anthropic"
key = { env = "ANTHROPIC_API_KEY" }

[roles.coder]
executor = "claude-code"
provider = "model"
model = "claude-x"
budget = "$2"

[[projects]]
name = "api"
budget = "$5"
daily_budget = "2M tokens"

[[schedules]]
name = "nightly"
cron = "0 3 * * *"
sop = "ship"
budget = "100k tokens"
"#,
        &[],
    )
    .unwrap();
    assert_eq!(c.budget.daily, Some("$50".parse().unwrap()));
    assert_eq!(c.roles["coder"].budget, Some("$2".parse().unwrap()));
    assert_eq!(c.projects[0].budget, Some("$5".parse().unwrap()));
    assert_eq!(
        c.projects[0].daily_budget,
        Some("2M tokens".parse().unwrap())
    );
    assert_eq!(c.schedules[0].budget, Some("100k tokens".parse().unwrap()));
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());

    let bad = load_with("[budget]\ndaily = \"50 dollars\"\n", &[]).unwrap_err();
    assert!(bad.contains("write dollars like \"$20\""), "{bad}");
    assert!(bad.contains("daily"), "{bad}");
    let bad = load_with(
        "[[projects]]\nname = \"api\"\ndaily_budget = \"lots\"\n",
        &[],
    )
    .unwrap_err();
    assert!(bad.contains("budget \"lots\" is not a limit"), "{bad}");
}

#[test]
fn a_dollar_budget_needs_its_models_price() {
    let provider = "[providers.model]\nkind = \"anthropic\"\nkey = { env = \"K\" }\n";
    let role = |rest: &str| {
        format!("{provider}[roles.coder]\nexecutor = \"claude-code\"\nprovider = \"model\"\n{rest}")
    };
    let unpriced = load_with(&role("model = \"claude-x\"\nbudget = \"$2\"\n"), &[]).unwrap_err();
    assert!(
        unpriced.contains("roles.coder: the dollar budget $2.00 needs the price of its model `claude-x`: add [pricing.\"claude-x\"]"),
        "{unpriced}"
    );
    // Tokens need no price; a dollar budget with no model is warned about.
    load_with(&role("model = \"claude-x\"\nbudget = \"5k tokens\"\n"), &[]).unwrap();
    let c = load_with(&role("budget = \"$2\"\n"), &[]).unwrap();
    let warnings = c.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("roles.coder: a dollar budget without `model`")),
        "{warnings:?}"
    );
    // A budget on a role whose requests bypass the gateway would count nothing.
    let bypass = load_with(
        "[roles.coder]\nexecutor = \"claude-code\"\nbudget = \"5k tokens\"\n",
        &[],
    )
    .unwrap_err();
    assert!(
        bypass.contains("roles.coder: `budget` counts only requests through the model gateway"),
        "{bypass}"
    );
    let c = load_with(
        "[budget]\ndaily = \"1M tokens\"\n[roles.old]\nexecutor = \"codex\"\n",
        &[],
    )
    .unwrap();
    assert!(
        c.warnings()
            .iter()
            .any(|w| w.contains("roles.old: no `provider`")),
        "{:?}",
        c.warnings()
    );
}

#[test]
fn skills_are_a_folder_or_a_pinned_commit_and_attached_by_known_names() {
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let good = format!(
        "[skills.rust-style]\npath = \"skills/rust-style\"\n\
         [skills.house]\ngit = \"https://example.com/skills.git\"\nrev = \"{commit}\"\nsubdir = \"house\"\n\
         [roles.coder]\nexecutor = \"claude-code\"\nskills = [\"rust-style\"]\n\
         [[projects]]\nname = \"web\"\nskills = [\"house\"]\n"
    );
    let c = load_with(&good, &[]).unwrap();
    let sources = c.skill_sources();
    let gatehouse_agent::SkillSource::Path { path } = &sources["rust-style"] else {
        panic!("a path: {sources:?}");
    };
    // Relative to the configuration file's folder (the jail's working directory here).
    assert!(Path::new(path).is_absolute(), "{path}");
    assert!(path.ends_with("skills/rust-style"), "{path}");
    assert_eq!(c.roles["coder"].skills, ["rust-style"]);
    assert_eq!(c.project_skills()["web"], ["house"]);

    let refused = [
        (
            "[roles.coder]\nexecutor = \"codex\"\nskills = [\"ghost\"]\n".to_owned(),
            "roles.coder: skill `ghost` is not configured (add [skills.ghost]",
        ),
        (
            "[[projects]]\nname = \"web\"\nskills = [\"ghost\"]\n".to_owned(),
            "project `web`: skill `ghost` is not configured",
        ),
        (
            "[skills.s]\ngit = \"https://example.com/s.git\"\nrev = \"main\"\n".to_owned(),
            "skills.s: skill s: rev \"main\" is not a commit",
        ),
        (
            "[skills.s]\ngit = \"https://example.com/s.git\"\n".to_owned(),
            "needs `rev`",
        ),
        (
            format!("[skills.s]\npath = \"/srv/s\"\ngit = \"https://x/y\"\nrev = \"{commit}\"\n"),
            "not both",
        ),
        ("[skills.Bad]\npath = \"/srv/s\"\n".to_owned(), "lowercase"),
        (
            "[skills.s]\npath = \"/srv/s\"\nbranch = \"main\"\n".to_owned(),
            "branch",
        ),
    ];
    for (toml, says) in refused {
        let err = load_with(&toml, &[]).expect_err(&toml);
        assert!(err.contains(says), "{toml}\n{err}");
    }
}

#[test]
fn a_trigger_opens_a_conversation_or_starts_an_sop_never_both() {
    let trigger = |fields: &str, rest: &str| {
        load_with(
            &format!(
                "[github]\n[[github.triggers]]\nassigned = true\nrepos = [\"acme/*\"]\n{fields}\n{rest}"
            ),
            &[],
        )
    };
    let assistant = "[assistant]\nrole = \"helper\"\n[roles.helper]\nexecutor = \"command\"\ncommand = [\"true\"]\n";
    assert_eq!(
        trigger("sop = \"bug-fix\"\nconversation = true", assistant).unwrap_err(),
        "github.triggers (assigned): give either `sop` or `conversation = true`, not both: the trigger starts an SOP run or opens a conversation"
    );
    assert_eq!(
        trigger("conversation = true", "").unwrap_err(),
        "github.triggers (assigned): `conversation = true` needs [assistant], whose role works in conversations"
    );
    let ok = trigger("conversation = true", assistant).unwrap();
    assert!(ok.github.unwrap().triggers[0].conversation);
}
