//! The web tools of workers: `http_fetch` behind the address guard, and
//! `web_search` when a search provider is configured. Neither sends a
//! configured secret anywhere but to its own API, and what they bring back
//! is redacted before the model sees it.

use url::Url;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::config::Config;
use crate::ops::Op;
use crate::runtime::config::redactor;
use crate::runtime::http::get_manual;
use crate::runtime::http::HttpAnswer;
use crate::web_tools::guard::{cap_output, check_secrets, check_url, FetchRefusal, TOOL_OUTPUT_CAP_BYTES};
use crate::web_tools::search::{format_results, search_url};

/// How long one fetch may take.
const FETCH_TIMEOUT_MS: u64 = 15_000;
/// Redirects followed (each hop is checked by the guard again).
const MAX_REDIRECTS: usize = 5;
/// A search answer larger than this is not read further.
const SEARCH_BODY_LIMIT: usize = 1_000_000;

#[wasm_bindgen]
extern "C" {
    /// The runtime's own WHATWG URL parser (the global `URL` class).
    #[wasm_bindgen(js_name = URL)]
    type RuntimeUrl;

    #[wasm_bindgen(constructor, js_class = "URL", catch)]
    fn new(url: &str) -> Result<RuntimeUrl, JsValue>;

    #[wasm_bindgen(method, getter, js_class = "URL")]
    fn hostname(this: &RuntimeUrl) -> String;
}

/// Fetches a public URL; every answer, refusals included, is text for the model.
/// Each hop fetches the guard's canonical serialisation of the URL it checked.
pub async fn http_fetch(config: &Config, url: &str) -> String {
    // One byte past the cap tells `cap_output` the page was longer.
    match guarded_get(config, url, TOOL_OUTPUT_CAP_BYTES + 1).await {
        Ok(answer) => {
            let body = String::from_utf8_lossy(&answer.body);
            cap_output(redactor().redact(&format!("HTTP {}\n\n{body}", answer.status)).into_owned())
        }
        Err(error) => format!("error: {error}"),
    }
}

/// A GET a process asked for, through the fetch guard: no private address,
/// no secret in what it carries, every redirect checked like the first URL;
/// at most `max_body` bytes of the answer. The error says why, for the tool's answer.
pub async fn guarded_get(config: &Config, url: &str, max_body: usize) -> Result<HttpAnswer, String> {
    let redactor = redactor();
    let headers = [("user-agent", "edgebot")];
    // The URL as the model wrote it is judged too: its canonical form may spell a secret differently.
    let mut as_written = Some(url);
    let mut next = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        // Everything the request carries: the URL, its headers (it has no body).
        let mut carried = vec![headers[0].1];
        carried.extend(as_written.take());
        let url = judge(config, &next, &carried).map_err(|refusal| format!("refused: {refusal}"))?;
        let answer = get_manual(Op::ToolFetch, url.as_str(), &headers, FETCH_TIMEOUT_MS, max_body)
            .await
            .map_err(|failure| redactor.redact(&format!("the fetch failed: {failure:?}")).into_owned())?;
        if (300..400).contains(&answer.status) {
            // Resolved against the URL just fetched, then checked like the first.
            match answer.location.as_deref().and_then(|location| url.join(location).ok()) {
                Some(joined) => {
                    next = joined.to_string();
                    continue;
                }
                None => return Err(format!("HTTP {} without a usable Location", answer.status)),
            }
        }
        return Ok(answer);
    }
    Err("too many redirects".to_string())
}

/// A URL a tool may reach, as the fetch guard judges it (`http_fetch` each
/// hop, `browse` its page): a public address the runtime's own parser reads
/// the same way, neither it nor `carried` (the rest of what the request
/// carries) holding a configured secret bound for another host.
pub fn judge(config: &Config, url: &str, carried: &[&str]) -> Result<Url, FetchRefusal> {
    let parsed = check_url(url, &config.fetch_allowed_hosts).and_then(runtime_agrees)?;
    let mut all = vec![parsed.as_str()];
    all.extend_from_slice(carried);
    check_secrets(&all, &parsed, &redactor())?;
    Ok(parsed)
}

/// Cross-checks the guard against the runtime's own URL parser, which is the
/// one `fetch` uses: `new URL(serialised).hostname` must be the host judged
/// (both give IPv6 in brackets), or the URL is refused.
pub fn runtime_agrees(url: Url) -> Result<Url, FetchRefusal> {
    let judged = url.host_str().unwrap_or_default();
    match RuntimeUrl::new(url.as_str()) {
        Ok(runtime) if runtime.hostname() == judged => Ok(url),
        _ => Err(FetchRefusal::HostMismatch(judged.to_string())),
    }
}

/// Searches the web (Brave Search API).
pub async fn web_search(config: &Config, query: &str) -> String {
    let url = search_url(&config.search_base_url, query);
    let headers = [("accept", "application/json"), ("x-subscription-token", config.search_api_key.expose())];
    match get_manual(Op::ToolFetch, &url, &headers, FETCH_TIMEOUT_MS, SEARCH_BODY_LIMIT).await {
        Ok(answer) if answer.status == 200 => {
            let response = serde_json::from_slice(&answer.body).unwrap_or_default();
            cap_output(redactor().redact(&format_results(&response)).into_owned())
        }
        Ok(answer) => format!("error: the search answered HTTP {}", answer.status),
        Err(failure) => format!("error: the search failed: {failure:?}"),
    }
}
