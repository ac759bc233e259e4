//! The web chat's files (issue 25): a signed-in guest uploads a file, names
//! it in the next message (a message may be files alone), and the turn's
//! model sees it like any platform's file; an upload of another conversation
//! names nothing; a signed link downloads a kept file until it expires.

use std::time::Duration;

use edgebot::config::Config;
use edgebot::files::download_link::{download_link, LinkKey};
use edgebot::files::rules::{file_id, Kind, StoredFile, FILE_LIMIT_BYTES};
use serde_json::{json, Value};

use crate::harness::browser::Browser;
use crate::harness::chat_socket::{guest_cookie, say_with_files};
use crate::harness::{all_message_text, wait_for, TestEnv, ADMIN_TOKEN};
use crate::web::assert_fits;

const INVITE: &str = "test-invitation-1";
const CSV: &str = "region,sales\nnorth,120\nsouth,80\neast,45\n";

/// Uploads `body` as `name` (with `cookie`, from the page's own origin).
async fn upload(env: &TestEnv, cookie: Option<&str>, name: &str, body: Vec<u8>) -> (u16, Value) {
    let url = format!("{}/api/chat/files", env.worker.base_url);
    let mut request = env.client.post(url).header("origin", &env.worker.base_url).body(body);
    request = request.header("x-file-name", name);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

async fn conversation_of(env: &TestEnv, cookie: &str) -> String {
    let url = format!("{}/api/chat/session", env.worker.base_url);
    let answer: Value = env.client.get(url).header("cookie", cookie).send().await.unwrap().json().await.unwrap();
    answer["conversation"].as_str().unwrap().to_string()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// The Worker's own configuration, as far as link keys go.
fn worker_config() -> Config {
    Config::from_lookup(|name| match name {
        "ADMIN_TOKEN" => Some(ADMIN_TOKEN.to_string()),
        "WEB_CHAT_TOKEN" => Some(INVITE.to_string()),
        _ => None,
    })
}

fn stored(id: &str) -> StoredFile {
    StoredFile {
        id: id.into(),
        name: "sales.csv".into(),
        kind: Kind::Text,
        content_type: "text/csv".into(),
        size: CSV.len() as u64,
        text: None,
        created_at: 0,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_uploads_a_csv_sends_it_alone_and_downloads_it_by_a_signed_link() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE)]).await;
    let (status, answer) = upload(&env, None, "sales.csv", CSV.into()).await;
    assert_eq!((status, answer["error"].as_str().is_some()), (401, true), "no session: {answer}");

    let cookie = guest_cookie(&env, INVITE).await;
    let conversation = conversation_of(&env, &cookie).await;
    let (status, cross_site) = {
        let url = format!("{}/api/chat/files", env.worker.base_url);
        let request = env.client.post(url).header("origin", "https://evil.example").header("cookie", &cookie);
        let response = request.header("x-file-name", "a.csv").body(CSV).send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    };
    assert_eq!(status, 403, "another site's page cannot upload with the cookie: {cross_site}");
    let (status, answer) = upload(&env, Some(&cookie), "", CSV.into()).await;
    assert_eq!(status, 400, "no name: {answer}");

    let (status, sales) = upload(&env, Some(&cookie), "sales.csv", CSV.into()).await;
    assert_eq!(status, 200, "{sales}");
    let token = sales["upload"].as_str().unwrap().to_string();
    assert!(edgebot::files::rules::is_upload_token(&token), "{token}");
    let id = file_id(&conversation, &token);
    assert_eq!(sales["id"], id.as_str());
    assert_eq!((sales["name"].as_str(), sales["kind"].as_str()), (Some("sales.csv"), Some("text")));
    assert_eq!(sales["size"], CSV.len());

    let (status, answer) = upload(&env, Some(&cookie), "big.bin", vec![b'a'; FILE_LIMIT_BYTES as usize + 1]).await;
    assert_eq!(status, 413, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("20 MB"), "{answer}");

    // Another guest's upload: its token names nothing in this conversation.
    let other = guest_cookie(&env, INVITE).await;
    let (status, plans) = upload(&env, Some(&other), "plans.csv", b"secret,plans\n".to_vec()).await;
    assert_eq!(status, 200, "{plans}");
    let foreign = plans["upload"].as_str().unwrap().to_string();

    env.llm.reply("Got both.");
    let seen = say_with_files(&env, &cookie, "", &[token.clone(), foreign.clone()]).await;
    let shown = seen.iter().map(|(_, line)| line).find(|line| line["role"] == "user").cloned().unwrap();
    assert_eq!(shown["text"], "[2 files]", "a message of files alone");
    let prompt = wait_for("the chat's turn", Duration::from_secs(20), || async {
        env.llm.requests().iter().map(all_message_text).find(|text| text.contains("sales.csv"))
    })
    .await;
    let line = format!("sales.csv (text/csv, {} B, id {id}): a branch or worker can read it", CSV.len());
    assert!(prompt.contains(&line), "{prompt}");
    assert!(prompt.contains("file (not kept: it could not be downloaded)"), "{prompt}");
    assert!(!prompt.contains("plans") && !prompt.contains("secret"), "{prompt}");
    assert!(!prompt.contains(&plans["id"].as_str().unwrap().to_string()));

    // A signed link downloads the file's bytes, as an attachment.
    let config = worker_config();
    let link = download_link(&config, &conversation, &stored(&id), now_ms()).unwrap();
    let response = env.client.get(format!("{}{link}", env.worker.base_url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| response.headers().get(name).map(|value| value.to_str().unwrap().to_string());
    assert_eq!(header("content-type").as_deref(), Some("text/csv"));
    assert_eq!(header("content-disposition").as_deref(), Some("attachment; filename=\"sales.csv\""));
    assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    assert!(header("content-security-policy").is_some_and(|policy| policy.contains("default-src 'none'")));
    assert_eq!(response.bytes().await.unwrap(), CSV.as_bytes());

    // Tampered, expired, another conversation's, or a file that is not there.
    let get = |path: String| {
        let url = format!("{}{path}", env.worker.base_url);
        let client = env.client.clone();
        async move {
            let response = client.get(url).send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap_or_default())
        }
    };
    let signature = link.rsplit_once("sig=").unwrap().1;
    let flipped = if signature.starts_with('0') { "1" } else { "0" };
    let tampered = format!("{}sig={flipped}{}", link.rsplit_once("sig=").unwrap().0, &signature[1..]);
    let (status, answer) = get(tampered).await;
    assert_eq!(status, 403, "{answer}");
    assert!(answer["error"].as_str().is_some());
    let expires = now_ms() - 1;
    let signed = LinkKey::of(&config).unwrap().sign(&conversation, &id, expires).unwrap();
    let encoded = conversation.replace(':', "%3A");
    assert_eq!(get(format!("/api/files/{id}?c={encoded}&exp={expires}&sig={signed}")).await.0, 403, "expired");
    assert_eq!(get(format!("/api/files/{id}?c={encoded}")).await.0, 403, "unsigned");
    let elsewhere = conversation_of(&env, &other).await;
    let foreign_link = download_link(&config, &elsewhere, &stored(&id), now_ms()).unwrap();
    assert_eq!(get(foreign_link).await.0, 404, "signed, but not that conversation's file");
    let missing = download_link(&config, &conversation, &stored("f0000000000000000"), now_ms()).unwrap();
    let (status, answer) = get(missing).await;
    assert_eq!((status, answer["error"].as_str()), (404, Some("not found")));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chat_page_attaches_a_file_and_sends_it_with_the_message() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE)]).await;
    let browser = Browser::start(360, 740).await;
    browser.goto(&format!("{}/chat/", env.worker.base_url)).await;
    browser.wait_for_text("body", "Invitation", Duration::from_secs(10)).await;
    browser.type_into("#invite", INVITE).await;
    browser.click("button[type=submit]").await;
    browser.wait_for_text("#connection", "connected", Duration::from_secs(10)).await;

    // The file input takes a path as a person's pick would.
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("sales.csv");
    std::fs::write(&path, CSV).unwrap();
    browser.type_into("#file", path.to_str().unwrap()).await;
    browser.wait_for_text("#attached", "sales.csv", Duration::from_secs(10)).await;
    assert_fits(&browser, 360).await;
    browser.screenshot("chat-file-attached").await;

    env.llm.reply("North sold most. Here it is: /api/files/f1234?c=web%3Ax&exp=1&sig=ab");
    browser.type_into("#message", "which region sold most?").await;
    browser.click("#send").await;
    browser.wait_for_text("#messages", "North sold most", Duration::from_secs(20)).await;
    let prompt = all_message_text(&env.llm.requests()[0]);
    assert!(prompt.contains("which region sold most?") && prompt.contains("sales.csv (text/csv"), "{prompt}");
    assert_eq!(browser.text("#attached").await, "", "sent with the message, no longer pending");
    let link = browser
        .eval("const a = document.querySelector('#messages a'); return a && a.getAttribute('href');", json!([]))
        .await;
    assert_eq!(link, "/api/files/f1234?c=web%3Ax&exp=1&sig=ab", "the file link is a link");
    browser.screenshot("chat-file-sent").await;

    // Too large: the page says why.
    let big = dir.path().join("big.bin");
    std::fs::write(&big, vec![b'a'; FILE_LIMIT_BYTES as usize + 1]).unwrap();
    browser.type_into("#file", big.to_str().unwrap()).await;
    browser.wait_for_text("#upload-error", "larger than 20 MB", Duration::from_secs(20)).await;
    // The file input is reached by keyboard (it is only visually hidden behind its label).
    let focused =
        browser.eval("document.querySelector('#file').focus(); return document.activeElement.id;", json!([])).await;
    assert_eq!(focused, "file");
}

/// A worker's `send_file` reaches the web chat as a message with a signed
/// link, and the link downloads the file's bytes.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_a_worker_sends_arrives_as_a_link_that_downloads_it() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE), ("LLM_TIMEOUT_MS", "10000")]).await;
    let cookie = guest_cookie(&env, INVITE).await;
    let summary = "region,total\nnorth,120\n";
    env.llm.push(crate::workers::spawn("write the summary as a CSV", false, "On it."));
    env.llm.push_for(
        crate::workers::WORKER,
        crate::harness::Scripted::ToolCalls(vec![(
            "send_file".into(),
            json!({ "name": "summary.csv", "text": summary }),
        )]),
    );
    env.llm.push_for(crate::workers::WORKER, crate::workers::status("outcome", "Sent."));
    env.llm.answer_always(crate::harness::Scripted::Reply("Here you are.".into()));
    let has_link = |line: &Value| {
        line["type"] == "message" && line["text"].as_str().is_some_and(|text| text.contains("/api/files/"))
    };
    let seen = crate::harness::chat_socket::say_until(&env, &cookie, "send me the summary", &[], Some(has_link)).await;
    let message = seen.iter().map(|(_, line)| line).find(|line| has_link(line)).unwrap();
    let text = message["text"].as_str().unwrap();
    assert!(text.starts_with("summary.csv\n/api/files/f"), "{text}");
    let link = text.lines().nth(1).unwrap();
    let response = env.client.get(format!("{}{link}", env.worker.base_url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-disposition"].to_str().unwrap().contains("summary.csv"));
    assert_eq!(response.bytes().await.unwrap(), summary.as_bytes(), "the file's own bytes");
}

/// A message the chat refuses (here: more uploads than a message may name)
/// is answered with an error to the page that sent it, not dropped in silence.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_message_is_answered_with_why() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE)]).await;
    let cookie = guest_cookie(&env, INVITE).await;
    let tokens: Vec<String> = (0..5).map(|n| format!("00000000-0000-4000-8000-00000000000{n}")).collect();
    let is_error = |line: &Value| line["type"] == "error";
    let seen = crate::harness::chat_socket::say_until(&env, &cookie, "five files", &tokens, Some(is_error)).await;
    let error = seen.iter().map(|(_, line)| line).find(|line| is_error(line)).unwrap();
    assert!(error["message"].as_str().unwrap().contains("at most 4 uploads"), "{error}");
    assert!(error["id"].as_str().is_some_and(|id| id.starts_with("message-")), "it names the message: {error}");
    assert!(env.llm.requests().is_empty(), "nothing reached a turn");
}
