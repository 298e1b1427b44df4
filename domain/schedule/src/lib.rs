//! Cron schedules.
//!
//! A [`Cron`] is an expression in an IANA time zone: five fields (minute hour day month
//! weekday), six with seconds first, or `@hourly`, `@daily`, `@weekly`, `@monthly`,
//! `@yearly`. Each field takes a value, a range `a-b`, `*`, a step `*/n` or `a-b/n`, the
//! start/step form `a/n` (from `a` to the field's end: minute `0/15` is 0,15,30,45, day of
//! week `MON/2` is Monday, Wednesday, Friday, as Kubernetes CronJob, Quartz and robfig/cron
//! read it), or a list of these; month and day of week also take names (JAN-DEC, SUN-SAT;
//! day of week 0 and 7 are Sunday). Parsing is [croner]'s and time zones are [jiff]'s (its
//! time zone database is built in, so containers without `tzdata` behave the same); this
//! crate adds the start/step form, messages in its own words that name the bad field, the
//! value and what the field takes, refuses expressions that can never fire, and fixes the
//! rules for daylight saving time:
//!
//! - **Skipped wall-clock time** (spring forward): a job at a fixed time inside the gap
//!   fires once, at the first valid time after the gap on the same day (02:30 in
//!   Europe/Berlin on 2026-03-29 fires at 03:00 CEST). Interval jobs (`*/15`) skip the
//!   instants that do not exist.
//! - **Repeated wall-clock time** (fall back): a job at a fixed time fires once, at its
//!   first occurrence (the earlier offset). Interval jobs fire in both passes of the
//!   repeated hour, since those are different instants.
//! - Zones whose change happens at midnight (America/Santiago, America/Havana,
//!   Asia/Beirut) follow the same rules: a daily `0 0 * * *` on a day whose midnight does
//!   not exist fires at the first instant of that day.
//!
//! Fire times are always returned with their UTC offset, so the instant is unambiguous.

mod expr;
mod plan;
mod timing;

pub use plan::{Decision, Overlap, SkipReason, decide};
pub use timing::{Fire, Timing};

use std::fmt;
use std::str::FromStr;

use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use thiserror::Error;

/// Why a schedule cannot be used. A cron message names the field, quotes the bad value
/// and says what the field takes, e.g. "cron `61 * * * *`: minute `61`: 61 is out of
/// range; minute is 0-59".
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    /// The cron expression does not parse.
    #[error("cron `{expr}`: {reason}")]
    Cron {
        expr: String,
        /// What is wrong, in Gatehouse's words: the field, the value, what it takes (or
        /// that the number of fields is wrong).
        reason: String,
    },
    /// The expression parses but no date matches it (30 February).
    #[error("cron `{0}` never fires: no date matches it")]
    NeverFires(String),
    /// The time zone is not an IANA name.
    #[error("timezone `{0}` is not a known IANA time zone (e.g. Europe/Berlin, UTC)")]
    TimeZone(String),
    /// The end of a schedule's window is not after its start.
    #[error("end {end} is not after start {start}")]
    Window { start: String, end: String },
    /// No fire time falls between the schedule's start and end.
    #[error("cron `{expr}` never fires before the schedule's end {end}")]
    NeverFiresInWindow { expr: String, end: String },
    /// A jitter too large to add to a time.
    #[error("jitter {0} is too large")]
    Jitter(String),
    /// A start time that is not RFC 3339.
    #[error("`{0}` is not an RFC 3339 time with offset (e.g. 2026-03-29T00:00:00+01:00)")]
    Time(String),
}

/// A cron expression in a time zone.
#[derive(Clone)]
pub struct Cron {
    expr: String,
    zone_name: String,
    cron: croner::Cron,
    zone: TimeZone,
}

impl fmt::Debug for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cron({} in {})", self.expr, self.zone_name)
    }
}

impl Cron {
    /// Parses `expr` in the IANA zone `timezone`, refusing one that can never fire.
    pub fn new(expr: &str, timezone: &str) -> Result<Self, ScheduleError> {
        let cron = expr::parse(expr.trim()).map_err(|e| ScheduleError::Cron {
            expr: expr.to_owned(),
            reason: e.to_string(),
        })?;
        let zone =
            TimeZone::get(timezone).map_err(|_| ScheduleError::TimeZone(timezone.to_owned()))?;
        let spec = Self {
            expr: expr.trim().to_owned(),
            zone_name: timezone.to_owned(),
            cron,
            zone,
        };
        // Any date pattern that matches at all matches within a few years of any start
        // (29 February every 4 years, weekday-and-date combinations within 28).
        if spec.next_after(Timestamp::UNIX_EPOCH).is_none() {
            return Err(ScheduleError::NeverFires(expr.to_owned()));
        }
        Ok(spec)
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The time zone's name.
    pub fn timezone(&self) -> &str {
        &self.zone_name
    }

    /// The first fire time strictly after `after`, in the schedule's zone.
    pub fn next_after(&self, after: Timestamp) -> Option<Zoned> {
        let start = after.to_zoned(self.zone.clone());
        self.cron.find_next_occurrence(&start, false).ok()
    }

    /// The next `n` fire times strictly after `after`: what `gatehouse schedule preview`
    /// prints and what the scheduler fires.
    pub fn upcoming(&self, after: Timestamp, n: usize) -> Vec<Zoned> {
        let mut times = Vec::with_capacity(n);
        let mut cursor = after.to_zoned(self.zone.clone());
        while times.len() < n {
            match self.cron.find_next_occurrence(&cursor, false) {
                Ok(next) => {
                    cursor = next.clone();
                    times.push(next);
                }
                Err(_) => break,
            }
        }
        times
    }
}

/// Parses an RFC 3339 time with offset (`2026-03-29T00:00:00+01:00` or `...Z`).
pub fn parse_time(text: &str) -> Result<Timestamp, ScheduleError> {
    Timestamp::from_str(text.trim()).map_err(|_| ScheduleError::Time(text.to_owned()))
}

/// RFC 3339 with the zone's offset, e.g. `2026-03-29T03:00:00+02:00`.
pub fn rfc3339(time: &Zoned) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}
