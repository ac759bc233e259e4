//! What models cost, per million tokens in US dollars (list prices; the
//! budgets only need them roughly right). A model not in the table is priced
//! at [`DEFAULT_PRICE`], deliberately at the dearer end, so an unknown model
//! reaches a price budget sooner rather than never. `benches/pricing.rs` is
//! about Cloudflare's own prices, not models'.

use crate::llm::Usage;

/// Millionths of a US dollar per million tokens (integers, so sums are exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    pub input_per_million: u64,
    pub output_per_million: u64,
}

/// US cents per million tokens, as a [`Price`] field.
const fn cents(cents: u64) -> u64 {
    cents * 10_000
}

impl Price {
    /// The price of one call in millionths of a dollar, rounded up (many
    /// tiny calls still add up).
    pub fn micro_usd(&self, usage: Usage) -> u64 {
        let cost = u128::from(usage.input_tokens) * u128::from(self.input_per_million)
            + u128::from(usage.output_tokens) * u128::from(self.output_per_million);
        u64::try_from(cost.div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }
}

/// For models the table does not know: $5 in, $15 out per million tokens.
pub const DEFAULT_PRICE: Price = Price { input_per_million: cents(500), output_per_million: cents(1500) };

/// `provider/model` prefixes and their prices; the longest matching prefix wins.
const PRICES: &[(&str, Price)] = &[
    ("openai/gpt-4o-mini", Price { input_per_million: cents(15), output_per_million: cents(60) }),
    ("openai/gpt-4o", Price { input_per_million: cents(250), output_per_million: cents(1000) }),
    ("openai/gpt-4.1-nano", Price { input_per_million: cents(10), output_per_million: cents(40) }),
    ("openai/gpt-4.1-mini", Price { input_per_million: cents(40), output_per_million: cents(160) }),
    ("openai/gpt-4.1", Price { input_per_million: cents(200), output_per_million: cents(800) }),
    ("anthropic/claude-3-5-haiku", Price { input_per_million: cents(80), output_per_million: cents(400) }),
    ("anthropic/claude-3-5-sonnet", Price { input_per_million: cents(300), output_per_million: cents(1500) }),
    ("anthropic/claude-sonnet-4", Price { input_per_million: cents(300), output_per_million: cents(1500) }),
    ("anthropic/claude-opus-4", Price { input_per_million: cents(1500), output_per_million: cents(7500) }),
    (
        "workers-ai/@cf/meta/llama-3.1-8b-instruct",
        Price { input_per_million: cents(28), output_per_million: cents(83) },
    ),
    (
        "workers-ai/@cf/meta/llama-3.3-70b-instruct",
        Price { input_per_million: cents(29), output_per_million: cents(225) },
    ),
];

/// The price of a `provider/model` key.
pub fn price_of(model: &str) -> Price {
    PRICES
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_PRICE, |(_, price)| *price)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_prices_a_model_and_unknown_ones_cost_the_default() {
        let usage = Usage { input_tokens: 1_000_000, output_tokens: 1_000_000 };
        let cases = [
            ("openai/gpt-4o-mini", 750_000),
            ("openai/gpt-4o-mini-2024-07-18", 750_000),
            ("openai/gpt-4o", 12_500_000),
            ("anthropic/claude-3-5-haiku-latest", 4_800_000),
            ("openai/some-new-model", 20_000_000),
        ];
        for (model, micro_usd) in cases {
            assert_eq!(price_of(model).micro_usd(usage), micro_usd, "{model}");
        }
        // A call rounds up to a whole millionth: many tiny calls still add up.
        assert_eq!(price_of("openai/gpt-4o-mini").micro_usd(Usage { input_tokens: 1, output_tokens: 0 }), 1);
        assert_eq!(DEFAULT_PRICE.micro_usd(Usage::default()), 0);
    }
}
