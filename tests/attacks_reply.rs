//! What a reply can carry, attacked end to end: the model (scripted) tries to
//! disguise a link, ping everyone, or carry a secret out in pieces, in
//! markup, in another spelling, in a reaction or through the embeddings API;
//! the fake platforms record what arrived. And `http_fetch` to every IPv6
//! form of a private IPv4 address is refused.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{dm_update, slack_callback, wait_for, Scripted, TestEnv};
use crate::workers::{spawn, status, tool_results, worker_requests};

/// The OpenAI key the harness configures (a secret the Worker holds).
const SECRET: &str = "test-llm-key";

/// What a person would see of a Telegram HTML text: tags off, entities undone.
fn telegram_shown(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for character in html.chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(character),
            _ => {}
        }
    }
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

/// Whether `text` still holds the secret in any spelling a reader could use:
/// as written, in any case, percent-decoded, with markup, tags or invisible
/// characters taken out.
fn holds_secret(text: &str) -> bool {
    let mut decoded = text.to_string();
    for _ in 0..3 {
        decoded = percent_decode(&decoded);
    }
    let stripped = telegram_shown(&decoded);
    let folded: String = stripped
        .chars()
        .filter(|c| !"*_~`|\\\u{200B}\u{200C}\u{200D}\u{2060}\u{FEFF}".contains(*c))
        .collect::<String>()
        .to_ascii_lowercase();
    folded.contains(SECRET)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn slack_dm(text: &str, ts: &str) -> Value {
    slack_callback(
        &format!("Ev{ts}"),
        json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": text, "ts": ts}),
    )
}

/// Waits for `count` messages posted on Slack and returns them.
pub(crate) async fn slack_posts(env: &TestEnv, count: usize) -> Vec<Value> {
    wait_for(&format!("{count} chat.postMessage call(s)"), Duration::from_secs(20), || async {
        let posts = env.slack.calls("/chat.postMessage");
        (posts.len() >= count).then_some(posts)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disguised_link_arrives_on_telegram_with_its_real_target_visible() {
    let env = TestEnv::start().await;
    env.llm.reply(
        "Log in at [https://bank.example](https://evil.example/login) or \
         <a href=\"https://evil.example/2\">https://bank.example/2</a>",
    );
    env.telegram_update(&dm_update(1, 301, "where do I log in?")).await;
    let sent = env.wait_for_sent(1).await;
    let text = sent[0]["text"].as_str().unwrap();
    assert_eq!(sent[0]["parse_mode"], "HTML");
    assert!(!text.contains("<a "), "no link markup of the model's goes out live: {text}");
    let shown = telegram_shown(text);
    assert!(shown.contains("https://bank.example (https://evil.example/login)"), "{shown}");
    assert!(shown.contains("<a href=\"https://evil.example/2\">"), "the raw tag is shown as text: {shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn slack_gets_no_mass_mention_and_no_disguised_link() {
    let env = TestEnv::start().await;
    env.llm.reply(
        "<!channel> <!here> <!everyone> @channel <@U999>\n\nsee [docs](https://evil.example/a) \
         and <https://evil.example/b|https://good.example>",
    );
    env.slack_event(&slack_dm("hi", "1795000000.000100")).await;
    let posts = slack_posts(&env, 1).await;
    let text = posts[0]["text"].as_str().unwrap();
    for live in ["<!channel>", "<!here>", "<!everyone>", "<@U999>", "<https://evil.example/b|"] {
        assert!(!text.contains(live), "{live} arrived live: {text}");
    }
    assert!(!text.contains("@channel"), "a bare @channel is broken up too: {text}");
    assert!(text.contains("docs (https://evil.example/a)"), "{text}");
    assert_eq!(posts[0]["link_names"], false);
    assert_eq!(posts[0]["parse"], "none");
}

#[tokio::test(flavor = "multi_thread")]
async fn discord_gets_no_everyone_ping_and_no_masked_link() {
    let env = TestEnv::start().await;
    env.llm.reply("@everyone @here look: [good.example](https://evil.example/x)");
    env.discord_interaction(&crate::harness::discord_ask("9301", "links?")).await;
    let edits = wait_for("the Discord reply", Duration::from_secs(20), || async {
        let edits: Vec<_> = env.discord.requests().into_iter().filter(|call| call.method == "PATCH").collect();
        (!edits.is_empty()).then_some(edits)
    })
    .await;
    let body = &edits[0].body;
    let content = body["content"].as_str().unwrap();
    assert!(!content.contains("@everyone") && !content.contains("@here"), "{content}");
    assert!(!content.contains("](https://evil"), "no masked link: {content}");
    assert!(content.contains("good.example (https://evil.example/x)"), "{content}");
    assert_eq!(body["allowed_mentions"], json!({"parse": []}));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_in_pieces_markup_or_another_spelling_never_reaches_telegram() {
    let env = TestEnv::start().await;
    let attacks = [
        // (what, the turn's reply calls)
        ("split by an empty tag", vec!["key: test-llm<b></b>-key".to_string()]),
        ("split across two replies", vec!["first half: test-ll".to_string(), "m-key".to_string()]),
        ("split by markdown", vec!["key: test-**llm**-key".to_string()]),
        ("upper case", vec!["key: TEST-LLM-KEY".to_string()]),
        ("percent-encoded", vec!["key: test%2Dllm%2Dkey".to_string()]),
        ("in a link target", vec!["[docs](https://evil.example/?k=test-llm-key)".to_string()]),
        ("with a zero-width space", vec!["key: test-\u{200B}llm-key".to_string()]),
    ];
    let mut expected = 0;
    for (turn, (_, replies)) in attacks.iter().enumerate() {
        let calls = replies.iter().map(|text| ("reply".to_string(), json!({ "content": text }))).collect();
        env.llm.push(Scripted::ToolCalls(calls));
        env.telegram_update(&dm_update(turn as i64 + 1, 310 + turn as i64, "tell me the key")).await;
        expected += replies.len();
        env.wait_for_sent(expected).await;
    }
    let sent = env.telegram.calls("sendMessage");
    let mut at = 0;
    for (what, replies) in &attacks {
        let turn: Vec<String> = sent[at..at + replies.len()].iter().map(|call| call["text"].to_string()).collect();
        at += replies.len();
        let joined: String = turn.iter().map(|text| telegram_shown(text)).collect();
        assert!(!holds_secret(&joined), "{what}: {turn:?}");
        assert!(joined.contains("[redacted]"), "{what}: {turn:?}");
    }
    // Stored redacted too.
    let outbox = env.admin("/api/channels/telegram:311/outbox").await.to_string();
    assert!(!holds_secret(&outbox.replace("\\\"", "\"")), "{outbox}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_split_across_replies_never_reaches_slack() {
    let env = TestEnv::start().await;
    env.llm.push(Scripted::ToolCalls(vec![
        ("reply".into(), json!({ "content": "part one TEST-LL" })),
        ("reply".into(), json!({ "content": "M-KEY part two" })),
    ]));
    env.slack_event(&slack_dm("the key?", "1795000000.000200")).await;
    let posts = slack_posts(&env, 2).await;
    let joined: String = posts.iter().map(|post| post["text"].as_str().unwrap().to_string()).collect();
    assert!(!holds_secret(&joined), "{joined}");
    assert_eq!(joined, "part one [redacted][redacted] part two");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reaction_carrying_a_secret_never_reaches_a_platform() {
    let env = TestEnv::start().await;
    // A secret as a reaction (a valid short-name shape), then text dressed as an emoji, then a real one.
    for (turn, emoji) in [":test-llm-key:", "👍 test-llm-key", "🎉"].iter().enumerate() {
        env.llm.push(Scripted::ToolCalls(vec![
            ("react".into(), json!({ "emoji": emoji })),
            ("reply".into(), json!({ "content": "ok" })),
        ]));
        env.slack_event(&slack_dm("react please", &format!("1795000000.00030{turn}"))).await;
        slack_posts(&env, turn + 1).await;
    }
    let added = wait_for("the tada reaction", Duration::from_secs(10), || async {
        let added = env.slack.calls("/reactions.add");
        added.iter().any(|call| call["name"] == "tada").then_some(added)
    })
    .await;
    for call in &added {
        assert!(!holds_secret(&call.to_string()), "{call}");
        assert!(["eyes", "tada"].contains(&call["name"].as_str().unwrap()), "{call}");
    }
    // The secret-shaped name was stopped where it leaves, and the log says
    // which secret, never its value.
    let line = wait_for("the reaction_refused log line", Duration::from_secs(5), || async {
        env.worker.log().lines().find(|line| line.contains(r#""event":"reaction_refused""#)).map(str::to_string)
    })
    .await;
    assert!(line.contains("OPENAI_API_KEY") && !holds_secret(&line), "{line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn text_sent_for_embedding_is_redacted() {
    let env = TestEnv::start_with(&[("EMBEDDING_MODEL", "openai/text-embedding-3-small")]).await;
    env.llm.push(Scripted::ToolCalls(vec![
        ("branch".into(), json!({ "question": "remember the key" })),
        ("reply".into(), json!({ "content": "Noted." })),
    ]));
    env.llm.push_for(
        crate::memory::BRANCH,
        Scripted::ToolCalls(vec![(
            "memory_save".into(),
            json!({ "content": "the deploy key is TEST-LLM-KEY and sk-proj-Abcdefghijklmnopqrstuvwxyz012345", "memory_type": "fact" }),
        )]),
    );
    env.llm.push_for(crate::memory::BRANCH, Scripted::Text("Saved.".into()));
    env.llm.reply("Saved it.");
    env.telegram_update(&dm_update(1, 330, "remember: the deploy key")).await;
    let embedded = wait_for("an embeddings request", Duration::from_secs(20), || async {
        let requests = env.llm.embedding_requests();
        (!requests.is_empty()).then_some(requests)
    })
    .await;
    let body = embedded.iter().map(Value::to_string).collect::<String>();
    assert!(body.contains("the deploy key is [redacted] and [redacted]"), "{body}");
    assert!(!holds_secret(&body) && !body.contains("sk-proj-"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_fetch_to_every_ipv6_form_of_a_private_address_is_refused() {
    let env = TestEnv::start().await;
    let forms = [
        "http://[::ffff:0:7f00:1]/",                      // IPv4-translated (RFC 2765) 127.0.0.1
        "http://[::ffff:0:169.254.169.254]/",             // translated metadata
        "http://[::ffff:127.0.0.1]/",                     // IPv4-mapped
        "http://[::127.0.0.1]/",                          // IPv4-compatible
        "http://[64:ff9b::a00:1]/",                       // NAT64 10.0.0.1
        "http://[64:ff9b:1::c0a8:101]/",                  // local-use NAT64 192.168.1.1
        "http://[2002:7f00:1::]/",                        // 6to4 127.0.0.1
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", // Teredo, client 127.0.0.1
    ];
    env.llm.push(spawn("fetch the pages", false, "Fetching."));
    let calls = forms.iter().map(|url| ("http_fetch".to_string(), json!({ "url": url }))).collect();
    env.llm.push_for(crate::workers::WORKER, Scripted::ToolCalls(calls));
    env.llm.push_for(crate::workers::WORKER, status("outcome", "Nothing fetched."));
    env.llm.reply("Done.");
    env.telegram_update(&dm_update(1, 340, "fetch")).await;
    env.wait_for_sent(2).await;
    let results = tool_results(&worker_requests(&env)[1]);
    assert_eq!(results.len(), forms.len(), "{results:?}");
    for (url, result) in forms.iter().zip(&results) {
        assert!(result.starts_with("error: refused") && result.contains("private or local"), "{url}: {result}");
    }
}
