//! The first ten minutes (issue 32): `make dev` on a fresh clone answers and
//! says where to go; a bot with no usable model says it is not set up (once
//! an hour per conversation, naming the setting to the operator, never the
//! key), and one pointed at an OpenAI-compatible server of your own answers
//! without a key; a streamed reply opens with something worth a
//! notification, and an instant answer is one message with no edit.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::chat_socket::{guest_cookie, say};
use crate::harness::chats::{Chat, DISCORD, SLACK, TELEGRAM};
use crate::harness::fake_llm::Pace;
use crate::harness::{dm_update, wait_for, Scripted, TestEnv};

const INVITE: &str = "first-run-invitation-0123";
/// The opening words of `prompts/not_set_up.md.j2`.
const NOT_SET_UP: &str = "I'm not set up yet";

/// A model with no key at OpenAI's own address: nothing can answer.
const NO_MODEL: [(&str, &str); 3] =
    [("OPENAI_API_KEY", ""), ("OPENAI_BASE_URL", "https://api.openai.com/v1"), ("WEB_CHAT_TOKEN", INVITE)];

fn assistant_text(lines: &[(std::time::Instant, Value)]) -> Option<String> {
    lines
        .iter()
        .find(|(_, line)| line["type"] == "message" && line["role"] == "assistant")
        .and_then(|(_, line)| line["text"].as_str().map(str::to_string))
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_model_the_web_chat_and_a_telegram_dm_are_told_once_and_the_status_names_the_setting() {
    let env = TestEnv::start_with(&NO_MODEL).await;
    let cookie = guest_cookie(&env, INVITE).await;
    let told = assistant_text(&say(&env, &cookie, "hello?").await).expect("a reply in the web chat");
    assert!(told.starts_with(NOT_SET_UP), "{told}");
    assert!(told.contains("OPENAI_API_KEY") && !told.contains("try again in a moment"), "{told}");

    env.telegram_update(&dm_update(1, 61, "hi bot")).await;
    let sent = env.wait_for_sent(1).await;
    assert!(sent[0]["text"].as_str().unwrap().starts_with(NOT_SET_UP), "{}", sent[0]);
    // Within the hour, the same conversation is not told again.
    env.telegram_update(&dm_update(2, 61, "are you there?")).await;
    env.settle().await;
    assert_eq!(env.telegram.calls("/sendMessage").len(), 1, "told once an hour per conversation");
    assert!(env.llm.requests().is_empty(), "known before any call: no model call at all");

    let status = env.admin("/api/status").await;
    assert_eq!(status["setup"]["model"]["ready"], false, "{status}");
    assert_eq!(status["setup"]["model"]["problem"]["setting"], "OPENAI_API_KEY");
    assert!(status["setup"]["model"]["explain"].as_str().unwrap().contains("OPENAI_BASE_URL"), "{status}");
    let health = env.client.get(format!("{}/health", env.worker.base_url)).send().await.unwrap();
    assert_eq!(health.json::<Value>().await.unwrap(), json!({ "ok": true }), "the Worker serves all the same");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_and_an_unreachable_server_are_said_as_not_set_up_and_shown_in_the_status() {
    let env = TestEnv::start().await;
    env.llm.push(Scripted::Status(401));
    env.telegram_update(&dm_update(1, 71, "hello")).await;
    let sent = env.wait_for_sent(1).await;
    let text = sent[0]["text"].as_str().unwrap();
    assert!(text.starts_with(NOT_SET_UP) && text.contains("refuses the key"), "{text}");
    assert!(!text.contains(crate::harness::LLM_KEY), "never the key");
    assert_eq!(env.llm.requests().len(), 1, "a refused key is not retried");
    let status = env.admin("/api/status").await;
    assert_eq!(status["setup"]["model"]["problem"]["kind"], "key_refused", "{status}");

    // A model that answers again clears it.
    env.llm.reply("back");
    env.telegram_update(&dm_update(2, 72, "hello")).await;
    env.wait_for_sent(2).await;
    wait_for("the status cleared", Duration::from_secs(10), || async {
        (env.admin("/api/status").await["setup"]["model"]["ready"] == true).then_some(())
    })
    .await;

    // Nothing listens at the base URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let env = TestEnv::start_with(&[("OPENAI_BASE_URL", &format!("http://127.0.0.1:{closed}/v1"))]).await;
    env.telegram_update(&dm_update(1, 73, "hello")).await;
    let sent = env.wait_for_sent(1).await;
    let text = sent[0]["text"].as_str().unwrap();
    assert!(text.starts_with(NOT_SET_UP) && text.contains("OPENAI_BASE_URL"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_of_your_own_at_a_loopback_base_answers_with_no_key() {
    let env = TestEnv::start_with(&[("OPENAI_API_KEY", "")]).await;
    env.llm.reply("Hello from a local model.");
    env.telegram_update(&dm_update(1, 81, "hi")).await;
    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["text"], "Hello from a local model.");
    let request = env.llm.requests().pop().expect("the model was asked");
    assert!(request["model"].is_string());
    assert_eq!(env.admin("/api/status").await["setup"]["model"]["ready"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_shows_a_banner_naming_the_missing_setting() {
    let env = TestEnv::start_with(&NO_MODEL).await;
    let browser = crate::harness::browser::Browser::start(1000, 800).await;
    crate::web::sign_in(&browser, &env).await;
    let banner = browser.wait_for_text("#setup-banner", "OPENAI_API_KEY", Duration::from_secs(30)).await;
    assert!(banner.contains("Not set up yet"), "{banner}");
    browser.screenshot("dashboard-not-set-up").await;

    let env = TestEnv::start().await;
    let browser = crate::harness::browser::Browser::start(1000, 800).await;
    crate::web::sign_in(&browser, &env).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(browser.text("#setup-banner").await, "", "no banner when a model can answer");
}

/// An instant model (its whole answer in one chunk): one message, posted once, never edited.
async fn an_instant_answer_is_one_message_with_no_edit(chat: Chat) {
    let env = chat.start(&[]).await;
    env.llm.set_pace(Pace { first: Duration::ZERO, every: Duration::ZERO, chars: 10_000 });
    let answer = "Volcanoes form where magma rises through the crust. Each eruption adds a layer.";
    env.llm.reply(answer);
    chat.ask(&env, 1, "how do volcanoes form?").await;
    chat.shows(&env, &chat.expected(answer)).await;
    let calls = chat.text_calls(&env);
    assert_eq!(calls.len(), 1, "one call, the whole answer: {calls:?}");
}

/// A slow model: the first post is a sentence, not its first words.
async fn a_slow_answer_opens_with_a_sentence(chat: Chat) {
    let env = chat.start(&[]).await;
    env.llm.set_pace(Pace { first: Duration::from_millis(300), every: Duration::from_millis(60), chars: 4 });
    let answer = "Volcanoes form where magma rises through the crust. Each eruption adds a new layer of rock, \
                  and over thousands of years the layers build a mountain.";
    env.llm.reply(answer);
    chat.ask(&env, 2, "how do volcanoes form?").await;
    let first = chat.first_post(&env).await;
    let opened = first.body["text"].as_str().or(first.body["content"].as_str()).unwrap_or_default().to_string();
    assert!(opened.starts_with("Volcanoes form where magma rises through the crust."), "a sentence opens: {opened:?}");
    chat.shows(&env, &chat.expected(answer)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_replies_open_with_a_sentence_and_an_instant_answer_is_never_edited() {
    for chat in [TELEGRAM, SLACK, DISCORD] {
        an_instant_answer_is_one_message_with_no_edit(chat).await;
        a_slow_answer_opens_with_a_sentence(chat).await;
    }
}

/// The README's run command on a fresh copy of the repository with no
/// `.dev.vars`: it writes one with new tokens, serves, and prints where to go
/// and what is missing; the printed token signs in to the dashboard and the
/// printed link's invitation opens a web chat.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "loads the whole machine (it builds the Worker): `make test` runs it alone"]
async fn make_dev_on_a_fresh_clone_serves_and_prints_a_working_sign_in_and_chat_link() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let clone = tempfile::TempDir::new().expect("a clone dir");
    let listed = Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    for file in listed.stdout.split(|byte| *byte == 0).filter(|name| !name.is_empty()) {
        let name = std::str::from_utf8(file).unwrap();
        let (from, to) = (root.join(name), clone.path().join(name));
        if from.is_file() {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    }
    assert!(!clone.path().join(".dev.vars").exists(), "a fresh clone has no .dev.vars");
    // What this machine already installed (npm packages, compiled crates) is
    // reused; the clone's own build still runs.
    std::os::unix::fs::symlink(root.join("node_modules"), clone.path().join("node_modules")).unwrap();
    // As old as the original, so setup finds the npm packages current.
    let lock = |at: &std::path::Path| at.join("package-lock.json");
    Command::new("touch").arg("-r").arg(lock(root)).arg(lock(clone.path())).status().expect("touch");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut dev = Command::new("make")
        .args(["dev", &format!("PORT={port}")])
        .current_dir(clone.path())
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env("CI", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("make dev");
    let stdout = dev.stdout.take().unwrap();
    let _stop = scopeguard(move || {
        let _ = Command::new("kill").args(["-s", "KILL", "--", &format!("-{}", dev.id())]).status();
        let _ = dev.wait();
    });
    let (lines, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut printed = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(900);
    while !printed.iter().any(|line: &String| line.contains("web chat:")) {
        assert!(std::time::Instant::now() < deadline, "make dev printed no web chat link: {printed:#?}");
        if let Ok(line) = receive.recv_timeout(Duration::from_secs(1)) {
            printed.push(line);
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    printed.extend(receive.try_iter());
    let text = printed.join("\n");
    let vars = std::fs::read_to_string(clone.path().join(".dev.vars")).expect("make dev wrote .dev.vars");
    let value = |name: &str| {
        vars.lines().find_map(|line| line.strip_prefix(&format!("{name}="))).map(str::to_string).expect(name)
    };
    let (admin, invite) = (value("ADMIN_TOKEN"), value("WEB_CHAT_TOKEN"));
    assert!(admin.len() >= 16 && invite.len() >= 16 && admin != invite, "fresh tokens the Worker accepts");
    assert!(!vars.contains("change-me"), "no placeholder");
    let base = format!("http://localhost:{port}");
    assert!(text.contains(&format!("dashboard: {base}/dashboard/")) && text.contains(&admin), "{text}");
    let link = format!("{base}/chat/#invite={invite}");
    assert!(text.contains(&link), "the web chat link with its invitation: {text}");
    assert!(text.contains("missing:") && text.contains("OPENAI_API_KEY"), "what is missing is named: {text}");
    assert!(text.contains("not connected: Telegram"), "{text}");

    let client = reqwest::Client::new();
    let health = client.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.json::<Value>().await.unwrap(), json!({ "ok": true }));
    let signed_in = client.post(format!("{base}/api/session")).json(&json!({ "token": admin })).send().await.unwrap();
    assert_eq!(signed_in.status(), 200, "the printed token signs in to the dashboard");
    let invitation = link.rsplit_once("#invite=").unwrap().1;
    let chat = client.post(format!("{base}/api/chat/session")).json(&json!({ "token": invitation })).send().await;
    assert_eq!(chat.unwrap().status(), 200, "the printed link's invitation opens a web chat");
}

/// Runs `stop` when dropped (even when the test fails).
fn scopeguard(stop: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(stop) = self.0.take() {
                stop();
            }
        }
    }
    Guard(Some(stop))
}
