use crate::Unit;

impl Unit {
    /// One figure written for people (used in the chart's description), e.g.
    /// "$1,234.50", "12.3k tokens", "1 run", "3.4 s".
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Usd if value > 0.0 && value < 0.01 => "under $0.01".to_owned(),
            Unit::Usd => format!("${}", group_thousands(&format!("{value:.2}"))),
            Unit::Tokens => counted(value, "token", "tokens"),
            Unit::Runs => counted(value, "run", "runs"),
            Unit::Seconds => duration(value),
        }
    }
}

fn counted(value: f64, one: &str, many: &str) -> String {
    let noun = if value == 1.0 { one } else { many };
    if value < 1000.0 {
        let number = if value.fract() == 0.0 {
            format!("{value:.0}")
        } else {
            trim_zero(format!("{value:.1}"))
        };
        return format!("{number} {noun}");
    }
    format!("{} {noun}", compact(value))
}

/// 1234 -> "1.2k", 12_500_000 -> "12.5M"; below 1000 as a whole number.
pub(crate) fn compact(value: f64) -> String {
    const STEPS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")];
    for (size, suffix) in STEPS {
        // Round first so 999_960 reads "1M", not "1000k".
        if (value / size * 10.0).round() / 10.0 >= 1.0 {
            return format!("{}{suffix}", trim_zero(format!("{:.1}", value / size)));
        }
    }
    format!("{value:.0}")
}

fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{} s", trim_zero(format!("{seconds:.1}")))
    } else if seconds < 3600.0 {
        format!("{} min", trim_zero(format!("{:.1}", seconds / 60.0)))
    } else {
        format!("{} h", trim_zero(format!("{:.1}", seconds / 3600.0)))
    }
}

pub(crate) fn trim_zero(mut text: String) -> String {
    if text.ends_with(".0") {
        text.truncate(text.len() - 2);
    }
    text
}

/// "1234567.50" -> "1,234,567.50"
pub(crate) fn group_thousands(number: &str) -> String {
    let (whole, rest) = number.split_at(number.find('.').unwrap_or(number.len()));
    let digits: Vec<char> = whole.chars().collect();
    let mut out = String::with_capacity(number.len() + digits.len() / 3);
    for (i, digit) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(*digit);
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_naturally() {
        let cases = [
            (Unit::Usd, 1234.5, "$1,234.50"),
            (Unit::Usd, 0.0, "$0.00"),
            (Unit::Usd, 0.004, "under $0.01"),
            (Unit::Usd, 1_000_000.0, "$1,000,000.00"),
            (Unit::Tokens, 12_345.0, "12.3k tokens"),
            (Unit::Tokens, 999_960.0, "1M tokens"),
            (Unit::Tokens, 1.0, "1 token"),
            (Unit::Tokens, 0.0, "0 tokens"),
            (Unit::Runs, 1.0, "1 run"),
            (Unit::Runs, 2.5, "2.5 runs"),
            (Unit::Runs, 42.0, "42 runs"),
            (Unit::Seconds, 3.42, "3.4 s"),
            (Unit::Seconds, 150.0, "2.5 min"),
            (Unit::Seconds, 7200.0, "2 h"),
        ];
        for (unit, value, expected) in cases {
            assert_eq!(unit.format(value), expected, "{unit:?} {value}");
        }
    }
}
