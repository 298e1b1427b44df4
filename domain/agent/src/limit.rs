//! Budget limits: what a role, an SOP, a project or a schedule may spend, in dollars or in
//! tokens, as the configuration writes them (`"$20"`, `"$0.50"`, `"500k tokens"`,
//! `"2M tokens"`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest limit text read; anything longer is refused before it is parsed.
const MAX_TEXT: usize = 64;

/// The most a dollar limit may be: a million dollars, far past any real budget, and small
/// enough that its micro-dollars fit any counter.
const MAX_MICROS: u64 = 1_000_000 * 1_000_000;

/// The most a token limit may be: a trillion.
const MAX_TOKENS: u64 = 1_000_000_000_000;

/// A spending limit. Dollars are kept in micro-dollars, so sums and comparisons are exact
/// and a ledger can add them atomically as integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// USD, in millionths of a dollar: needs the model's price in `[pricing]`.
    Usd {
        /// Micro-dollars.
        micros: u64,
    },
    /// Tokens of every kind (input, output, cache read and written).
    Tokens {
        /// The number of tokens.
        count: u64,
    },
}

/// The share of a budget, in percent, from which people are told it is nearly spent: the
/// attempt's output, a turn's reply, the status comment, chat progress and the console
/// all use it.
pub const WARN_PERCENT: u64 = 80;

/// `amount` as a share of `limit` in whole percent, rounded down; a zero limit is spent.
pub fn share(amount: u64, limit: u64) -> u64 {
    if limit == 0 {
        return 100;
    }
    u64::try_from(u128::from(amount) * 100 / u128::from(limit)).unwrap_or(u64::MAX)
}

/// Why a limit could not be read; the message says what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "budget {text:?} is not a limit: {why}; write dollars like \"$20\" or \"$0.50\", or tokens like \"500k tokens\" or \"2M tokens\""
)]
pub struct LimitError {
    /// What was written (cut to a few dozen characters).
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl Limit {
    /// The limit's amount in its unit: micro-dollars or tokens.
    pub fn amount(self) -> u64 {
        match self {
            Self::Usd { micros } => micros,
            Self::Tokens { count } => count,
        }
    }

    /// The limit raised `raises` times by its own amount (an approved `on_budget: ask`
    /// each), saturating rather than wrapping.
    pub fn raised(self, raises: u32) -> Self {
        let times = u64::from(raises).saturating_add(1);
        match self {
            Self::Usd { micros } => Self::Usd {
                micros: micros.saturating_mul(times),
            },
            Self::Tokens { count } => Self::Tokens {
                count: count.saturating_mul(times),
            },
        }
    }

    /// Whether it is in dollars, and so needs prices.
    pub fn is_usd(self) -> bool {
        matches!(self, Self::Usd { .. })
    }

    /// An amount of the limit's unit as people read it: `$16.10`, `200k tokens`.
    pub fn show(self, amount: u64) -> String {
        match self {
            Self::Usd { .. } => show_usd(amount),
            Self::Tokens { .. } => show_tokens(amount),
        }
    }
}

/// Micro-dollars as `$16.10` (cents; a sub-cent amount keeps its digits: `$0.0042`).
pub fn show_usd(micros: u64) -> String {
    let dollars = micros / 1_000_000;
    let rest = micros % 1_000_000;
    if rest.is_multiple_of(10_000) || dollars > 0 {
        // Rounded to the cent.
        let cents = (micros + 5_000) / 10_000;
        format!("${}.{:02}", cents / 100, cents % 100)
    } else {
        let digits = format!("{rest:06}");
        format!("$0.{}", digits.trim_end_matches('0'))
    }
}

/// Tokens as `200k tokens`, `2M tokens`, `1.5M tokens` or `950 tokens`.
pub fn show_tokens(count: u64) -> String {
    let scaled = |unit: u64, suffix: &str| {
        let whole = count / unit;
        let tenths = (count % unit) * 10 / unit;
        if tenths == 0 {
            format!("{whole}{suffix} tokens")
        } else {
            format!("{whole}.{tenths}{suffix} tokens")
        }
    };
    if count >= 1_000_000 {
        scaled(1_000_000, "M")
    } else if count >= 1_000 {
        scaled(1_000, "k")
    } else {
        format!("{count} tokens")
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.show(self.amount()))
    }
}

impl FromStr for Limit {
    type Err = LimitError;

    fn from_str(text: &str) -> Result<Self, LimitError> {
        let fail = |why| LimitError {
            text: text.chars().take(MAX_TEXT).collect(),
            why,
        };
        if text.len() > MAX_TEXT {
            return Err(fail("it is too long"));
        }
        let trimmed = text.trim();
        if let Some(dollars) = trimmed.strip_prefix('$') {
            let micros =
                decimal(dollars.trim(), 6).ok_or_else(|| fail("the amount is not a number"))?;
            if micros == 0 {
                return Err(fail(
                    "a budget of nothing lets no request through; remove it or raise it",
                ));
            }
            if micros > MAX_MICROS {
                return Err(fail("it is over $1000000"));
            }
            return Ok(Self::Usd { micros });
        }
        let lower = trimmed.to_ascii_lowercase();
        let Some(amount) = lower
            .strip_suffix("tokens")
            .or_else(|| lower.strip_suffix("token"))
        else {
            return Err(fail("it names no unit"));
        };
        let amount = amount.trim();
        let (number, scale) = match amount.chars().last() {
            Some('k') => (&amount[..amount.len() - 1], 1_000),
            Some('m') => (&amount[..amount.len() - 1], 1_000_000),
            Some('g' | 'b') => (&amount[..amount.len() - 1], 1_000_000_000),
            _ => (amount, 1),
        };
        // Up to three decimals: 1.5M, 2.25k.
        let thousandths =
            decimal(number.trim(), 3).ok_or_else(|| fail("the amount is not a number"))?;
        let count = thousandths
            .checked_mul(scale)
            .map(|n| n / 1_000)
            .filter(|n| *n <= MAX_TOKENS)
            .ok_or_else(|| fail("it is over a trillion tokens"))?;
        if count == 0 {
            return Err(fail(
                "a budget of nothing lets no request through; remove it or raise it",
            ));
        }
        Ok(Self::Tokens { count })
    }
}

/// A non-negative decimal with at most `places` decimals, in units of `10^-places`; `None`
/// for anything else (signs, exponents, separators, more decimals).
fn decimal(text: &str, places: u32) -> Option<u64> {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (text, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !digits(whole)
        || !digits(fraction)
        || whole.len() > 13
        || fraction.len() > places as usize
    {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let padded = format!("{fraction:0<width$}", width = places as usize);
    let fraction: u64 = if padded.is_empty() {
        0
    } else {
        padded.parse().ok()?
    };
    whole.checked_mul(10u64.pow(places))?.checked_add(fraction)
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Usd { micros } => {
                serializer.serialize_str(&format!("${}", decimal_text(*micros, 6)))
            }
            Self::Tokens { count } => serializer.serialize_str(&format!("{count} tokens")),
        }
    }
}

/// `amount / 10^places` written exactly, without trailing zeros.
fn decimal_text(amount: u64, places: u32) -> String {
    let unit = 10u64.pow(places);
    let (whole, fraction) = (amount / unit, amount % unit);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:0width$}", width = places as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Limit, LimitError> {
        text.parse()
    }

    #[test]
    fn shares_round_down_and_a_zero_limit_is_spent() {
        assert_eq!(share(1599, 2000), 79);
        assert_eq!(share(1600, 2000), WARN_PERCENT);
        assert_eq!(share(5, 0), 100);
        assert_eq!(share(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn a_raise_adds_the_limits_own_amount_each_time() {
        assert_eq!(parse("$20").unwrap().raised(0), parse("$20").unwrap());
        assert_eq!(parse("$20").unwrap().raised(2), parse("$60").unwrap());
        assert_eq!(
            parse("1.5k tokens").unwrap().raised(1),
            Limit::Tokens { count: 3000 }
        );
        assert_eq!(
            Limit::Tokens { count: u64::MAX }.raised(1),
            Limit::Tokens { count: u64::MAX }
        );
    }

    #[test]
    fn dollars_and_tokens_are_read() {
        assert_eq!(parse("$20"), Ok(Limit::Usd { micros: 20_000_000 }));
        assert_eq!(parse("$0.50"), Ok(Limit::Usd { micros: 500_000 }));
        assert_eq!(parse(" $ 1.25 "), Ok(Limit::Usd { micros: 1_250_000 }));
        assert_eq!(parse("$.5"), Ok(Limit::Usd { micros: 500_000 }));
        assert_eq!(parse("500k tokens"), Ok(Limit::Tokens { count: 500_000 }));
        assert_eq!(parse("2M tokens"), Ok(Limit::Tokens { count: 2_000_000 }));
        assert_eq!(parse("1.5m Tokens"), Ok(Limit::Tokens { count: 1_500_000 }));
        assert_eq!(parse("950 tokens"), Ok(Limit::Tokens { count: 950 }));
        assert_eq!(parse("1 token"), Ok(Limit::Tokens { count: 1 }));
    }

    #[test]
    fn bad_limits_say_what_to_write() {
        for bad in [
            "20",
            "$",
            "$-1",
            "$1e3",
            "$1,000",
            "$0",
            "0 tokens",
            "lots of tokens",
            "2X tokens",
            "$0.0000001",
            "k tokens",
            "",
            "$2000000",
            "5000G tokens",
        ] {
            let error = parse(bad).expect_err(bad).to_string();
            assert!(
                error.contains("write dollars like \"$20\""),
                "{bad}: {error}"
            );
        }
        let long = format!("${}", "9".repeat(100));
        assert!(parse(&long).unwrap_err().to_string().contains("too long"));
    }

    #[test]
    fn amounts_show_as_people_read_them() {
        assert_eq!(show_usd(20_000_000), "$20.00");
        assert_eq!(show_usd(16_104_000), "$16.10");
        assert_eq!(show_usd(4_200), "$0.0042");
        assert_eq!(show_usd(0), "$0.00");
        assert_eq!(show_tokens(200_000), "200k tokens");
        assert_eq!(show_tokens(1_500_000), "1.5M tokens");
        assert_eq!(show_tokens(950), "950 tokens");
        assert_eq!(Limit::Tokens { count: 2_000_000 }.to_string(), "2M tokens");
    }

    #[test]
    fn limits_survive_serde() {
        for text in ["$0.5", "$20", "1234 tokens"] {
            let limit = parse(text).unwrap();
            let json = serde_json::to_string(&limit).unwrap();
            assert_eq!(
                serde_json::from_str::<Limit>(&json).unwrap(),
                limit,
                "{json}"
            );
        }
        let error = serde_json::from_str::<Limit>("\"20 dollars\"").unwrap_err();
        assert!(error.to_string().contains("write dollars like"), "{error}");
    }
}
