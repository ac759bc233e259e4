//! What `browse` says to a browser and makes of its answers, without the
//! runtime: the framing of Browser Rendering's DevTools socket, the Chrome
//! DevTools Protocol (CDP) messages of one page visit, and the tool's answer
//! (the page's readable text and links, capped).
//!
//! The socket (`/v1/connectDevtools`, what `@cloudflare/puppeteer` uses) carries
//! each CDP message as binary frames: a 4-byte little-endian length of the
//! UTF-8 message, then the message, split into frames of at most 1 MiB. It is
//! hand-rolled because the only implementation is that JS package's
//! `chunking.ts`, and this is the whole of it.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::web_tools::guard::{cap_output, check_url};

/// The largest frame either side sends (`@cloudflare/puppeteer`'s `MAX_MESSAGE_SIZE`).
const MAX_FRAME_BYTES: usize = 1_048_575;
/// The length prefix of a message's first frame.
const HEADER_BYTES: usize = 4;
/// The most links an answer lists.
pub const MAX_LINKS: usize = 100;
/// A link's text is cut at this many characters in the answer.
const LINK_TEXT_CHARS: usize = 80;

/// Runs in the page (`Runtime.evaluate`, returned by value): its title, the
/// text a reader sees (`innerText`, so hidden elements and scripts are left
/// out) and every link, resolved to an absolute URL by the browser (`a.href`).
pub const PAGE_SCRIPT: &str = "({ url: location.href, title: document.title, \
    text: document.body ? document.body.innerText : '', \
    links: Array.from(document.links, (a) => ({ href: a.href, text: (a.innerText || '').trim() })) })";

/// One CDP message as its frames.
pub fn frames(message: &str) -> Vec<Vec<u8>> {
    let bytes = message.as_bytes();
    let mut first = Vec::with_capacity((HEADER_BYTES + bytes.len()).min(MAX_FRAME_BYTES));
    first.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    let (head, mut rest) = bytes.split_at(bytes.len().min(MAX_FRAME_BYTES - HEADER_BYTES));
    first.extend_from_slice(head);
    let mut frames = vec![first];
    while !rest.is_empty() {
        let (frame, tail) = rest.split_at(rest.len().min(MAX_FRAME_BYTES));
        frames.push(frame.to_vec());
        rest = tail;
    }
    frames
}

/// Puts messages back together from the frames the browser sends.
#[derive(Debug, Default)]
pub struct Reassembler {
    /// The message being gathered (without its length prefix), and its length.
    partial: Vec<u8>,
    expected: Option<usize>,
}

impl Reassembler {
    /// Adds one frame; a message when it completes one. A frame that runs past
    /// its message's length, or a message that is not UTF-8, is an error.
    pub fn push(&mut self, frame: &[u8]) -> Result<Option<String>, String> {
        let body = match self.expected {
            Some(_) => frame,
            None => {
                let prefix: [u8; HEADER_BYTES] = frame
                    .get(..HEADER_BYTES)
                    .and_then(|head| head.try_into().ok())
                    .ok_or("a frame without its length")?;
                self.expected = Some(u32::from_le_bytes(prefix) as usize);
                &frame[HEADER_BYTES..]
            }
        };
        self.partial.extend_from_slice(body);
        let expected = self.expected.unwrap_or_default();
        if self.partial.len() > expected {
            return Err(format!("a message ran past its length ({expected} bytes)"));
        }
        if self.partial.len() < expected {
            return Ok(None);
        }
        self.expected = None;
        let whole = std::mem::take(&mut self.partial);
        String::from_utf8(whole).map(Some).map_err(|_| "a message that is not UTF-8".to_string())
    }
}

/// A CDP command; `session` addresses a page attached with `flatten`.
pub fn command(id: u64, method: &str, params: Value, session: Option<&str>) -> String {
    let mut message = json!({ "id": id, "method": method, "params": params });
    if let Some(session) = session {
        message["sessionId"] = json!(session);
    }
    message.to_string()
}

/// A message from the browser: the answer to a command, or an event.
#[derive(Debug, Default, Deserialize)]
pub struct Incoming {
    pub id: Option<u64>,
    #[serde(default)]
    pub result: Value,
    pub error: Option<Value>,
    pub method: Option<String>,
    #[serde(default)]
    pub params: Value,
    /// The page session an event or answer belongs to (none: the browser's).
    #[serde(rename = "sessionId")]
    pub session_id: Option<String>,
}

/// What to do with a request the page paused on (`Fetch.requestPaused`):
/// http(s) to an address the fetch guard allows goes on; anything else fails.
/// Gives the command's method and parameters, and the refusal when refused.
pub fn judge_request(params: &Value, allowed_hosts: &[String]) -> (&'static str, Value, Option<String>) {
    let id = params["requestId"].clone();
    let url = params["request"]["url"].as_str().unwrap_or_default();
    // `data:` and `blob:` come from the page itself and reach no host.
    if url.starts_with("data:") || url.starts_with("blob:") {
        return ("Fetch.continueRequest", json!({ "requestId": id }), None);
    }
    match check_url(url, allowed_hosts) {
        Ok(_) => ("Fetch.continueRequest", json!({ "requestId": id }), None),
        Err(refusal) => {
            let failed = json!({ "requestId": id, "errorReason": "BlockedByClient" });
            ("Fetch.failRequest", failed, Some(refusal.to_string()))
        }
    }
}

/// A link on the page.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Link {
    pub href: String,
    #[serde(default)]
    pub text: String,
}

/// What `PAGE_SCRIPT` returns.
#[derive(Debug, Default, Deserialize)]
pub struct Page {
    /// Where the page ended up (after redirects).
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub links: Vec<Link>,
}

impl Page {
    /// The page from `Runtime.evaluate`'s result (`returnByValue`).
    pub fn from_evaluation(result: &Value) -> Result<Page, String> {
        if let Some(details) = result.get("exceptionDetails") {
            return Err(format!("the page could not be read: {}", details["text"].as_str().unwrap_or("an exception")));
        }
        serde_json::from_value(result["result"]["value"].clone())
            .map_err(|error| format!("the page could not be read: {error}"))
    }

    /// The http(s) links, each once, in page order, at most `MAX_LINKS`.
    pub fn web_links(&self) -> Vec<&Link> {
        let mut seen = std::collections::BTreeSet::new();
        self.links
            .iter()
            .filter(|link| link.href.starts_with("http://") || link.href.starts_with("https://"))
            .filter(|link| seen.insert(link.href.as_str()))
            .take(MAX_LINKS)
            .collect()
    }

    /// The tool's answer: where the page ended up, its title, its links, then
    /// its text, cut at the tool output cap (links first, so a long page's
    /// text cannot push them out). `shot` names the screenshot when one was kept.
    pub fn answer(&self, shot: Option<&str>) -> String {
        let mut out = format!("Rendered page: {}\nTitle: {}\n", self.url, one_line(&self.title, 200));
        if let Some(path) = shot {
            out.push_str(&format!("Screenshot: {path}\n"));
        }
        let links = self.web_links();
        let total = self.links.iter().filter(|link| link.href.starts_with("http")).count();
        out.push_str(&format!("\nLinks ({} of {total}):\n", links.len()));
        for link in links {
            out.push_str(format!("- {} {}", link.href, one_line(&link.text, LINK_TEXT_CHARS)).trim_end());
            out.push('\n');
        }
        out.push_str("\nText:\n");
        out.push_str(self.text.trim());
        cap_output(out)
    }
}

/// Whitespace runs as one space, at most `chars` characters.
fn one_line(text: &str, chars: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.chars().take(chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web_tools::guard::TOOL_OUTPUT_CAP_BYTES;

    fn reassemble(frames: &[Vec<u8>]) -> Vec<String> {
        let mut reassembler = Reassembler::default();
        frames.iter().filter_map(|frame| reassembler.push(frame).unwrap()).collect()
    }

    #[test]
    fn a_small_message_is_one_frame_with_its_length_first() {
        let frames = frames("{\"id\":1}");
        assert_eq!(frames.len(), 1);
        assert_eq!(&frames[0][..4], &8u32.to_le_bytes());
        assert_eq!(&frames[0][4..], b"{\"id\":1}");
    }

    #[test]
    fn a_large_message_is_split_and_put_back_together() {
        let message = format!("{{\"data\":\"{}é\"}}", "x".repeat(2 * MAX_FRAME_BYTES + 17));
        let frames = frames(&message);
        assert_eq!(frames.len(), 3);
        assert!(frames.iter().all(|frame| frame.len() <= MAX_FRAME_BYTES));
        assert_eq!(reassemble(&frames), vec![message]);
    }

    #[test]
    fn messages_in_a_row_come_out_one_by_one() {
        let mut all = frames("first");
        all.extend(frames(""));
        all.extend(frames("third"));
        assert_eq!(reassemble(&all), vec!["first", "", "third"]);
    }

    #[test]
    fn a_frame_past_the_length_or_without_one_is_an_error() {
        let mut reassembler = Reassembler::default();
        let mut frame = 2u32.to_le_bytes().to_vec();
        frame.extend_from_slice(b"abc");
        assert!(reassembler.push(&frame).is_err());
        assert!(Reassembler::default().push(&[1, 0]).is_err());
    }

    #[test]
    fn commands_address_a_session_only_when_given_one() {
        let browser: Value =
            serde_json::from_str(&command(1, "Target.createTarget", json!({"url": "about:blank"}), None)).unwrap();
        assert_eq!(browser, json!({"id": 1, "method": "Target.createTarget", "params": {"url": "about:blank"}}));
        let page: Value = serde_json::from_str(&command(2, "Page.enable", json!({}), Some("S1"))).unwrap();
        assert_eq!(page["sessionId"], "S1");
    }

    #[test]
    fn paused_requests_go_on_only_to_allowed_hosts() {
        let paused = |url: &str| json!({ "requestId": "r1", "request": { "url": url } });
        let (method, params, refusal) = judge_request(&paused("https://example.com/a.css"), &[]);
        assert_eq!((method, params, refusal), ("Fetch.continueRequest", json!({"requestId": "r1"}), None));
        for private in ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "file:///etc/passwd"] {
            let (method, params, refusal) = judge_request(&paused(private), &[]);
            assert_eq!(method, "Fetch.failRequest", "{private}");
            assert_eq!(params["errorReason"], "BlockedByClient");
            assert!(refusal.is_some());
        }
        let allowed = vec!["127.0.0.1".to_string()];
        assert_eq!(judge_request(&paused("http://127.0.0.1:9/x"), &allowed).0, "Fetch.continueRequest");
        assert_eq!(judge_request(&paused("http://127.0.0.1:9/x"), &[]).0, "Fetch.failRequest");
        assert_eq!(judge_request(&paused("data:image/png;base64,AA=="), &[]).0, "Fetch.continueRequest");
    }

    fn evaluation(value: Value) -> Value {
        json!({ "result": { "type": "object", "value": value } })
    }

    #[test]
    fn the_answer_lists_web_links_once_then_the_text() {
        let page = Page::from_evaluation(&evaluation(json!({
            "url": "https://example.com/",
            "title": "A  page\n",
            "text": "  Hello from script  ",
            "links": [
                { "href": "https://example.com/a", "text": "First\n link" },
                { "href": "mailto:someone@example.com", "text": "mail" },
                { "href": "https://example.com/a", "text": "again" },
                { "href": "http://example.org/b" },
            ]
        })))
        .unwrap();
        let answer = page.answer(Some("screenshots/x.png"));
        assert_eq!(
            answer,
            "Rendered page: https://example.com/\nTitle: A page\nScreenshot: screenshots/x.png\n\n\
             Links (2 of 3):\n- https://example.com/a First link\n- http://example.org/b\n\nText:\nHello from script"
        );
    }

    #[test]
    fn links_are_capped_and_the_text_is_cut_at_the_tool_cap() {
        let links: Vec<Value> =
            (0..MAX_LINKS + 5).map(|n| json!({ "href": format!("https://example.com/{n}"), "text": "t" })).collect();
        let page = Page::from_evaluation(&evaluation(
            json!({ "url": "https://example.com/", "title": "t", "text": "y".repeat(60_000), "links": links }),
        ))
        .unwrap();
        let answer = page.answer(None);
        assert!(answer.contains(&format!("Links ({MAX_LINKS} of {}):", MAX_LINKS + 5)));
        assert!(answer.contains(&format!("https://example.com/{}", MAX_LINKS - 1)));
        assert!(!answer.contains(&format!("https://example.com/{} ", MAX_LINKS)));
        assert_eq!(answer.len(), TOOL_OUTPUT_CAP_BYTES);
    }

    #[test]
    fn a_page_that_threw_is_an_error() {
        let thrown = json!({ "result": {}, "exceptionDetails": { "text": "Uncaught" } });
        assert!(Page::from_evaluation(&thrown).unwrap_err().contains("Uncaught"));
        assert!(Page::from_evaluation(&json!({ "result": { "value": 3 } })).is_err());
    }
}
