//! The web tools as types: `http_fetch` and `web_search`, with their
//! documented arguments (their calls: `tools.rs`).

crate::tool! {
    /// `http_fetch`: read a public page or API with GET.
    pub HttpFetch = "http_fetch",
    /// `http_fetch`'s arguments.
    struct HttpFetchArguments {
        /// An http(s) URL.
        pub url: String,
    }
}

crate::tool! {
    /// `web_search`: the top results of a web search.
    pub WebSearch = "web_search",
    /// `web_search`'s arguments.
    struct WebSearchArguments {
        /// What to search for.
        pub query: String,
    }
}

crate::tool! {
    /// `browse`: a page as a browser renders it (Browser Rendering).
    pub Browse = "browse",
    /// `browse`'s arguments.
    struct BrowseArguments {
        /// An http(s) URL.
        pub url: String,
        /// Also keep a PNG screenshot of the page in the workspace.
        pub screenshot: Option<bool>,
    }
}
