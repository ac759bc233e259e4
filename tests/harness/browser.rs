//! A real browser for the web tests: Debian's headless Chromium driven over
//! the W3C WebDriver protocol by its chromedriver, which runs in its own
//! process group and is stopped (with Chromium) on drop.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a click or a keystroke waits for its element to be there and stay there.
const ACT_TIMEOUT: Duration = Duration::from_secs(15);

pub struct Browser {
    driver: Child,
    session: String,
    base: String,
    client: reqwest::Client,
    _profile: tempfile::TempDir,
}

/// Where screenshots go: kept after the run as test artifacts.
pub fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots")
}

impl Browser {
    /// Starts chromedriver and a headless Chromium window `width` CSS px wide
    /// (a phone's viewport below 500).
    pub async fn start(width: u32, height: u32) -> Browser {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port").port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver (make test installs Debian's chromium-driver)");
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let profile = tempfile::TempDir::new().expect("profile dir");
        let mut browser = Browser { driver, session: String::new(), base, client, _profile: profile };
        browser.wait_for_driver().await;
        let arguments = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", browser._profile.path().display()),
        ];
        let mut options = json!({ "binary": CHROMIUM, "args": arguments });
        // A desktop window is never narrower than about 500 px: phones are emulated.
        if width < 500 {
            options["mobileEmulation"] =
                json!({ "deviceMetrics": { "width": width, "height": height, "pixelRatio": 2 } });
        }
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
        }}});
        let created = browser.call(reqwest::Method::POST, "/session", Some(capabilities)).await;
        browser.session = created["value"]["sessionId"].as_str().expect("a WebDriver session").to_string();
        browser
    }

    async fn wait_for_driver(&mut self) {
        for _ in 0..200 {
            let ready = self.client.get(format!("{}/status", self.base)).send().await;
            if let Ok(response) = ready {
                let status: Value = response.json().await.unwrap_or_default();
                if status["value"]["ready"] == true {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("chromedriver did not start");
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body).await.unwrap_or_else(|error| panic!("WebDriver {path}: {error}"))
    }

    /// A WebDriver call, its error as a value (`error: message`).
    async fn try_call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, String> {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.expect("WebDriver call").json().await.expect("WebDriver JSON");
        match answer["value"]["error"].as_str() {
            Some(error) => Err(format!("{error}: {}", answer["value"]["message"])),
            None => Ok(answer),
        }
    }

    async fn session_call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body).await["value"].take()
    }

    /// Finds the element matching `css` and does `action` to it (a path under
    /// `/element/{id}`), again and again until it works or [`ACT_TIMEOUT`]
    /// passes: on a slow machine the element may not be there yet, or the
    /// page may re-render it between the find and the act (a stale element).
    async fn act_on(&self, css: &str, action: &str, body: Value) {
        let deadline = tokio::time::Instant::now() + ACT_TIMEOUT;
        let session = format!("/session/{}", self.session);
        loop {
            let find = json!({ "using": "css selector", "value": css });
            let found = self.try_call(reqwest::Method::POST, &format!("{session}/element"), Some(find)).await;
            let id = found.map(|found| {
                let value = &found["value"];
                value
                    .as_object()
                    .and_then(|map| map.values().next())
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            });
            let done = match id {
                Ok(id) => {
                    self.try_call(
                        reqwest::Method::POST,
                        &format!("{session}/element/{id}/{action}"),
                        Some(body.clone()),
                    )
                    .await
                }
                Err(error) => Err(error),
            };
            match done {
                Ok(_) => return,
                Err(error) if tokio::time::Instant::now() > deadline => {
                    panic!("WebDriver {action} on {css}: {error} (for {ACT_TIMEOUT:?})")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    pub async fn goto(&self, url: &str) {
        self.session_call(reqwest::Method::POST, "/url", Some(json!({ "url": url }))).await;
    }

    /// Runs a script in the page (`arguments[0]`… are `args`) and returns its value.
    pub async fn eval(&self, script: &str, args: Value) -> Value {
        self.session_call(reqwest::Method::POST, "/execute/sync", Some(json!({ "script": script, "args": args }))).await
    }

    /// Runs an async script: it calls its last argument with the result.
    #[allow(dead_code)] // used by `make bench`
    pub async fn eval_async(&self, script: &str, args: Value) -> Value {
        let body = json!({ "script": script, "args": args });
        self.session_call(reqwest::Method::POST, "/execute/async", Some(body)).await
    }

    /// Clicks the element as a person would (WebDriver scrolls it into view),
    /// once it is there.
    pub async fn click(&self, css: &str) {
        self.act_on(css, "click", json!({})).await;
    }

    /// Types into the element, key by key, once it is there.
    pub async fn type_into(&self, css: &str, text: &str) {
        self.act_on(css, "value", json!({ "text": text })).await;
    }

    /// The text of the first element matching `css` ("" when there is none).
    pub async fn text(&self, css: &str) -> String {
        let script = "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';";
        self.eval(script, json!([css])).await.as_str().unwrap_or_default().to_string()
    }

    /// Waits until the element matching `css` shows `needle`; returns its text.
    pub async fn wait_for_text(&self, css: &str, needle: &str, timeout: Duration) -> String {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let text = self.text(css).await;
            if text.contains(needle) {
                return text;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("timed out after {timeout:?} waiting for {needle:?} in {css}; it shows: {text:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Saves a PNG of the window under `target/screenshots/{name}.png`.
    pub async fn screenshot(&self, name: &str) {
        let encoded = self.session_call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().expect("screenshot data"))
            .expect("base64 screenshot");
        std::fs::create_dir_all(screenshot_dir()).expect("screenshot dir");
        std::fs::write(screenshot_dir().join(format!("{name}.png")), png).expect("screenshot file");
    }

    pub async fn reload(&self) {
        self.session_call(reqwest::Method::POST, "/refresh", Some(json!({}))).await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // chromedriver and the Chromium it started share the process group.
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-s", "KILL", "--", &group]).status();
        let _ = self.driver.wait();
    }
}
