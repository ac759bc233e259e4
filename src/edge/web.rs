//! The web tools of workers: `http_fetch` behind the address guard, and
//! `web_search` when a search provider is configured.

use worker::Url;

use super::http::get_manual;
use crate::config::Config;
use crate::process::fetch_guard::{cap_output, check_url, TOOL_OUTPUT_CAP_BYTES};
use crate::process::web_search::{format_results, search_url};

/// How long one fetch may take.
const FETCH_TIMEOUT_MS: u64 = 15_000;
/// Redirects followed (each hop is checked by the guard again).
const MAX_REDIRECTS: usize = 5;
/// A search answer larger than this is not read further.
const SEARCH_BODY_LIMIT: usize = 1_000_000;

/// Fetches a public URL; every answer, refusals included, is text for the model.
pub async fn http_fetch(config: &Config, url: &str) -> String {
    let mut url = url.trim().to_string();
    for _ in 0..=MAX_REDIRECTS {
        if let Err(refusal) = check_url(&url, &config.fetch_allowed_hosts) {
            return format!("error: refused: {refusal}");
        }
        // One byte past the cap tells `cap_output` the page was longer.
        let answer =
            match get_manual(&url, &[("user-agent", "edgebot")], FETCH_TIMEOUT_MS, TOOL_OUTPUT_CAP_BYTES + 1).await {
                Ok(answer) => answer,
                Err(failure) => return format!("error: the fetch failed: {failure:?}"),
            };
        if (300..400).contains(&answer.status) {
            let next = answer.location.as_deref().and_then(|location| Url::parse(&url).ok()?.join(location).ok());
            match next {
                Some(next) => {
                    url = next.to_string();
                    continue;
                }
                None => return format!("error: HTTP {} without a usable Location", answer.status),
            }
        }
        let body = String::from_utf8_lossy(&answer.body).into_owned();
        return cap_output(format!("HTTP {}\n\n{body}", answer.status));
    }
    "error: too many redirects".to_string()
}

/// Searches the web (Brave Search API).
pub async fn web_search(config: &Config, query: &str) -> String {
    let url = search_url(&config.search_base_url, query);
    let headers = [("accept", "application/json"), ("x-subscription-token", config.search_api_key.as_str())];
    match get_manual(&url, &headers, FETCH_TIMEOUT_MS, SEARCH_BODY_LIMIT).await {
        Ok(answer) if answer.status == 200 => {
            let response = serde_json::from_slice(&answer.body).unwrap_or_default();
            cap_output(format_results(&response))
        }
        Ok(answer) => format!("error: the search answered HTTP {}", answer.status),
        Err(failure) => format!("error: the search failed: {failure:?}"),
    }
}
