//! The web tools as types: `http_fetch` and `web_search`, with their
//! documented arguments (their calls: `tools.rs`).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::llm::tool::Tool;

/// `http_fetch`: read a public page or API with GET.
pub struct HttpFetch;

impl Tool for HttpFetch {
    const NAME: &'static str = "http_fetch";
    type Arguments = HttpFetchArguments;
}

/// `http_fetch`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct HttpFetchArguments {
    /// An http(s) URL.
    pub url: String,
}

/// `web_search`: the top results of a web search.
pub struct WebSearch;

impl Tool for WebSearch {
    const NAME: &'static str = "web_search";
    type Arguments = WebSearchArguments;
}

/// `web_search`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WebSearchArguments {
    /// What to search for.
    pub query: String,
}
