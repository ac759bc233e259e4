//! The web face in a real browser (Debian's headless Chromium over
//! WebDriver) against the built Worker in local workerd: the dashboard's
//! sign-in, a Telegram conversation with its decisions, live worker status,
//! memory search and delete, the web chat; plus the session rules over HTTP.
//! Every page is saved as a screenshot under target/screenshots/.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::browser::Browser;
use crate::harness::{group_update, wait_for, Scripted, TestEnv, ADMIN_TOKEN, GROUP_CHAT};

const WORKER: &str = "You are a worker";
const INVITE: &str = "test-invitation-1";

fn status(kind: &str, text: &str) -> Scripted {
    Scripted::ToolCalls(vec![("set_status".into(), json!({ "kind": kind, "text": text }))])
}

pub(crate) async fn sign_in(browser: &Browser, env: &TestEnv) {
    browser.goto(&format!("{}/dashboard/", env.worker.base_url)).await;
    browser.wait_for_text("body", "Admin token", Duration::from_secs(10)).await;
    browser.type_into("#token", ADMIN_TOKEN).await;
    browser.click("button[type=submit]").await;
    browser.wait_for_text("nav", "Conversations", Duration::from_secs(10)).await;
}

/// Opens the web chat on a phone-sized page with `invite`; returns once its socket is up.
pub(crate) async fn join_chat(env: &TestEnv, invite: &str) -> Browser {
    let browser = Browser::start(390, 800).await;
    browser.goto(&format!("{}/chat/", env.worker.base_url)).await;
    browser.wait_for_text("body", "Invitation", Duration::from_secs(10)).await;
    browser.type_into("#invite", invite).await;
    browser.click("button[type=submit]").await;
    browser.wait_for_text("#connection", "connected", Duration::from_secs(10)).await;
    browser
}

/// Marks the page, so a later check can tell it was never reloaded.
async fn mark_page(browser: &Browser) {
    browser.eval("window.__notReloaded = true;", json!([])).await;
}

async fn still_marked(browser: &Browser) -> bool {
    browser.eval("return window.__notReloaded === true;", json!([])).await == true
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_signs_in_and_shows_a_telegram_conversation_its_rungs_and_a_worker_live() {
    // Long enough for the gated worker step below to wait on the page.
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "60000")]).await;
    let browser = Browser::start(1280, 900).await;

    // Without a session the page asks for the token, and the API refuses.
    browser.goto(&format!("{}/dashboard/", env.worker.base_url)).await;
    browser.wait_for_text("body", "Admin token", Duration::from_secs(10)).await;
    let refused = browser.eval("return fetch('/api/conversations').then(r => r.status);", json!([])).await;
    assert_eq!(refused, 401, "the admin API without a session");
    browser.screenshot("dashboard-sign-in").await;
    browser.type_into("#token", "not-the-token").await;
    browser.click("button[type=submit]").await;
    browser.wait_for_text("[role=alert]", "not right", Duration::from_secs(10)).await;
    browser.eval("document.querySelector('#token').value = '';", json!([])).await;
    sign_in(&browser, &env).await;

    // A group where the bot watches one message and is asked in the next.
    env.telegram.set_member_count(5);
    env.llm.push(Scripted::ToolCalls(vec![
        ("spawn_worker".into(), json!({ "task": "tally the votes", "interactive": false })),
        ("reply".into(), json!({ "content": "I've set a worker on the tally." })),
    ]));
    // The worker's first step waits until the page has seen it running, then it finishes.
    let first_step = std::sync::Arc::new(tokio::sync::Notify::new());
    env.llm.push_for(WORKER, Scripted::Gated(first_step.clone(), Box::new(status("progress", "halfway"))));
    env.llm.push_for(WORKER, status("outcome", "The tally is 7 to 3."));
    env.llm.reply("The tally is in: 7 to 3.");
    env.telegram_update(&group_update(1, (11, "ada", false), "lunch at noon?", false)).await;
    env.telegram_update(&group_update(2, (12, "bob", false), "please tally the votes", true)).await;

    let key = format!("telegram:{GROUP_CHAT}");
    let list = browser.wait_for_text("body", "Team", Duration::from_secs(20)).await;
    assert!(list.contains(&key), "the conversations list names the conversation: {list}");
    // The list is searchable.
    browser.type_into("#conversation-search", "no-such-conversation").await;
    browser.wait_for_text("body", "No conversations yet", Duration::from_secs(10)).await;
    browser.eval("location.hash = '#/';", json!([])).await;
    browser.screenshot("dashboard-conversations").await;

    browser.goto(&format!("{}/dashboard/#/c/{}", env.worker.base_url, urlencode(&key))).await;
    let timeline = browser.wait_for_text("#timeline", "rung: mention", Duration::from_secs(20)).await;
    assert!(timeline.contains("lunch at noon?") && timeline.contains("observe"), "the watched message: {timeline}");
    assert!(timeline.contains("please tally the votes") && timeline.contains("engage"), "{timeline}");
    browser.wait_for_text("#live-state", "Live", Duration::from_secs(10)).await;
    mark_page(&browser).await;

    // The worker shows up running, then done, while the page stays open.
    let running = browser.wait_for_text("#workers", "tally the votes", Duration::from_secs(20)).await;
    assert!(running.contains("running"), "first seen running: {running}");
    let waiting_on = browser.wait_for_text("#processes", "tally the votes", Duration::from_secs(10)).await;
    assert!(waiting_on.contains("Worker"), "the channel waits on it: {waiting_on}");
    first_step.notify_one();
    let done = browser.wait_for_text("#workers", "The tally is 7 to 3.", Duration::from_secs(30)).await;
    assert!(done.contains("done"), "{done}");
    browser.wait_for_text("main", "No branch or worker is running", Duration::from_secs(20)).await;
    browser.wait_for_text("#timeline", "The tally is in", Duration::from_secs(20)).await;
    assert!(still_marked(&browser).await, "the page updated without a reload");
    browser.screenshot("dashboard-conversation").await;

    for (page, name, needle) in
        [("#/tasks", "dashboard-tasks", "Schedules"), ("#/settings", "dashboard-settings", "TELEGRAM_BOT_TOKEN")]
    {
        browser.goto(&format!("{}/dashboard/{page}", env.worker.base_url)).await;
        browser.wait_for_text("main", needle, Duration::from_secs(10)).await;
        browser.screenshot(name).await;
    }
    let settings = browser.text("main").await;
    assert!(settings.contains("present"), "bindings are listed: {settings}");
    assert!(!settings.contains(crate::harness::TELEGRAM_TOKEN), "no secret on the settings page");

    // Signing out ends the session.
    browser.click("nav button").await;
    browser.wait_for_text("body", "Admin token", Duration::from_secs(10)).await;
    let after = browser.eval("return fetch('/api/conversations').then(r => r.status);", json!([])).await;
    assert_eq!(after, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_found_on_the_memory_page_and_deleted_there_is_gone_from_the_api() {
    let env = TestEnv::start().await;
    let imported = json!([
        { "content": "The office plants are watered on Thursdays", "memory_type": "fact", "importance": 0.7 },
        { "content": "Bob prefers tea over coffee", "memory_type": "preference", "importance": 0.6 },
    ]);
    let (status, _) = env.admin_send(reqwest::Method::POST, "/api/memories", Some(imported)).await;
    assert_eq!(status, 200);
    let browser = Browser::start(360, 780).await;
    sign_in(&browser, &env).await;

    browser.goto(&format!("{}/dashboard/#/memory", env.worker.base_url)).await;
    browser.wait_for_text("main", "Search memories", Duration::from_secs(10)).await;
    browser.type_into("#memory-query", "plants watered").await;
    browser.click("form[role=search] button[type=submit]").await;
    let found = browser.wait_for_text("#memories", "office plants", Duration::from_secs(10)).await;
    assert!(found.contains("fact"), "{found}");
    assert_eq!(browser.eval("return innerWidth;", json!([])).await, 360, "a phone's viewport");
    let overflow = browser.eval("return document.documentElement.scrollWidth;", json!([])).await;
    if overflow.as_u64().unwrap() > 360 {
        let wide = "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 361).map(e => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8).join(' ');";
        panic!("wider than 360 px: {overflow}: {}", browser.eval(wide, json!([])).await);
    }
    assert!(overflow.as_u64().unwrap() <= 360, "the page fits 360 px: {overflow}");
    browser.screenshot("dashboard-memory-360px").await;

    // The row found, by its text: a search may list the other memory too, in either order.
    let id = browser
        .eval(
            "return [...document.querySelectorAll('#memories tr[data-memory]')].find(row => row.textContent.includes('office plants')).dataset.memory;",
            json!([]),
        )
        .await;
    let id = id.as_str().expect("a memory row").to_string();
    browser.click(&format!("button[aria-label='Delete memory {id}']")).await;
    browser.wait_for_text("#memory-notice", "Deleted memory", Duration::from_secs(10)).await;
    wait_for("the row to go", Duration::from_secs(10), || async {
        (!browser.text("#memories").await.contains("office plants")).then_some(())
    })
    .await;
    let left = env.admin("/api/memories?query=plants%20watered&mode=hybrid").await;
    assert!(left.as_array().unwrap().iter().all(|memory| memory["id"] != id.as_str()), "gone from the API: {left}");
    let everything = env.admin("/api/memories?mode=recent&limit=50").await;
    assert_eq!(everything.as_array().unwrap().len(), 1, "the other memory stays: {everything}");

    // An import is shared; the page takes it back to operators only, and shares it again.
    let other = everything[0]["id"].as_str().unwrap().to_string();
    assert_eq!(everything[0]["scope"], "shared");
    let recent = "const mode = document.querySelector('#memory-mode'); mode.value = 'recent'; \
                  mode.dispatchEvent(new Event('change', { bubbles: true })); return true;";
    browser.eval(recent, json!([])).await;
    browser.click("form[role=search] button[type=submit]").await;
    browser.wait_for_text("#memories", "Bob prefers tea", Duration::from_secs(10)).await;
    browser.click(&format!("button[aria-label='Unshare memory {other}']")).await;
    browser.wait_for_text("#memory-notice", "private to operators again", Duration::from_secs(10)).await;
    assert_eq!(env.admin("/api/memories?mode=recent").await[0]["scope"], "operators");
    browser.wait_for_text("#memories", "operators only", Duration::from_secs(10)).await;
    browser.click(&format!("button[aria-label='Share memory {other}']")).await;
    browser.wait_for_text("#memory-notice", "Shared memory", Duration::from_secs(10)).await;
    assert_eq!(env.admin("/api/memories?mode=recent").await[0]["scope"], "shared");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_people_page_lists_a_person_edits_a_note_links_an_id_and_fits_360_px() {
    let env = TestEnv::start().await;
    env.llm.reply("Hello Ada.");
    env.telegram_update(&crate::harness::dm_update(1, 91, "hi")).await;
    env.wait_for_sent(1).await;
    // The person's record comes with the turn's commit, just after the reply.
    let id = crate::harness::wait_for("Ada's record", Duration::from_secs(20), || async {
        env.admin("/api/people").await[0]["id"].as_str().map(str::to_string)
    })
    .await;
    let browser = Browser::start(360, 780).await;
    sign_in(&browser, &env).await;

    browser.goto(&format!("{}/dashboard/#/people", env.worker.base_url)).await;
    let listed = browser.wait_for_text("#people", "telegram:91", Duration::from_secs(10)).await;
    assert!(listed.contains("Ada"), "{listed}");
    browser.type_into(&format!("#notes-{id}"), "prefers tea over coffee").await;
    browser.type_into(&format!("#zone-{id}"), "Europe/Berlin").await;
    browser.type_into(&format!("#role-{id}"), "Head of Sales").await;
    browser.type_into(&format!("#bio-{id}"), "Runs the Berlin office").await;
    browser.click("button[aria-label='Save the profile of Ada']").await;
    browser.wait_for_text("#people-notice", "Saved the profile of Ada", Duration::from_secs(10)).await;
    let person = env.admin(&format!("/api/people/{id}")).await;
    assert_eq!(person["notes"][0]["text"], "prefers tea over coffee", "{person}");
    assert_eq!(
        (person["role"].as_str(), person["bio"].as_str()),
        (Some("Head of Sales"), Some("Runs the Berlin office"))
    );
    assert_eq!(
        (person["notes"][0]["by"].as_str(), person["time_zone"].as_str()),
        (Some("operator"), Some("Europe/Berlin"))
    );

    browser.type_into(&format!("#link-{id}"), "slack:U7").await;
    browser.click("button[aria-label='Link the id to Ada']").await;
    browser.wait_for_text("#people-notice", "Linked slack:U7 to Ada", Duration::from_secs(10)).await;
    browser.wait_for_text("#people", "slack:U7", Duration::from_secs(10)).await;
    let person = env.admin(&format!("/api/people/{id}")).await;
    let keys: Vec<&str> = person["platform_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|known| known["platform_key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["slack:U7", "telegram:91"]);
    // A wrong time zone is refused where it was typed, and nothing changes.
    browser.type_into(&format!("#zone-{id}"), "/Nowhere").await;
    browser.click("button[aria-label='Save the profile of Ada']").await;
    browser.wait_for_text("#people [role=alert]", "unknown time zone", Duration::from_secs(10)).await;
    assert_eq!(env.admin(&format!("/api/people/{id}")).await["time_zone"], "Europe/Berlin");

    assert_eq!(browser.eval("return innerWidth;", json!([])).await, 360, "a phone's viewport");
    let overflow = browser.eval("return document.documentElement.scrollWidth;", json!([])).await;
    if overflow.as_u64().unwrap() > 360 {
        let wide = "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 361).map(e => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8).join(' ');";
        panic!("wider than 360 px: {overflow}: {}", browser.eval(wide, json!([])).await);
    }
    // Every field has a label a screen reader reads.
    let unlabelled = "return [...document.querySelectorAll('main input, main textarea')].filter(e => !e.labels || e.labels.length === 0).map(e => e.id);";
    assert_eq!(browser.eval(unlabelled, json!([])).await, json!([]));
    browser.screenshot("dashboard-people-360px").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_chat_answers_without_a_reload_and_keeps_the_conversation_across_one() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE)]).await;
    env.llm.reply("Hello from the model, over the socket.");
    let browser = join_chat(&env, INVITE).await;
    mark_page(&browser).await;

    browser.type_into("#message", "hi there, who are you?").await;
    browser.click("#send").await;
    let shown = browser.wait_for_text("#messages", "Hello from the model", Duration::from_secs(20)).await;
    assert!(shown.contains("hi there, who are you?"), "{shown}");
    assert!(still_marked(&browser).await, "the reply came without a reload");
    browser.screenshot("web-chat").await;

    // The model saw the message as a web-chat turn.
    let request = env.llm.requests().pop().expect("a model request");
    assert!(crate::harness::all_message_text(&request).contains("hi there, who are you?"));

    browser.reload().await;
    browser.wait_for_text("#messages", "Hello from the model", Duration::from_secs(10)).await;
    let count = |needle: &str| {
        format!(
            "return [...document.querySelectorAll('#messages li')].filter(li => li.innerText.includes('{needle}')).length;"
        )
    };
    assert_eq!(browser.eval(&count("hi there"), json!([])).await, 1, "the question once");
    assert_eq!(browser.eval(&count("Hello from the model"), json!([])).await, 1, "the answer once");
    assert!(!still_marked(&browser).await, "the page did reload");

    // The dashboard lists the web conversation with the others.
    let web = wait_for("the web chat in the index", Duration::from_secs(10), || async {
        let conversations = env.admin("/api/conversations").await;
        conversations.as_array().unwrap().iter().find(|row| row["platform"] == "web").cloned()
    })
    .await;
    assert_eq!(web["engaged_count"], 1, "{web}");
}

/// Makes the page's next sockets fail for `ms` (as a dropped network would)
/// and closes the one it has.
const DROP_NETWORK: &str = "const [ms] = arguments;
    const Real = window.__RealWebSocket || WebSocket;
    window.__RealWebSocket = Real;
    const until = Date.now() + ms;
    function Flaky(url) { return new Real(Date.now() < until ? 'ws://127.0.0.1:9/' : url); }
    Object.assign(Flaky, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
    window.WebSocket = Flaky;
    window.__socket.close();";

/// Remembers the page's socket as it sends (to drop it later).
const CAPTURE_SOCKET: &str = "const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) { window.__socket = this; return send.call(this, data); };";

#[tokio::test(flavor = "multi_thread")]
async fn the_web_chat_catches_up_after_a_dropped_network_and_sends_what_was_typed_meanwhile() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE), ("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.push(Scripted::SlowReply(Duration::from_secs(2), "An answer that came while you were away.".into()));
    env.llm.reply("Got your second message too.");
    let browser = join_chat(&env, INVITE).await;
    browser.eval(CAPTURE_SOCKET, json!([])).await;
    mark_page(&browser).await;

    browser.type_into("#message", "first question").await;
    browser.click("#send").await;
    wait_for("the question to be taken", Duration::from_secs(10), || async {
        let pending = browser.eval("return document.querySelectorAll('#messages li.pending').length;", json!([]));
        (pending.await == 0).then_some(())
    })
    .await;
    // The network drops for 5 s: the answer is sent meanwhile, and a second
    // message is typed while the page is offline.
    browser.eval(DROP_NETWORK, json!([5000])).await;
    browser.wait_for_text("#connection", "reconnecting", Duration::from_secs(5)).await;
    browser.type_into("#message", "second question, typed offline").await;
    browser.click("#send").await;
    let pushed = wait_for("the answer to be sent while the page is away", Duration::from_secs(10), || async {
        let calls = env.llm.requests().len();
        (calls >= 1).then_some(calls)
    });
    pushed.await;

    let shown = browser.wait_for_text("#messages", "Got your second message too.", Duration::from_secs(30)).await;
    assert!(shown.contains("An answer that came while you were away."), "{shown}");
    for needle in ["first question", "second question", "An answer that came", "Got your second"] {
        let script = "const [needle] = arguments;
            return [...document.querySelectorAll('#messages li')].filter(li => li.innerText.includes(needle)).length;";
        assert_eq!(browser.eval(script, json!([needle])).await, 1, "{needle} shows once");
    }
    assert!(still_marked(&browser).await, "caught up without a reload");
    let key =
        browser.eval("return fetch('/api/chat/session').then(r => r.json()).then(s => s.conversation);", json!([]));
    let key = key.await.as_str().unwrap().to_string();
    let events = env.admin(&format!("/api/channels/{}/events", urlencode(&key))).await;
    assert_eq!(events.as_array().unwrap().len(), 2, "each message taken once: {events}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_signed_slow_to_guess_same_site_only_and_end_on_sign_out() {
    let env = TestEnv::start().await;
    let base = &env.worker.base_url;
    let client = reqwest::Client::new();

    let started = Instant::now();
    let wrong = client.post(format!("{base}/api/session")).json(&json!({ "token": "guess" })).send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(started.elapsed() >= Duration::from_millis(900), "a wrong token is answered slowly");
    let body: Value = wrong.json().await.unwrap();
    assert_eq!(body["error"], "wrong token", "no hint: {body}");

    let right = client.post(format!("{base}/api/session")).json(&json!({ "token": ADMIN_TOKEN })).send().await.unwrap();
    assert_eq!(right.status(), 200);
    let set_cookie = right.headers()["set-cookie"].to_str().unwrap().to_string();
    for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Max-Age=43200"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    let cookie = set_cookie.split(';').next().unwrap().to_string();

    let with_cookie = |method: reqwest::Method, path: &str| {
        client.request(method, format!("{base}{path}")).header("cookie", cookie.clone())
    };
    let listed = with_cookie(reqwest::Method::GET, "/api/conversations").send().await.unwrap();
    assert_eq!(listed.status(), 200, "the cookie opens the admin API");

    // A cookie-carrying change from another site is refused, and changes nothing.
    let import = json!([{ "content": "planted by another site", "memory_type": "fact" }]);
    let cross = with_cookie(reqwest::Method::POST, "/api/memories")
        .header("origin", "https://evil.example")
        .json(&import)
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    let no_origin = with_cookie(reqwest::Method::POST, "/api/memories").json(&import).send().await.unwrap();
    assert_eq!(no_origin.status(), 403, "a change without an Origin is refused too");
    assert_eq!(env.admin("/api/memories?mode=recent").await.as_array().unwrap().len(), 0);
    let same = with_cookie(reqwest::Method::POST, "/api/memories").header("origin", base).json(&import).send();
    assert_eq!(same.await.unwrap().status(), 200, "the same site may");

    // A socket from another site is refused before it reaches the conversation.
    let socket = with_cookie(reqwest::Method::GET, "/api/channels/telegram%3A1/live")
        .header("origin", "https://evil.example")
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .unwrap();
    assert_eq!(socket.status(), 403);

    // A forged or edited cookie is nobody's.
    let forged = cookie.replace("operator", "operatos");
    let refused = client.get(format!("{base}/api/conversations")).header("cookie", forged).send().await.unwrap();
    assert_eq!(refused.status(), 401);

    // Sign-out clears the cookie in the browser.
    let out = with_cookie(reqwest::Method::DELETE, "/api/session").header("origin", base).send().await.unwrap();
    assert_eq!(out.status(), 200);
    let cleared =
        out.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_string()).collect::<Vec<_>>();
    assert!(
        cleared.iter().any(|value| value.starts_with("__Host-edgebot_admin=;") && value.contains("Max-Age=0")),
        "{cleared:?}"
    );

    // The web chat needs the invitation (none is configured here) or an operator.
    let chat = client.post(format!("{base}/api/chat/session")).json(&json!({ "token": "guess" })).send().await.unwrap();
    assert_eq!(chat.status(), 401);
    let no_socket = client.get(format!("{base}/api/chat/socket")).header("upgrade", "websocket").send().await.unwrap();
    assert_eq!(no_socket.status(), 401);
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// Fails with the widest elements named when the page is wider than `width`.
pub async fn assert_fits(browser: &Browser, width: u64) {
    let overflow = browser.eval("return document.documentElement.scrollWidth;", json!([])).await;
    let viewport = browser.eval("return innerWidth;", json!([])).await;
    if overflow.as_u64().unwrap() > width || viewport != width {
        let wide = format!(
            "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > {}).map(e => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8).join(' ');",
            width + 1
        );
        panic!("wider than {width} px: {overflow}: {}", browser.eval(&wide, json!([])).await);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_identity_page_edits_soul_previews_it_lists_versions_and_restores_one_at_360_px() {
    let env = TestEnv::start().await;
    let browser = Browser::start(360, 780).await;
    sign_in(&browser, &env).await;

    browser.goto(&format!("{}/dashboard/#/identity", env.worker.base_url)).await;
    browser.wait_for_text("main", "SOUL.md", Duration::from_secs(10)).await;
    browser.wait_for_text("#versions-soul", "shipped default", Duration::from_secs(10)).await;
    let editor = "#identity-soul";
    let label =
        browser.eval("return document.querySelector(\"label[for='identity-soul']\").innerText;", json!([])).await;
    assert!(label.as_str().unwrap().contains("SOUL.md"), "the editor is labelled: {label}");

    // Edit: the preview renders the Markdown, and shows raw HTML as text, never as markup.
    browser.eval(&format!("document.querySelector('{editor}').value = '';"), json!([])).await;
    browser.type_into(editor, "# Lighthouse keeper\n\nSpeak **calmly**. <img src=x onerror=alert(1)>").await;
    let preview = browser.wait_for_text("#preview-soul", "Lighthouse keeper", Duration::from_secs(10)).await;
    assert!(preview.contains("Speak calmly."), "{preview}");
    let markup = browser.eval("return document.querySelector('#preview-soul').innerHTML;", json!([])).await;
    let markup = markup.as_str().unwrap();
    assert!(markup.contains("<h1>Lighthouse keeper</h1>") && markup.contains("<strong>calmly</strong>"), "{markup}");
    assert!(!markup.contains("<img"), "the HTML in the source stays text: {markup}");
    assert!(markup.contains("&lt;img"), "{markup}");
    browser.screenshot("dashboard-identity-preview-360px").await;

    browser.click("form[aria-label='Edit SOUL.md'] button[type=submit]").await;
    browser.wait_for_text("#notice-soul", "Saved SOUL.md as version 1", Duration::from_secs(10)).await;
    let versions = browser.wait_for_text("#versions-soul", "operator (dashboard)", Duration::from_secs(10)).await;
    assert!(versions.contains("Lighthouse keeper"), "{versions}");
    let soul = &env.admin("/api/identity").await["documents"][0];
    assert_eq!((soul["version"].as_i64(), soul["author"].as_str()), (Some(1), Some("operator (dashboard)")));
    assert!(soul["text"].as_str().unwrap().starts_with("# Lighthouse keeper"));
    assert_fits(&browser, 360).await;
    browser.screenshot("dashboard-identity-360px").await;

    // Restore the shipped default (version 0): it is version 2, and the editor shows it.
    browser.click("button[aria-label='Restore SOUL.md version 0']").await;
    browser.wait_for_text("#notice-soul", "Restored version 0 of SOUL.md as version 2", Duration::from_secs(10)).await;
    browser.wait_for_text("#versions-soul", "(from 0)", Duration::from_secs(10)).await;
    let restored = env.admin("/api/identity").await["documents"][0].clone();
    assert_eq!((restored["version"].as_i64(), restored["restored_from"].as_i64()), (Some(2), Some(0)));
    assert_eq!(restored["text"], restored["default_text"]);
    let shown = browser.eval(&format!("return document.querySelector('{editor}').value;"), json!([])).await;
    assert_eq!(shown, restored["text"], "the editor holds the restored text");
    assert_fits(&browser, 360).await;

    // A conversation's override, on its page.
    browser.goto(&format!("{}/dashboard/#/c/telegram%3A71", env.worker.base_url)).await;
    browser.wait_for_text("main", "Identity override", Duration::from_secs(10)).await;
    browser.type_into("#identity-override", "Be formal in this chat.").await;
    browser.click("form[aria-label='Identity override for this conversation'] button[type=submit]").await;
    browser.wait_for_text("#override-notice", "Saved", Duration::from_secs(10)).await;
    let set = env.admin("/api/channels/telegram:71/identity").await;
    assert_eq!(
        (set["text"].as_str(), set["author"].as_str()),
        (Some("Be formal in this chat."), Some("operator (dashboard)"))
    );
    assert_fits(&browser, 360).await;
    browser.screenshot("dashboard-conversation-override-360px").await;
}
