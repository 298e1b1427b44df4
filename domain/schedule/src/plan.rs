//! What to do when a schedule falls due: the catch-up and overlap rules, without I/O.

use std::time::Duration;

use jiff::Timestamp;

/// What a schedule does when its previous run is still going. The store keeps it in a
/// text column, under its configuration name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "sqlx",
    derive(sqlx::Type),
    sqlx(type_name = "text", rename_all = "snake_case")
)]
pub enum Overlap {
    /// Skip this fire.
    #[default]
    Skip,
    /// Keep one fire waiting; skip further ones while it waits.
    BufferOne,
    /// Keep every fire waiting, to run one after another.
    BufferAll,
    /// Cancel the running one and start.
    CancelOther,
    /// Run side by side.
    AllowAll,
}

impl std::str::FromStr for Overlap {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "skip" => Self::Skip,
            "buffer_one" => Self::BufferOne,
            "buffer_all" => Self::BufferAll,
            "cancel_other" => Self::CancelOther,
            "allow_all" => Self::AllowAll,
            other => {
                return Err(format!(
                    "overlap `{other}` is not one of skip, buffer_one, buffer_all, cancel_other, allow_all"
                ));
            }
        })
    }
}

impl Overlap {
    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::BufferOne => "buffer_one",
            Self::BufferAll => "buffer_all",
            Self::CancelOther => "cancel_other",
            Self::AllowAll => "allow_all",
        }
    }
}

/// The decision for one fire time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start a run now.
    Start,
    /// Cancel the schedule's running runs, then start.
    CancelOthersAndStart,
    /// Record the fire and start it when the running run ends.
    Buffer,
    /// Record the fire as skipped.
    Skip(SkipReason),
}

/// Why a fire was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// It fell due longer ago than the catch-up window (Gatehouse was down).
    Missed,
    /// The previous run was still going and the overlap policy says skip.
    Overlap,
    /// The schedule's SOP does not exist (any more) or refuses its parameters.
    Invalid,
}

/// Decides one fire: `due` is when it should have started (cron time plus jitter), `now`
/// the clock, `active` how many runs of the schedule are still going, `buffered` how many
/// fires already wait.
pub fn decide(
    overlap: Overlap,
    catchup_window: Duration,
    due: Timestamp,
    now: Timestamp,
    active: usize,
    buffered: usize,
) -> Decision {
    let late = now.duration_since(due);
    let window =
        jiff::SignedDuration::try_from(catchup_window).unwrap_or(jiff::SignedDuration::MAX);
    if late > window {
        return Decision::Skip(SkipReason::Missed);
    }
    if active == 0 && buffered == 0 {
        return Decision::Start;
    }
    match overlap {
        Overlap::AllowAll => Decision::Start,
        Overlap::CancelOther => Decision::CancelOthersAndStart,
        Overlap::BufferAll => Decision::Buffer,
        Overlap::BufferOne if buffered == 0 => Decision::Buffer,
        Overlap::BufferOne | Overlap::Skip => Decision::Skip(SkipReason::Overlap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn fires_older_than_the_window_are_missed() {
        let now = at("2026-11-30T12:00:00Z");
        assert_eq!(
            decide(
                Overlap::AllowAll,
                HOUR,
                at("2026-11-30T10:59:59Z"),
                now,
                0,
                0
            ),
            Decision::Skip(SkipReason::Missed)
        );
        assert_eq!(
            decide(
                Overlap::AllowAll,
                HOUR,
                at("2026-11-30T11:00:00Z"),
                now,
                0,
                0
            ),
            Decision::Start
        );
        assert_eq!(
            decide(Overlap::Skip, Duration::ZERO, now, now, 0, 0),
            Decision::Start
        );
    }

    #[test]
    fn each_overlap_policy_against_a_running_run() {
        let now = at("2026-11-30T12:00:00Z");
        let d = |overlap, buffered| decide(overlap, HOUR, now, now, 1, buffered);
        assert_eq!(d(Overlap::Skip, 0), Decision::Skip(SkipReason::Overlap));
        assert_eq!(d(Overlap::BufferOne, 0), Decision::Buffer);
        assert_eq!(
            d(Overlap::BufferOne, 1),
            Decision::Skip(SkipReason::Overlap)
        );
        assert_eq!(d(Overlap::BufferAll, 5), Decision::Buffer);
        assert_eq!(d(Overlap::CancelOther, 0), Decision::CancelOthersAndStart);
        assert_eq!(d(Overlap::AllowAll, 0), Decision::Start);
    }

    #[test]
    fn a_waiting_buffer_keeps_order_even_when_nothing_runs() {
        let now = at("2026-11-30T12:00:00Z");
        assert_eq!(
            decide(Overlap::BufferAll, HOUR, now, now, 0, 1),
            Decision::Buffer
        );
    }

    #[test]
    fn overlap_names_round_trip() {
        for o in [
            Overlap::Skip,
            Overlap::BufferOne,
            Overlap::BufferAll,
            Overlap::CancelOther,
            Overlap::AllowAll,
        ] {
            assert_eq!(o.as_str().parse::<Overlap>(), Ok(o));
        }
        assert!(
            "sometimes"
                .parse::<Overlap>()
                .unwrap_err()
                .contains("skip, buffer_one")
        );
    }
}
