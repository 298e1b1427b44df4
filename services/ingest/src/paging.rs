//! How many rows a list answers: the `limit` a client asked for, or a default, never more
//! than a ceiling. One place, so every list clamps the same way; the numbers are also in the
//! query types' docs (and so the OpenAPI document), which must follow any change here.

/// A list's default and largest page.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paging {
    default: i64,
    max: i64,
}

/// Runs, requirements, conversations: rows a person reads.
pub(crate) const LIST: Paging = Paging {
    default: 50,
    max: 500,
};

/// Schedules, paged by name.
pub(crate) const SCHEDULES: Paging = Paging {
    default: 100,
    max: 1_000,
};

/// A run's output lines, followed by a client as they come.
pub(crate) const LOG_LINES: Paging = Paging {
    default: 500,
    max: 5_000,
};

impl Paging {
    /// The page size for a request's `limit`: the default when absent, at least 1.
    pub(crate) fn limit(self, requested: Option<i64>) -> i64 {
        requested.unwrap_or(self.default).clamp(1, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_defaulted_and_clamped() {
        assert_eq!(LIST.limit(None), 50);
        assert_eq!(LIST.limit(Some(0)), 1);
        assert_eq!(LIST.limit(Some(20)), 20);
        assert_eq!(LIST.limit(Some(10_000)), 500);
    }
}
