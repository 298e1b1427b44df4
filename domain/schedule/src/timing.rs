//! When a schedule fires: its cron times inside an optional start/end window, each delayed
//! by a jitter that every scheduler replica computes the same way (so replicas agree on
//! when a fire is due without talking to each other).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp, Zoned};
use sha2::{Digest, Sha256};

use crate::{Cron, ScheduleError};

/// One occurrence of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fire {
    /// The cron time, in the schedule's zone: the fire's identity.
    pub scheduled: Zoned,
    /// When it should start: the cron time plus the schedule's jitter for that time.
    pub due: Timestamp,
}

/// A schedule's cron expression, window and jitter.
#[derive(Debug, Clone)]
pub struct Timing {
    name: String,
    cron: Cron,
    jitter: Duration,
    start: Option<Timestamp>,
    end: Option<Timestamp>,
}

impl Timing {
    /// Parses and checks a schedule's timing: the cron expression in its zone, a window
    /// that is not empty and holds at least one fire.
    pub fn new(
        name: &str,
        expr: &str,
        timezone: &str,
        jitter: Duration,
        start: Option<Timestamp>,
        end: Option<Timestamp>,
    ) -> Result<Self, ScheduleError> {
        let cron = Cron::new(expr, timezone)?;
        if let (Some(start), Some(end)) = (start, end)
            && end <= start
        {
            return Err(ScheduleError::Window {
                start: start.to_string(),
                end: end.to_string(),
            });
        }
        if SignedDuration::try_from(jitter).is_err() {
            return Err(ScheduleError::Jitter(format!("{jitter:?}")));
        }
        let timing = Self {
            name: name.to_owned(),
            cron,
            jitter,
            start,
            end,
        };
        if let Some(end) = end
            && timing
                .next_fire(timing.start.unwrap_or(Timestamp::UNIX_EPOCH))
                .is_none()
        {
            return Err(ScheduleError::NeverFiresInWindow {
                expr: expr.to_owned(),
                end: end.to_string(),
            });
        }
        Ok(timing)
    }

    /// A stored schedule's timing: durations and times as epoch milliseconds, the way the
    /// store keeps them (its schedule rows give their timing this way).
    pub fn from_millis(
        name: &str,
        expr: &str,
        timezone: &str,
        jitter_ms: i64,
        starts_ms: Option<i64>,
        ends_ms: Option<i64>,
    ) -> Result<Self, ScheduleError> {
        let at = |ms: Option<i64>| ms.and_then(|ms| Timestamp::from_millisecond(ms).ok());
        Self::new(
            name,
            expr,
            timezone,
            Duration::from_millis(jitter_ms.max(0).unsigned_abs()),
            at(starts_ms),
            at(ends_ms),
        )
    }

    /// The cron expression and zone.
    pub fn cron(&self) -> &Cron {
        &self.cron
    }

    /// The first fire whose cron time is strictly after `after` (and not before the
    /// start), or `None` once the schedule has ended.
    pub fn next_fire(&self, after: Timestamp) -> Option<Fire> {
        let from = match self.start {
            // The start itself may be a fire time.
            Some(start) => after.max(start.checked_sub(SignedDuration::from_nanos(1)).ok()?),
            None => after,
        };
        let scheduled = self.cron.next_after(from)?;
        if self.end.is_some_and(|end| scheduled.timestamp() > end) {
            return None;
        }
        let due = scheduled
            .timestamp()
            .checked_add(self.jitter_for(scheduled.timestamp()))
            .unwrap_or(Timestamp::MAX);
        Some(Fire { scheduled, due })
    }

    /// A delay in `[0, jitter)`, derived from the schedule's name and the cron time so that
    /// schedules sharing an expression spread out, and every replica gets the same value.
    fn jitter_for(&self, scheduled: Timestamp) -> SignedDuration {
        let range = u64::try_from(self.jitter.as_millis()).unwrap_or(u64::MAX);
        if range == 0 {
            return SignedDuration::ZERO;
        }
        let mut hash = Sha256::new();
        hash.update(self.name.as_bytes());
        hash.update(scheduled.as_millisecond().to_be_bytes());
        let digest = hash.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let offset = u64::from_be_bytes(first) % range;
        SignedDuration::from_millis(i64::try_from(offset).unwrap_or(i64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn the_window_bounds_fires_and_the_start_itself_may_fire() {
        let t = Timing::new(
            "w",
            "0 * * * *",
            "UTC",
            Duration::ZERO,
            Some(at("2026-12-01T10:00:00Z")),
            Some(at("2026-12-01T12:00:00Z")),
        )
        .unwrap();
        let first = t.next_fire(at("2026-11-01T00:00:00Z")).unwrap();
        assert_eq!(first.scheduled.timestamp(), at("2026-12-01T10:00:00Z"));
        assert_eq!(first.due, first.scheduled.timestamp());
        let last = t.next_fire(at("2026-12-01T11:00:00Z")).unwrap();
        assert_eq!(last.scheduled.timestamp(), at("2026-12-01T12:00:00Z"));
        assert_eq!(t.next_fire(at("2026-12-01T12:00:00Z")), None);
    }

    #[test]
    fn an_empty_window_is_refused() {
        let err = Timing::new(
            "w",
            "0 3 * * *",
            "UTC",
            Duration::ZERO,
            Some(at("2026-12-01T04:00:00Z")),
            Some(at("2026-12-01T05:00:00Z")),
        )
        .unwrap_err();
        assert!(err.to_string().contains("never fires"), "{err}");
        let err = Timing::new(
            "w",
            "0 3 * * *",
            "UTC",
            Duration::ZERO,
            Some(at("2026-12-01T04:00:00Z")),
            Some(at("2026-12-01T04:00:00Z")),
        )
        .unwrap_err();
        assert!(err.to_string().contains("end"), "{err}");
    }

    #[test]
    fn jitter_is_stable_bounded_and_differs_between_schedules() {
        let jitter = Duration::from_secs(600);
        let a = Timing::new("a", "0 * * * *", "UTC", jitter, None, None).unwrap();
        let b = Timing::new("b", "0 * * * *", "UTC", jitter, None, None).unwrap();
        let from = at("2026-12-01T00:00:00Z");
        let fa = a.next_fire(from).unwrap();
        assert_eq!(Some(&fa), a.next_fire(from).as_ref());
        let delays: Vec<i64> = (0..50)
            .map(|h| {
                let f = a
                    .next_fire(from + SignedDuration::from_hours(h))
                    .unwrap_or_else(|| panic!("fire after hour {h}"));
                f.due.as_millisecond() - f.scheduled.timestamp().as_millisecond()
            })
            .collect();
        assert!(
            delays.iter().all(|d| (0..600_000).contains(d)),
            "{delays:?}"
        );
        assert!(delays.iter().any(|d| *d != delays[0]), "varies per fire");
        assert_ne!(fa.due, b.next_fire(from).unwrap().due);
    }
}
