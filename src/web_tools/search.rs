//! `web_search` over the Brave Search API: the query URL and a compact text of
//! the results for the model.

use serde_json::Value;

/// Results handed to the model per search.
pub const RESULTS_PER_SEARCH: usize = 5;

/// The search request's URL (the API key travels in a header).
pub fn search_url(base_url: &str, query: &str) -> String {
    let encoded: String = query
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
            b' ' => "+".to_string(),
            other => format!("%{other:02X}"),
        })
        .collect();
    format!("{base_url}/res/v1/web/search?q={encoded}&count={RESULTS_PER_SEARCH}")
}

/// The results as numbered lines: title, address, snippet.
pub fn format_results(response: &Value) -> String {
    let results = response.pointer("/web/results").and_then(Value::as_array).cloned().unwrap_or_default();
    if results.is_empty() {
        return "no results".to_string();
    }
    results
        .iter()
        .take(RESULTS_PER_SEARCH)
        .enumerate()
        .map(|(index, result)| {
            let field = |name: &str| result.get(name).and_then(Value::as_str).unwrap_or("");
            format!("{}. {}\n   {}\n   {}\n", index + 1, field("title"), field("url"), field("description"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn queries_are_encoded_and_results_listed() {
        assert_eq!(
            search_url("https://api.example", "rust & wasm?"),
            "https://api.example/res/v1/web/search?q=rust+%26+wasm%3F&count=5"
        );
        let response = json!({"web": {"results": [
            {"title": "Rust", "url": "https://rust-lang.org", "description": "A language"},
            {"title": "Wasm", "url": "https://webassembly.org", "description": "A format"}
        ]}});
        let text = format_results(&response);
        assert!(text.starts_with("1. Rust\n   https://rust-lang.org\n   A language\n2. Wasm"), "{text}");
        assert_eq!(format_results(&json!({})), "no results");
    }
}
