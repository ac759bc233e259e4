//! A loopback web site for `browse`: a page whose visible text only a browser
//! that runs its script can see, with links, and a redirect to a private
//! address. Stops when dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use axum::Router;

use super::server::ServerHandle;

/// The sentence the page's script writes (the HTML holds it only in pieces).
pub const SCRIPTED_TEXT: &str = "The harbour opens at 42 past seven";

/// The page: the text is put together by a script, so a plain fetch never sees it.
const PAGE: &str = r#"<!doctype html>
<html><head><title>Harbour notes</title></head>
<body>
<h1>Harbour notes</h1>
<p id="out">Loading…</p>
<a href="/timetable">Timetable</a>
<a href="https://example.com/ferries?from=harbour">Ferries</a>
<a href="mailto:harbour@example.com">Write to us</a>
<script>
  const parts = ["The harbour", "opens at", String(6 * 7), "past seven"];
  document.getElementById("out").textContent = parts.join(" ");
  document.title = "Harbour notes (" + document.links.length + " links)";
</script>
</body></html>"#;

/// A page whose image never comes, so its load event never fires.
const SLOW_PAGE: &str = r#"<!doctype html>
<html><head><title>Slow</title></head>
<body><p id="out"></p><img src="/never" alt="">
<script>document.getElementById("out").textContent = ["Written", "before", "the", "image"].join(" ");</script>
</body></html>"#;

/// The text `/slow`'s script writes.
pub const SLOW_TEXT: &str = "Written before the image";

pub struct Pages {
    pub base_url: String,
    hits: Arc<AtomicUsize>,
    _server: ServerHandle,
}

impl Pages {
    pub async fn start() -> Pages {
        let hits = Arc::new(AtomicUsize::new(0));
        let router = Router::new()
            .route("/page", get(page))
            .route("/timetable", get(|| async { Html("<p>Timetable</p>") }))
            .route("/slow", get(|| async { Html(SLOW_PAGE) }))
            .route("/never", get(never))
            .route("/to-metadata", get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }))
            .with_state(hits.clone());
        let server = ServerHandle::serve(router).await;
        Pages { base_url: server.base_url.clone(), hits, _server: server }
    }

    /// How many times `/page` was served.
    pub fn page_hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Never answers (within any test).
async fn never() -> &'static str {
    tokio::time::sleep(std::time::Duration::from_secs(600)).await;
    ""
}

async fn page(State(hits): State<Arc<AtomicUsize>>) -> impl IntoResponse {
    hits.fetch_add(1, Ordering::SeqCst);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE)
}
