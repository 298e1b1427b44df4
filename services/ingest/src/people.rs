//! Who is who: the configuration's `[[people]]`, looked up by the handle a request came
//! with (an API token's name, a GitHub login, a Slack or Discord user id). Permissions come from here and from the
//! gate's policy, never from the text of a request.

/// One person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Gatehouse's id (what gates name as approvers).
    pub id: String,
    /// GitHub login.
    pub github: Option<String>,
    /// Slack user id (`U0ANA`).
    pub slack: Option<String>,
    /// Discord user id (a snowflake).
    pub discord: Option<String>,
    /// Groups, named by gates as `group:<name>`.
    pub groups: Vec<String>,
}

/// Everyone configured.
#[derive(Debug, Clone, Default)]
pub struct People {
    people: Vec<Person>,
}

impl People {
    /// The configured people.
    pub fn new(people: Vec<Person>) -> Self {
        Self { people }
    }

    /// A person by id.
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

    /// A person's groups; none for someone not configured.
    pub fn groups(&self, id: &str) -> Vec<String> {
        self.by_id(id).map(|p| p.groups.clone()).unwrap_or_default()
    }
}
