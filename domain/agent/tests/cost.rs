use gatehouse_agent::{ModelUsage, Price, PriceTable, cost};

fn table() -> PriceTable {
    PriceTable::from([
        (
            "claude-sonnet-4-5".to_owned(),
            Price {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
            },
        ),
        (
            "gpt-5-codex".to_owned(),
            Price {
                input: 1.25,
                output: 10.0,
                cache_read: 0.125,
                cache_write: 0.0,
            },
        ),
    ])
}

fn usage(model: &str, input: u64, output: u64, cache_read: u64, cache_write: u64) -> ModelUsage {
    ModelUsage {
        model: model.to_owned(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
    }
}

#[test]
fn prices_are_per_million_tokens() {
    assert_eq!(
        cost(
            &usage("claude-sonnet-4-5", 1_000_000, 500_000, 0, 0),
            &table()
        ),
        Some(10.5)
    );
}

#[test]
fn every_kind_of_token_has_its_price() {
    let total = cost(
        &usage("claude-sonnet-4-5", 2_000, 1_000, 100_000, 10_000),
        &table(),
    );
    // 0.006 input + 0.015 output + 0.03 cache read + 0.0375 cache write
    assert!(
        total.is_some_and(|usd| (usd - 0.0885).abs() < 1e-12),
        "{total:?}"
    );
}

#[test]
fn an_unpriced_model_has_no_cost() {
    assert_eq!(cost(&usage("claude-opus-9", 1, 1, 0, 0), &table()), None);
    assert_eq!(
        cost(&usage("unknown", 1, 1, 0, 0), &PriceTable::new()),
        None
    );
}

#[test]
fn a_dated_snapshot_takes_its_models_price() {
    assert_eq!(
        cost(
            &usage("claude-sonnet-4-5-20250929", 1_000_000, 0, 0, 0),
            &table()
        ),
        Some(3.0)
    );
    // Only a date comes off: another model of the family is not priced.
    assert_eq!(
        cost(&usage("claude-sonnet-4-5-preview", 1, 0, 0, 0), &table()),
        None
    );
    // An exact entry wins over the undated one.
    let mut prices = table();
    prices.insert(
        "claude-sonnet-4-5-20250929".to_owned(),
        Price {
            input: 1.0,
            output: 1.0,
            cache_read: 0.0,
            cache_write: 0.0,
        },
    );
    assert_eq!(
        cost(
            &usage("claude-sonnet-4-5-20250929", 1_000_000, 0, 0, 0),
            &prices
        ),
        Some(1.0)
    );
}

#[test]
fn a_price_reads_with_optional_cache_prices_and_refuses_unknown_keys() {
    let price: Result<Price, _> = serde_json::from_str(r#"{"input": 3, "output": 15}"#);
    assert_eq!(
        price.ok(),
        Some(Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.0,
            cache_write: 0.0,
        })
    );
    let typo: Result<Price, _> = serde_json::from_str(r#"{"input": 3, "output": 15, "cached": 1}"#);
    assert!(typo.is_err());
}
