//! Which budgets an attempt's model requests count against: its role's (per attempt), its
//! run's (the SOP's, the project's and the schedule's `budget`, per run) and its project's
//! daily budget (per UTC day, `default` for work on no project).

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_agent::Limit;
use gatehouse_store::{SpendLimit, SpendScope, Store, StoreError};
use uuid::Uuid;

/// Budgets as the configuration sets them, beside the roles' own.
#[derive(Debug, Clone)]
pub struct Budgets {
    /// `[budget] daily`: what each project may spend per UTC day, unless it says otherwise.
    pub daily: Option<Limit>,
    /// Projects' own budgets, by name.
    pub projects: BTreeMap<String, ProjectBudget>,
    /// `budget` of each schedule, by name: what a run it starts may spend.
    pub schedules: BTreeMap<String, Limit>,
    /// How long an admitted request holds its place in a scope before the hold expires
    /// (a runner that died mid-request blocks nothing for longer).
    pub hold: Duration,
    /// How long a request waits near a limit for another request of its scope to end,
    /// before it is refused.
    pub wait: Duration,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            daily: None,
            projects: BTreeMap::new(),
            schedules: BTreeMap::new(),
            hold: Duration::from_secs(600),
            wait: Duration::from_secs(120),
        }
    }
}

/// A project's budgets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectBudget {
    /// `budget`: what one run of the project may spend.
    pub run: Option<Limit>,
    /// `daily_budget`: what the project may spend per UTC day, over `[budget] daily`.
    pub daily: Option<Limit>,
}

/// One limit on one scope, with the words its refusal and warning use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scoped {
    pub(crate) scope: String,
    /// "role coder", "project api", "SOP ship".
    pub(crate) label: String,
    /// "for this attempt", "for this run", "today".
    pub(crate) period: String,
    pub(crate) limit: Limit,
}

impl Scoped {
    /// "budget of project api reached: $20.00 today".
    pub(crate) fn reached(&self) -> String {
        format!(
            "budget of {} reached: {} {}",
            self.label, self.limit, self.period
        )
    }

    /// The budget as a raise names it: "project api today", "role coder for this
    /// attempt" (a project's run and day budgets share a label, not a period).
    pub(crate) fn name(&self) -> String {
        format!("{} {}", self.label, self.period)
    }

    /// The spent amount in the limit's unit.
    pub(crate) fn spent(&self, tokens: u64, usd_micros: u64) -> u64 {
        if self.limit.is_usd() {
            usd_micros
        } else {
            tokens
        }
    }
}

/// The ledger's limits for `scoped`: one per scope, the tightest of each unit.
pub(crate) fn spend_limits(scoped: &[Scoped]) -> Vec<SpendLimit> {
    let mut by_scope: BTreeMap<&str, SpendLimit> = BTreeMap::new();
    for s in scoped {
        let entry = by_scope
            .entry(s.scope.as_str())
            .or_insert_with(|| SpendLimit {
                scope: s.scope.clone(),
                label: s.label.clone(),
                period: s.period.clone(),
                tokens: None,
                usd_micros: None,
            });
        let slot = match s.limit {
            Limit::Usd { .. } => &mut entry.usd_micros,
            Limit::Tokens { .. } => &mut entry.tokens,
        };
        let amount = s.limit.amount();
        *slot = Some(slot.map_or(amount, |old| old.min(amount)));
    }
    by_scope.into_values().collect()
}

/// The run's budget `label` as its first agent attempt found it configured (none included),
/// so that a configuration changed mid-run moves none of its limits, as with its roles and
/// profiles. A project's daily budget is not frozen: it is the project's, not the run's.
async fn frozen(
    store: &Store,
    run: Uuid,
    label: &str,
    configured: Option<Limit>,
) -> Result<Option<Limit>, StoreError> {
    let body = serde_json::to_string(&configured).unwrap_or_else(|_| "null".to_owned());
    let kept = store
        .freeze_setting(run, "budget", label, &body, true)
        .await?;
    Ok(serde_json::from_str(&kept).unwrap_or_else(|error| {
        tracing::warn!(%run, label, %error, "a frozen budget does not read back; using the configured one");
        configured
    }))
}

/// The UTC day as a scope names it.
pub(crate) fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

impl Budgets {
    /// The daily limit of `project` (`None`: work on no project, counted as `default`).
    pub(crate) fn daily(&self, project: Option<&str>) -> Option<Scoped> {
        let name = project.filter(|p| !p.is_empty()).unwrap_or("default");
        let limit = self
            .projects
            .get(name)
            .and_then(|p| p.daily)
            .or(self.daily)?;
        Some(Scoped {
            scope: SpendScope::ProjectDay {
                project: name,
                day: &today(),
            }
            .key(),
            label: format!("project {name}"),
            period: "today".to_owned(),
            limit,
        })
    }

    /// The limits on a run node's attempt: its role's, its run's and its project's day.
    pub(crate) async fn for_node(
        &self,
        store: &Store,
        run: Uuid,
        node: &str,
        attempt: u32,
        role: Option<(&str, Option<Limit>)>,
    ) -> Result<Vec<Scoped>, StoreError> {
        let mut scoped = Vec::new();
        if let Some((name, Some(limit))) = role {
            scoped.push(Scoped {
                scope: SpendScope::Attempt { run, node, attempt }.key(),
                label: format!("role {name}"),
                period: "for this attempt".to_owned(),
                limit,
            });
        }
        let row = store.run(run).await?;
        let project = row.as_ref().and_then(|r| r.project.clone());
        let run_scope = |label: String, limit| Scoped {
            scope: SpendScope::Run(run).key(),
            label,
            period: "for this run".to_owned(),
            limit,
        };
        if let Some(row) = &row {
            if let Some(sop) = store.sop_definition(&row.sop_version).await?
                && let Some(limit) = sop.budget
            {
                scoped.push(run_scope(format!("SOP {}", row.sop), limit));
            }
            if let Some(project) = &project {
                let label = format!("project {project}");
                let configured = self.projects.get(project).and_then(|p| p.run);
                if let Some(limit) = frozen(store, run, &label, configured).await? {
                    scoped.push(run_scope(label, limit));
                }
            }
            if let Some(schedule) = &row.schedule {
                let label = format!("schedule {schedule}");
                let configured = self.schedules.get(schedule).copied();
                if let Some(limit) = frozen(store, run, &label, configured).await? {
                    scoped.push(run_scope(label, limit));
                }
            }
        }
        scoped.extend(self.daily(project.as_deref()));
        // What people raised for this run after its budget asks.
        let raises = store.budget_raises(run).await?;
        for s in &mut scoped {
            if let Some(&n) = raises.get(&s.name()) {
                s.limit = s.limit.raised(n);
            }
        }
        Ok(scoped)
    }

    /// The limits on a conversation turn's attempt: its role's and its project's day.
    pub(crate) fn for_turn(
        &self,
        conversation: Uuid,
        seq: i64,
        attempt: u32,
        project: &str,
        role: (&str, Option<Limit>),
    ) -> Vec<Scoped> {
        let mut scoped = Vec::new();
        if let (name, Some(limit)) = role {
            scoped.push(Scoped {
                scope: format!("turn:{conversation}:{seq}:{attempt}"),
                label: format!("role {name}"),
                period: "for this attempt".to_owned(),
                limit,
            });
        }
        scoped.extend(self.daily(Some(project)));
        scoped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(text: &str) -> Limit {
        text.parse().unwrap()
    }

    #[test]
    fn a_project_overrides_the_daily_default_and_no_project_is_default() {
        let mut budgets = Budgets {
            daily: Some(limit("$50")),
            ..Budgets::default()
        };
        budgets.projects.insert(
            "api".into(),
            ProjectBudget {
                run: None,
                daily: Some(limit("$20")),
            },
        );
        let api = budgets.daily(Some("api")).unwrap();
        assert_eq!(api.reached(), "budget of project api reached: $20.00 today");
        assert!(api.scope.starts_with("project:api:"));
        let none = budgets.daily(None).unwrap();
        assert_eq!(none.label, "project default");
        assert_eq!(none.limit, limit("$50"));
        assert!(Budgets::default().daily(Some("api")).is_none());
    }

    #[test]
    fn a_turn_counts_against_its_role_and_its_projects_day() {
        let budgets = Budgets {
            daily: Some(limit("1M tokens")),
            ..Budgets::default()
        };
        let conversation = Uuid::nil();
        let scoped = budgets.for_turn(conversation, 3, 2, "api", ("helper", Some(limit("$1"))));
        assert_eq!(scoped.len(), 2);
        assert_eq!(scoped[0].scope, format!("turn:{conversation}:3:2"));
        assert_eq!(
            scoped[0].reached(),
            "budget of role helper reached: $1.00 for this attempt"
        );
        assert_eq!(scoped[1].label, "project api");
        assert!(
            budgets.for_turn(conversation, 1, 1, "", ("helper", None))[0]
                .scope
                .starts_with("project:default:")
        );
    }

    /// A run on project `api` started by schedule `nightly`, in a fresh SQLite store.
    async fn store_with_run(dir: &std::path::Path) -> (Store, Uuid) {
        use gatehouse_events::RunStatus;
        use gatehouse_store::RunRow;
        let url = format!("sqlite:{}", dir.join("gatehouse.db").display());
        let store = Store::connect(&url, backon::ExponentialBuilder::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let (run, now) = (Uuid::now_v7(), chrono::Utc::now());
        let mut tx = store.begin().await.unwrap();
        let sop = "name: ship\nnodes:\n  code: { kind: agent, role: coder, prompt: go }\n";
        tx.save_sop_version("v1", "ship", "test", sop)
            .await
            .unwrap();
        tx.create_run(&RunRow {
            id: run,
            sop: "ship".into(),
            sop_version: "v1".into(),
            params: "{}".into(),
            requested_by: None,
            status: RunStatus::Running,
            state: "{}".into(),
            revision: 0,
            parent_run: None,
            parent_node: None,
            parent_attempt: None,
            requirement_id: None,
            schedule: Some("nightly".into()),
            scheduled_ms: None,
            project: Some("api".into()),
            workspace: None,
            created_at: now,
            updated_at: now,
            conversation: None,
        })
        .await
        .unwrap();
        tx.commit().await.unwrap();
        (store, run)
    }

    fn configured(project: Option<&str>, schedule: Option<&str>) -> Budgets {
        let mut budgets = Budgets::default();
        budgets.projects.insert(
            "api".into(),
            ProjectBudget {
                run: project.map(limit),
                daily: None,
            },
        );
        budgets
            .schedules
            .extend(schedule.map(|s| ("nightly".to_owned(), limit(s))));
        budgets
    }

    #[tokio::test]
    async fn a_runs_project_and_schedule_budgets_stay_as_its_first_attempt_found_them() {
        let dir = tempfile::tempdir().unwrap();
        let (store, run) = store_with_run(dir.path()).await;
        let limits = |budgets: Budgets, attempt| {
            let store = store.clone();
            async move {
                budgets
                    .for_node(&store, run, "code", attempt, None)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|s| (s.label, s.limit.to_string()))
                    .collect::<Vec<_>>()
            }
        };
        let first = limits(configured(Some("$5"), None), 1).await;
        assert_eq!(first, [("project api".to_owned(), "$5.00".to_owned())]);
        // The configuration changes mid-run: a higher project budget, a new schedule one.
        let later = limits(configured(Some("$50"), Some("1k tokens")), 2).await;
        assert_eq!(later, first, "the run keeps what it started with");
        // A raise still counts on top of what was frozen.
        let mut tx = store.begin().await.unwrap();
        tx.raise_budget(&gatehouse_store::BudgetRaise {
            run_id: run,
            node: "code",
            attempt: 2,
            budget: "project api for this run",
            raised_by: &["ana".to_owned()],
            raised_ms: 0,
        })
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let raised = limits(configured(None, None), 3).await;
        assert_eq!(raised, [("project api".to_owned(), "$10.00".to_owned())]);
    }

    #[test]
    fn one_scope_keeps_the_tightest_limit_of_each_unit() {
        let scoped = |label: &str, text: &str| Scoped {
            scope: "run:r".into(),
            label: label.into(),
            period: "for this run".into(),
            limit: limit(text),
        };
        let limits = spend_limits(&[
            scoped("SOP ship", "$5"),
            scoped("project api", "$2"),
            scoped("schedule nightly", "200k tokens"),
        ]);
        assert_eq!(limits.len(), 1);
        assert_eq!(limits[0].usd_micros, Some(2_000_000));
        assert_eq!(limits[0].tokens, Some(200_000));
    }
}
