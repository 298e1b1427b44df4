//! Who is who: the configuration's `[[people]]` and the people an administrator added
//! (`gatehouse person add`), looked up by the handle a request came with (a token's
//! person, a GitHub login, a Slack or Discord user id). The configuration wins for an id
//! it names. Permissions come from here and from the gate's policy, never from the text
//! of a request.
//!
//! Stored people are read afresh for each request that needs them, so a person added
//! through one ingest replica is known to every other at once.

use std::collections::BTreeSet;

use gatehouse_store::{PersonRow, Store, StoreError};

use crate::rights::{ADMINS, BOOTSTRAP_ADMIN};

/// One person, as `[[people]]` writes them and the store keeps them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Person {
    /// Gatehouse's id (what gates name as approvers).
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<String>,
    /// Slack user id (`U0ANA`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<String>,
    /// Discord user id (a snowflake).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discord: Option<String>,
    /// Groups, named by gates as `group:<name>`.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Person {
    pub(crate) fn from_row(row: &PersonRow) -> Self {
        Self {
            id: row.id.clone(),
            github: row.github.clone(),
            slack: row.slack.clone(),
            discord: row.discord.clone(),
            groups: row.group_list(),
        }
    }
}

/// Everyone known: configured people first, then stored ones.
#[derive(Debug, Clone)]
pub struct People {
    people: Vec<Person>,
    /// Ids that come from the configuration (they cannot be removed through the API).
    configured: BTreeSet<String>,
}

/// No one configured: the bootstrap administrator alone.
impl Default for People {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl People {
    /// The configured people. The bootstrap administrator (`admin`) is always among
    /// them, in group `admins`.
    pub fn new(people: Vec<Person>) -> Self {
        let mut people = people;
        match people.iter_mut().find(|p| p.id == BOOTSTRAP_ADMIN) {
            Some(admin) if !admin.groups.iter().any(|g| g == ADMINS) => {
                admin.groups.push(ADMINS.to_owned());
            }
            Some(_) => {}
            None => people.push(Person {
                id: BOOTSTRAP_ADMIN.to_owned(),
                github: None,
                slack: None,
                discord: None,
                groups: vec![ADMINS.to_owned()],
            }),
        }
        let configured = people.iter().map(|p| p.id.clone()).collect();
        Self { people, configured }
    }

    /// These people with the stored ones added; a stored person whose id or handle a
    /// configured one already has is left out (the configuration wins).
    fn with_stored(&self, stored: &[PersonRow]) -> Self {
        let mut merged = self.clone();
        for row in stored {
            let person = Person::from_row(row);
            let clash = merged.people.iter().any(|p| {
                p.id == person.id
                    || same(&p.github, &person.github)
                    || same(&p.slack, &person.slack)
                    || same(&p.discord, &person.discord)
            });
            if !clash {
                merged.people.push(person);
            }
        }
        merged
    }

    /// Everyone known now: these people and the stored ones.
    pub(crate) async fn current(&self, store: &Store) -> Result<People, StoreError> {
        Ok(self.with_stored(&store.people().await?))
    }

    /// The person `id` names now, as [`People::current`] would find them; the stored
    /// people are read only when the configuration does not name them (a configured
    /// person wins over a stored one of the same id). Every request with a token or a
    /// session asks this, mostly for a configured person.
    pub(crate) async fn known(
        &self,
        store: &Store,
        id: &str,
    ) -> Result<Option<Person>, StoreError> {
        if self.is_configured(id) {
            return Ok(self.by_id(id).cloned());
        }
        Ok(self.current(store).await?.by_id(id).cloned())
    }

    /// The groups of the person `id` names now ([`People::known`]); none for someone not
    /// known.
    pub(crate) async fn groups_now(
        &self,
        store: &Store,
        id: &str,
    ) -> Result<Vec<String>, StoreError> {
        Ok(self
            .known(store, id)
            .await?
            .map(|p| p.groups)
            .unwrap_or_default())
    }

    /// The person with GitHub login `login` now, as [`People::current`] would find them;
    /// the stored people are read only when no configured person has that login.
    pub(crate) async fn by_github_now(
        &self,
        store: &Store,
        login: &str,
    ) -> Result<Option<Person>, StoreError> {
        if let Some(person) = self.by_github(login) {
            return Ok(Some(person.clone()));
        }
        Ok(self.current(store).await?.by_github(login).cloned())
    }

    /// Everyone, configured first.
    pub fn iter(&self) -> impl Iterator<Item = &Person> {
        self.people.iter()
    }

    /// Whether `id` comes from the configuration.
    pub fn is_configured(&self, id: &str) -> bool {
        self.configured.contains(id)
    }

    pub fn by_id(&self, id: &str) -> Option<&Person> {
        self.people.iter().find(|p| p.id == id)
    }

    /// A person by GitHub login (logins are case-insensitive).
    pub fn by_github(&self, login: &str) -> Option<&Person> {
        self.people.iter().find(|p| {
            p.github
                .as_deref()
                .is_some_and(|g| g.eq_ignore_ascii_case(login))
        })
    }

    /// A person by Slack user id.
    pub fn by_slack(&self, id: &str) -> Option<&Person> {
        self.people.iter().find(|p| p.slack.as_deref() == Some(id))
    }

    /// A person by Discord user id.
    pub fn by_discord(&self, id: &str) -> Option<&Person> {
        self.people
            .iter()
            .find(|p| p.discord.as_deref() == Some(id))
    }

    /// A person's groups; none for someone not known.
    pub fn groups(&self, id: &str) -> Vec<String> {
        self.by_id(id).map(|p| p.groups.clone()).unwrap_or_default()
    }
}

/// Whether two optional handles are the same (case-insensitively: GitHub logins are).
pub(crate) fn same(a: &Option<String>, b: &Option<String>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, github: Option<&str>) -> PersonRow {
        PersonRow {
            id: id.into(),
            github: github.map(Into::into),
            slack: None,
            discord: None,
            groups: r#"["devs"]"#.into(),
            created_by: "admin".into(),
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn the_configuration_wins_and_admin_is_always_an_administrator() {
        let configured = People::new(vec![Person {
            id: "ana".into(),
            github: Some("Ana-GH".into()),
            slack: None,
            discord: None,
            groups: vec!["leads".into()],
        }]);
        let people = configured.with_stored(&[
            row("ana", None),
            row("eve", Some("ana-gh")),
            row("bo", None),
        ]);
        let ids: Vec<&str> = people.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["ana", "admin", "bo"]);
        assert_eq!(people.groups("ana"), ["leads"]);
        assert_eq!(people.groups("bo"), ["devs"]);
        assert_eq!(people.groups("admin"), ["admins"]);
        assert!(people.is_configured("ana") && !people.is_configured("bo"));
    }
}
