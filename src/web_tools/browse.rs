//! `browse`: a page as a browser sees it. The URL is judged by the fetch guard
//! (as `http_fetch`'s is), then a Browser Rendering session renders it: the
//! Worker speaks the Chrome DevTools Protocol itself over the binding's
//! DevTools socket (`cdp` holds the framing and the messages). Every request
//! the page makes, the first and each redirect included, pauses in the
//! browser (`Fetch.enable`) until the guard has judged its URL; refused ones
//! fail. The answer is the page's readable text and links, redacted and
//! capped; a screenshot, when asked for, is kept in the conversation's workspace.

use std::time::Duration;

use base64::Engine;
use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures_util::future::{select, Either};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use url::Url;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use worker::web_sys::{CloseEvent, MessageEvent};
use worker::{Delay, Env, Fetcher, Headers, Method, Request, RequestInit, WebSocket};

use crate::config::Config;
use crate::ops::Op;
use crate::runtime::config::redactor;
use crate::runtime::http::now_ms;
use crate::web_tools::cdp::{command, frames, judge_request, Incoming, Page, Reassembler, PAGE_SCRIPT};
use crate::web_tools::tools::judge;
use crate::workspace::rules::WorkspacePath;
use crate::workspace::store::Workspace;

/// The binding answers any URL; only the path matters.
const BINDING_ORIGIN: &str = "https://browser.binding";

/// What one visit brought back.
struct Rendered {
    page: Page,
    png: Option<Vec<u8>>,
}

/// Renders `url` and answers for the model; every failure is an `error: ` line.
pub async fn browse(config: &Config, env: &Env, conversation: &str, url: &str, screenshot: bool) -> String {
    let redactor = redactor();
    let url = match judge(config, url, &[url]) {
        Ok(url) => url,
        Err(refusal) => return format!("error: refused: {refusal}"),
    };
    crate::ops::count(Op::BrowserRender);
    let started = now_ms();
    let rendered = render(config, env, &url, screenshot).await;
    crate::ops::add(Op::BrowserMs, u64::try_from(now_ms() - started).unwrap_or(0));
    let rendered = match rendered {
        Ok(rendered) => rendered,
        Err(error) => return redactor.redact(&format!("error: {error}")).into_owned(),
    };
    let shot = match rendered.png {
        Some(png) => Some(keep_screenshot(env, conversation, &url, &png).await),
        None => None,
    };
    redactor.redact(&rendered.page.answer(shot.as_deref())).into_owned()
}

/// Opens a session, visits the page within the configured time, and closes
/// the session whatever happened.
async fn render(config: &Config, env: &Env, url: &Url, screenshot: bool) -> Result<Rendered, String> {
    let binding = browser(env)?;
    let session = acquire(&binding).await?;
    let socket = connect(&binding, &session).await?;
    let mut devtools = Devtools::new(&socket, &config.fetch_allowed_hosts)?;
    let timeout_ms = config.browse_timeout_ms;
    // Two thirds of the time for the load, the rest to read the page and photograph it.
    let visit = Box::pin(devtools.visit(url, screenshot, timeout_ms * 2 / 3));
    let outcome = match select(visit, Delay::from(Duration::from_millis(timeout_ms))).await {
        Either::Left((outcome, _)) => outcome,
        Either::Right(_) => Err(format!("the page was not read within {timeout_ms} ms")),
    };
    // Ends the session (and, locally, the Chrome process) rather than leaving it idle.
    devtools.send("Browser.close", json!({}), None).ok();
    socket.close(Some(1000), Some("done")).ok();
    outcome
}

fn browser(env: &Env) -> Result<Fetcher, String> {
    let name = crate::bindings::BROWSER.name;
    env.service(name).map_err(|_| format!("browsing is not set up (no `{name}` binding)"))
}

#[derive(Deserialize)]
struct Acquired {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// A new browser session (`/v1/acquire`, as `@cloudflare/puppeteer` does).
async fn acquire(binding: &Fetcher) -> Result<String, String> {
    let mut response = binding
        .fetch(format!("{BINDING_ORIGIN}/v1/acquire"), None)
        .await
        .map_err(|error| format!("no browser session: {error}"))?;
    let body = response.text().await.unwrap_or_default();
    if response.status_code() != 200 {
        let status = response.status_code();
        return Err(format!("no browser session: HTTP {status} {}", body.chars().take(200).collect::<String>()));
    }
    let acquired: Acquired = serde_json::from_str(&body).map_err(|error| format!("no browser session: {error}"))?;
    Ok(acquired.session_id)
}

/// The session's DevTools socket (`/v1/connectDevtools`).
async fn connect(binding: &Fetcher, session: &str) -> Result<WebSocket, String> {
    let headers = Headers::new();
    headers.set("upgrade", "websocket").map_err(|error| error.to_string())?;
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers);
    let url = format!("{BINDING_ORIGIN}/v1/connectDevtools?browser_session={session}");
    let request = Request::new_with_init(&url, &init).map_err(|error| error.to_string())?;
    let response =
        binding.fetch_request(request).await.map_err(|error| format!("the browser cannot be reached: {error}"))?;
    let socket = response.websocket().ok_or("the browser did not open a DevTools socket")?;
    socket.accept().map_err(|error| format!("the browser socket cannot be opened: {error}"))?;
    Ok(socket)
}

/// What the socket's listeners hand on: a frame's bytes, or why it ended.
type Heard = Result<Vec<u8>, String>;

/// The socket's listeners, which hand each frame's bytes to the reader. Not
/// `worker`'s event stream: it reads a binary frame as an `ArrayBuffer`, and
/// under this compatibility date a socket's frames come as `Blob`s unless its
/// `binaryType` is set (which `worker` cannot do).
struct Listeners {
    socket: worker::web_sys::WebSocket,
    message: Closure<dyn FnMut(MessageEvent)>,
    close: Closure<dyn FnMut(CloseEvent)>,
}

impl Listeners {
    fn attach(socket: &WebSocket) -> Result<(Listeners, UnboundedReceiver<Heard>), String> {
        let (sender, heard): (UnboundedSender<Heard>, _) = unbounded();
        let on_message = sender.clone();
        let message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let data = event.data();
            let bytes = match data.as_string() {
                Some(text) => text.into_bytes(),
                None => js_sys::Uint8Array::new(&data).to_vec(),
            };
            on_message.unbounded_send(Ok(bytes)).ok();
        });
        let close = Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
            let ended = format!("the browser closed the connection ({} {})", event.code(), event.reason());
            sender.unbounded_send(Err(ended)).ok();
        });
        let socket: worker::web_sys::WebSocket = socket.as_ref().clone();
        js_sys::Reflect::set(&socket, &"binaryType".into(), &"arraybuffer".into())
            .map_err(|_| "the browser socket cannot be read")?;
        let listen = |kind: &str, callback: &js_sys::Function| {
            socket.add_event_listener_with_callback(kind, callback).map_err(|_| "the browser socket cannot be read")
        };
        listen("message", message.as_ref().unchecked_ref())?;
        listen("close", close.as_ref().unchecked_ref())?;
        Ok((Listeners { socket, message, close }, heard))
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        let socket = &self.socket;
        socket.remove_event_listener_with_callback("message", self.message.as_ref().unchecked_ref()).ok();
        socket.remove_event_listener_with_callback("close", self.close.as_ref().unchecked_ref()).ok();
    }
}

/// One DevTools conversation with the browser.
struct Devtools<'a> {
    socket: &'a WebSocket,
    _listeners: Listeners,
    heard: UnboundedReceiver<Heard>,
    frames: Reassembler,
    next_id: u64,
    allowed_hosts: &'a [String],
    /// Why the guard failed requests of the page, in order.
    refused: Vec<String>,
    /// The page's load event came.
    loaded: bool,
}

impl<'a> Devtools<'a> {
    fn new(socket: &'a WebSocket, allowed_hosts: &'a [String]) -> Result<Self, String> {
        let (listeners, heard) = Listeners::attach(socket)?;
        let frames = Reassembler::default();
        let (next_id, refused, loaded) = (0, Vec::new(), false);
        Ok(Devtools { socket, _listeners: listeners, heard, frames, next_id, allowed_hosts, refused, loaded })
    }

    /// A fresh tab, every request judged, the page loaded, read and (when
    /// asked) photographed.
    async fn visit(&mut self, url: &Url, screenshot: bool, load_wait_ms: u64) -> Result<Rendered, String> {
        let target = self.call("Target.createTarget", json!({ "url": "about:blank" }), None).await?;
        let attach = json!({ "targetId": target["targetId"], "flatten": true });
        let attached = self.call("Target.attachToTarget", attach, None).await?;
        let page = attached["sessionId"].as_str().ok_or("the browser gave no page session")?.to_string();
        let page = Some(page.as_str());
        self.call("Fetch.enable", json!({ "patterns": [{ "urlPattern": "*" }] }), page).await?;
        self.call("Page.enable", json!({}), page).await?;
        self.loaded = false;
        let navigated = self.call("Page.navigate", json!({ "url": url.as_str() }), page).await?;
        if let Some(failure) = navigated["errorText"].as_str().filter(|text| !text.is_empty()) {
            return Err(self.failed(failure));
        }
        self.wait_for_load(load_wait_ms).await?;
        let evaluate = json!({ "expression": PAGE_SCRIPT, "returnByValue": true });
        let page_read = Page::from_evaluation(&self.call("Runtime.evaluate", evaluate, page).await?)?;
        if page_read.url.starts_with("chrome-error:") {
            return Err(self.failed("the page could not be loaded"));
        }
        let png = match screenshot {
            true => Some(self.screenshot(page).await?),
            false => None,
        };
        Ok(Rendered { page: page_read, png })
    }

    /// Waits for the page's load event, at most `within_ms`: a page still
    /// loading something by then (a slow image, a hanging script) is read as
    /// it stands.
    async fn wait_for_load(&mut self, within_ms: u64) -> Result<(), String> {
        let deadline = now_ms() + within_ms as i64;
        while !self.loaded {
            let left = deadline - now_ms();
            if left <= 0 {
                return Ok(());
            }
            let wait = Delay::from(Duration::from_millis(left as u64));
            let heard = match select(Box::pin(self.next_message()), wait).await {
                Either::Left((message, _)) => message?,
                Either::Right(_) => return Ok(()),
            };
            self.on_event(&heard)?;
        }
        Ok(())
    }

    /// A navigation that failed: refused by the guard, or by the network.
    fn failed(&self, failure: &str) -> String {
        match self.refused.first() {
            Some(refusal) => format!("refused: {refusal}"),
            None => format!("the page could not be loaded: {failure}"),
        }
    }

    async fn screenshot(&mut self, page: Option<&str>) -> Result<Vec<u8>, String> {
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }), page).await?;
        let data = shot["data"].as_str().unwrap_or_default();
        base64::engine::general_purpose::STANDARD.decode(data).map_err(|error| format!("a broken screenshot: {error}"))
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Result<u64, String> {
        self.next_id += 1;
        for frame in frames(&command(self.next_id, method, params, session)) {
            self.socket.send_with_bytes(frame).map_err(|error| format!("the browser socket failed: {error}"))?;
        }
        Ok(self.next_id)
    }

    /// Sends a command and waits for its answer, handling events meanwhile.
    async fn call(&mut self, method: &str, params: Value, session: Option<&str>) -> Result<Value, String> {
        let id = self.send(method, params, session)?;
        loop {
            let message = self.next_message().await?;
            if message.id == Some(id) {
                return match message.error {
                    Some(error) => Err(format!("{method} failed: {}", error["message"].as_str().unwrap_or("?"))),
                    None => Ok(message.result),
                };
            }
            self.on_event(&message)?;
        }
    }

    /// A paused request is judged and let go or failed; a load is noted.
    fn on_event(&mut self, message: &Incoming) -> Result<(), String> {
        match message.method.as_deref() {
            Some("Fetch.requestPaused") => {
                let (method, params, refusal) = judge_request(&message.params, self.allowed_hosts);
                self.refused.extend(refusal);
                self.send(method, params, message.session_id.as_deref())?;
            }
            Some("Page.loadEventFired") => self.loaded = true,
            _ => {}
        }
        Ok(())
    }

    async fn next_message(&mut self) -> Result<Incoming, String> {
        loop {
            let frame = self.heard.next().await.unwrap_or_else(|| Err("the browser connection ended".to_string()))?;
            if let Some(text) = self.frames.push(&frame)? {
                return serde_json::from_str(&text).map_err(|error| format!("an unreadable browser message: {error}"));
            }
        }
    }
}

/// Keeps a screenshot in the workspace; says where, or why not.
async fn keep_screenshot(env: &Env, conversation: &str, url: &Url, png: &[u8]) -> String {
    let host: String =
        url.host_str().unwrap_or("page").chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
    let path = format!("screenshots/{host}-{}.png", now_ms());
    let written = match (Workspace::open(env, conversation), WorkspacePath::parse(&path)) {
        (Ok(workspace), Ok(parsed)) => workspace.write(&parsed, png).await.map(|()| parsed),
        (Err(error), _) => Err(error.to_string()),
        (_, Err(error)) => Err(error),
    };
    match written {
        Ok(parsed) => parsed.as_str().to_string(),
        Err(error) => format!("not kept ({error})"),
    }
}
