//! `[budget]`: spend limits beside roles', SOPs', projects' and schedules' own, and the
//! checks that every dollar budget can be priced.

use gatehouse_agent::{Limit, ModelUsage, PriceTable, cost};
use serde::{Deserialize, Serialize};

use super::{Config, ConfigError};

/// `[budget]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// What each project may spend per UTC day at the model gateway (`"$50"`), unless the
    /// project sets `daily_budget`; runs and conversations on no project count as
    /// `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily: Option<Limit>,
}

/// Whether `model` has a price (exactly, or without its snapshot date).
fn priced(model: &str, prices: &PriceTable) -> bool {
    let probe = ModelUsage {
        model: model.to_owned(),
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    };
    cost(&probe, prices).is_some()
}

impl Config {
    /// Refuses a dollar budget on a role whose `model` has no price: the gateway could not
    /// price its requests, and would refuse every one.
    pub(super) fn check_budgets(&self) -> Result<(), ConfigError> {
        for (name, role) in &self.roles {
            if role.budget.is_some() && role.provider.is_none() {
                return Err(ConfigError::Inconsistent(format!(
                    "roles.{name}: `budget` counts only requests through the model gateway, and the role names no `provider`: add provider = \"<name of a [providers.*]>\" or remove the budget"
                )));
            }
            let (Some(limit), Some(model)) = (role.budget, &role.model) else {
                continue;
            };
            if limit.is_usd() && !priced(model, &self.pricing) {
                return Err(ConfigError::Inconsistent(format!(
                    "roles.{name}: the dollar budget {limit} needs the price of its model `{model}`: add [pricing.\"{model}\"] with input and output (USD per million tokens), or give the budget in tokens (\"500k tokens\")"
                )));
            }
        }
        Ok(())
    }

    /// Dollar budgets that cannot be checked until a request names its model: a role
    /// with a dollar budget and no `model`, or dollar budgets with no `[pricing]` at all.
    pub(super) fn budget_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for (name, role) in &self.roles {
            if role.budget.is_some_and(Limit::is_usd) && role.model.is_none() {
                warnings.push(format!(
                    "roles.{name}: a dollar budget without `model`: a request for a model with no [pricing] entry will be refused; set `model` so config check can verify its price"
                ));
            }
        }
        let dollars = self.budget.daily.is_some_and(Limit::is_usd)
            || self.projects.iter().any(|p| {
                p.budget.is_some_and(Limit::is_usd) || p.daily_budget.is_some_and(Limit::is_usd)
            })
            || self
                .schedules
                .iter()
                .any(|s| s.budget.is_some_and(Limit::is_usd));
        let shared = self.budget.daily.is_some()
            || self
                .projects
                .iter()
                .any(|p| p.budget.is_some() || p.daily_budget.is_some())
            || self.schedules.iter().any(|s| s.budget.is_some());
        if shared {
            for (name, _) in self.roles.iter().filter(|(_, r)| r.provider.is_none()) {
                warnings.push(format!(
                    "roles.{name}: no `provider`, so its model requests bypass the gateway and no budget counts them; name a provider"
                ));
            }
        }
        if dollars && self.pricing.is_empty() {
            warnings.push(
                "dollar budgets are set but [pricing] is empty: every model request under them will be refused until its model is priced".to_owned(),
            );
        }
        warnings
    }
}
