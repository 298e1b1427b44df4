//! An outside service (GitHub, Slack, Discord) that stopped answering: one warning when
//! it goes down, then one at growing intervals while it stays down, and one line when it
//! answers again — not a client error every few seconds. The wait before the next try
//! grows the same way, so a long outage costs few requests. Pure: the loops that call the
//! service (the notifier's posters, ingest's delivery processor and reconciliation) feed
//! it what happened and log what it says.

use std::time::{Duration, Instant};

/// The first wait after a failure; it doubles up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
/// The longest wait between tries while a service is down.
const MAX_RETRY: Duration = Duration::from_secs(60);
/// The shortest time between two warnings about the same outage.
const FIRST_REMINDER: Duration = Duration::from_secs(30);
/// The longest time between two warnings about the same outage.
const MAX_REMINDER: Duration = Duration::from_secs(600);

/// One service's state, as the loop that calls it sees it.
#[derive(Debug)]
pub struct Outage {
    /// What the service is called in log lines: `GitHub API at https://api.github.com`.
    service: String,
    down: Option<Down>,
}

#[derive(Debug)]
struct Down {
    since: Instant,
    failures: u32,
    retry: Duration,
    next_warning: Instant,
    reminder: Duration,
}

/// What to log about a try, if anything.
#[derive(Debug, PartialEq, Eq)]
pub enum Say {
    Nothing,
    /// A warning: the service is (still) down.
    Warn(String),
    /// An information line: it answers again.
    Recovered(String),
}

impl Outage {
    pub fn new(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
            down: None,
        }
    }

    /// A try failed because the service did not answer (`why`); returns what to log and
    /// how long to wait before the next try.
    pub fn failed(&mut self, now: Instant, why: &str) -> (Say, Duration) {
        let Some(down) = &mut self.down else {
            self.down = Some(Down {
                since: now,
                failures: 1,
                retry: FIRST_RETRY,
                next_warning: now + FIRST_REMINDER,
                reminder: FIRST_REMINDER,
            });
            let say = format!(
                "{} unreachable: {why}; retrying in {}",
                self.service,
                seconds(FIRST_RETRY)
            );
            return (Say::Warn(say), FIRST_RETRY);
        };
        down.failures += 1;
        down.retry = (down.retry * 2).min(MAX_RETRY);
        if now < down.next_warning {
            return (Say::Nothing, down.retry);
        }
        down.reminder = (down.reminder * 2).min(MAX_REMINDER);
        down.next_warning = now + down.reminder;
        let say = format!(
            "{} still unreachable after {} ({} failed tries): {why}; retrying in {}",
            self.service,
            seconds(now - down.since),
            down.failures,
            seconds(down.retry)
        );
        (Say::Warn(say), down.retry)
    }

    /// A try got an answer: the outage, if there was one, is over.
    pub fn answered(&mut self, now: Instant) -> Say {
        match self.down.take() {
            None => Say::Nothing,
            Some(down) => Say::Recovered(format!(
                "{} reachable again after {} ({} failed tries)",
                self.service,
                seconds(now - down.since),
                down.failures
            )),
        }
    }

    /// Logs what [`Self::failed`] or [`Self::answered`] said.
    pub fn log(say: &Say) {
        match say {
            Say::Nothing => {}
            Say::Warn(line) => tracing::warn!(outage = true, "{line}"),
            Say::Recovered(line) => tracing::info!(outage = false, "{line}"),
        }
    }
}

/// `30 s`, `2 min 5 s`.
fn seconds(d: Duration) -> String {
    let secs = d.as_secs();
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s} s"),
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_down_is_a_few_warnings_and_one_recovery() {
        let mut outage = Outage::new("GitHub API at https://api.github.com");
        let start = Instant::now();
        let mut now = start;
        let mut warnings = Vec::new();
        let mut tries = 0;
        while now - start < Duration::from_secs(60) {
            let (say, wait) = outage.failed(now, "connection refused");
            tries += 1;
            if let Say::Warn(line) = say {
                warnings.push(line);
            }
            now += wait;
        }
        assert_eq!(
            warnings[0],
            "GitHub API at https://api.github.com unreachable: connection refused; retrying in 2 s"
        );
        assert!(warnings.len() <= 3, "{warnings:#?}");
        assert!(tries <= 7, "a long outage costs few requests: {tries}");
        assert!(
            warnings[1].starts_with(
                "GitHub API at https://api.github.com still unreachable after 30 s (5 failed tries)"
            ),
            "{warnings:#?}"
        );
        let Say::Recovered(line) = outage.answered(now) else {
            panic!("recovered");
        };
        assert!(
            line.starts_with("GitHub API at https://api.github.com reachable again after 1 min")
        );
        assert_eq!(outage.answered(now), Say::Nothing);
        // The next outage starts afresh.
        let (say, wait) = outage.failed(now, "timed out");
        assert!(matches!(say, Say::Warn(_)));
        assert_eq!(wait, FIRST_RETRY);
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(seconds(Duration::from_secs(30)), "30 s");
        assert_eq!(seconds(Duration::from_secs(120)), "2 min");
        assert_eq!(seconds(Duration::from_secs(125)), "2 min 5 s");
    }
}
