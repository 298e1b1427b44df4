//! The YAML shape, with source positions, before validation.

use indexmap::IndexMap;
use marked_yaml::Spanned;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSop {
    pub name: Spanned<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub sandbox: Option<Spanned<String>>,
    #[serde(default)]
    pub params: IndexMap<Spanned<String>, RawParam>,
    #[serde(default)]
    pub starters: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub budget: Option<Spanned<String>>,
    /// The default `on_budget` of its agent nodes.
    #[serde(default)]
    pub on_budget: Option<RawOnBudget>,
    pub nodes: IndexMap<Spanned<String>, RawNode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawParam {
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<Spanned<String>>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<Spanned<String>>,
    #[serde(default)]
    pub values: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub pattern: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRetry {
    pub max: Spanned<u32>,
    #[serde(default)]
    pub backoff: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOnFailure {
    pub send_back: Spanned<String>,
    #[serde(default)]
    pub max: Option<Spanned<u32>>,
}

/// A deliver node's `on_review`, `on_checks_failed` or `on_conflict`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFeedbackRule {
    pub send_back: Spanned<String>,
    #[serde(default)]
    pub max: Option<Spanned<u32>>,
    #[serde(default)]
    pub approvers: Option<Spanned<Vec<Spanned<String>>>>,
}

/// Every key any node kind accepts; which apply to which kind is checked afterwards, so
/// the message can say "`run` does not apply to gate nodes" instead of "unknown field".
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNode {
    pub kind: Spanned<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub needs: Vec<Spanned<String>>,
    #[serde(default)]
    pub timeout: Option<Spanned<String>>,
    #[serde(default)]
    pub retry: Option<RawRetry>,
    #[serde(default)]
    pub artifacts: Vec<Spanned<String>>,
    #[serde(default)]
    pub env: IndexMap<String, String>,
    #[serde(default)]
    pub secrets: Vec<String>,
    #[serde(default)]
    pub on_failure: Option<RawOnFailure>,
    #[serde(default)]
    pub on_interrupt: Option<Spanned<String>>,
    #[serde(default)]
    pub on_budget: Option<RawOnBudget>,
    #[serde(default)]
    pub sandbox: Option<Spanned<String>>,
    // script
    #[serde(default)]
    pub run: Option<Spanned<String>>,
    // gate
    #[serde(default)]
    pub approvers: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub min_approvals: Option<Spanned<u32>>,
    #[serde(default)]
    pub send_back: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub allow_requester: Option<Spanned<bool>>,
    #[serde(default)]
    pub expires_in: Option<Spanned<String>>,
    #[serde(default)]
    pub on_expire: Option<Spanned<String>>,
    #[serde(default)]
    pub max_rework: Option<Spanned<u32>>,
    #[serde(default)]
    pub channels: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub evidence: Option<Spanned<Vec<Spanned<String>>>>,
    // sop
    #[serde(default)]
    pub sop: Option<Spanned<String>>,
    #[serde(default)]
    pub params: Option<Spanned<IndexMap<String, String>>>,
    #[serde(default)]
    pub import: Option<Spanned<Vec<String>>>,
    // agent
    #[serde(default)]
    pub role: Option<Spanned<String>>,
    #[serde(default)]
    pub prompt: Option<Spanned<String>>,
    // deliver
    #[serde(default)]
    pub mode: Option<Spanned<String>>,
    #[serde(default)]
    pub branch: Option<Spanned<String>>,
    #[serde(default)]
    pub on_review: Option<RawFeedbackRule>,
    #[serde(default)]
    pub on_checks_failed: Option<RawFeedbackRule>,
    #[serde(default)]
    pub on_conflict: Option<RawFeedbackRule>,
}

/// `on_budget`: a word (`fail`, `ask`) or `{ ask: [people], expires_in, allow_requester,
/// channels }`. Read by hand rather than as an untagged enum, which would lose the
/// positions messages point at.
pub(crate) enum RawOnBudget {
    Word(String),
    Ask(Box<RawAsk>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAsk {
    pub ask: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    pub expires_in: Option<Spanned<String>>,
    #[serde(default)]
    pub allow_requester: Option<Spanned<bool>>,
    #[serde(default)]
    pub channels: Option<Spanned<Vec<String>>>,
}

impl<'de> Deserialize<'de> for RawOnBudget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawOnBudget;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`fail`, `ask`, or `{ ask: [approvers] }`")
            }

            fn visit_str<E: serde::de::Error>(self, word: &str) -> Result<RawOnBudget, E> {
                Ok(RawOnBudget::Word(word.to_owned()))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RawOnBudget, A::Error> {
                RawAsk::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|ask| RawOnBudget::Ask(Box::new(ask)))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
