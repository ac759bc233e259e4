//! Files, images and voice (issue 25): what people send is downloaded from the
//! platform's own file host (the fakes serve real bytes), typed by its bytes,
//! kept per conversation and capped; images reach a model that sees them, voice
//! notes are transcribed, workers read files with `attachment_read`, and no
//! conversation reaches another's files.

use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use crate::harness::chats::{Chat, DISCORD, SLACK, TELEGRAM};
use crate::harness::{all_message_text, dm_update, slack_callback, wait_for, Scripted, TestEnv, TELEGRAM_TOKEN};
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];
/// The start of an Ogg Opus voice note.
const OGG: &[u8] =
    b"OggS\0\x02\0\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\0\0\0\0\x01\x13OpusHead\x01\x01\x38\x01\x80\xbb\0\0\0\0\0";
pub(crate) const CSV: &str = "region,sales\nnorth,120\nsouth,80\neast,45\n";

/// A Telegram DM carrying one file (`kind`: photo, document or voice).
pub(crate) fn dm_with_file(update_id: i64, chat_id: i64, kind: &str, file: Value, caption: &str) -> Value {
    let mut update = dm_update(update_id, chat_id, "");
    let message = update["message"].as_object_mut().unwrap();
    message.remove("text");
    message.insert("caption".into(), json!(caption));
    message.insert(kind.into(), if kind == "photo" { json!([file]) } else { file });
    update
}

/// Serves `bytes` as the Telegram file `file_id` (the fake's getFile points there).
pub(crate) fn telegram_file(env: &TestEnv, file_id: &str, bytes: Vec<u8>) {
    env.telegram.serve_file(&format!("/file/bot{TELEGRAM_TOKEN}/files/{file_id}"), bytes);
}

/// The last user message of a chat request.
fn turn_message(request: &Value) -> Value {
    let messages = request["messages"].as_array().unwrap();
    messages.iter().rev().find(|message| message["role"] == "user").cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_photo_reaches_a_vision_model_as_an_image_and_a_blind_model_says_it_cannot_see() {
    let env = TestEnv::start_with(&[("CHANNEL_MODEL", "openai/gpt-4o-mini")]).await;
    telegram_file(&env, "PHOTO1", PNG.to_vec());
    env.llm.reply("A single pixel.");
    let photo = json!({"file_id": "PHOTO1", "file_unique_id": "u1", "width": 1, "height": 1, "file_size": PNG.len()});
    env.telegram_update(&dm_with_file(7001, 71, "photo", photo, "what is this?")).await;
    env.wait_for_sent(1).await;
    let request = &env.llm.requests()[0];
    let parts = turn_message(request)["content"].as_array().cloned().expect("text and image parts");
    let encoded = base64::engine::general_purpose::STANDARD.encode(PNG);
    assert_eq!(parts[1]["image_url"]["url"], format!("data:image/png;base64,{encoded}"), "the photo's own bytes");
    let text = parts[0]["text"].as_str().unwrap();
    let head = format!("photo.jpg (image/png, {} B, id f", PNG.len());
    assert!(text.contains(&head) && text.contains("the image is attached"), "{text}");
    assert!(text.contains("what is this?"));
    let downloads: Vec<_> =
        env.telegram.requests().into_iter().filter(|call| call.path.contains("/file/bot")).collect();
    assert_eq!(downloads.len(), 1, "downloaded from Telegram's own file path");

    // A model that does not see images gets no image, and says so.
    let env = TestEnv::start().await;
    telegram_file(&env, "PHOTO2", PNG.to_vec());
    env.llm.reply("I can't see images with this model.");
    let photo = json!({"file_id": "PHOTO2", "file_unique_id": "u2", "width": 1, "height": 1});
    env.telegram_update(&dm_with_file(7002, 72, "photo", photo, "")).await;
    env.wait_for_sent(1).await;
    let message = turn_message(&env.llm.requests()[0]);
    let text = message["content"].as_str().expect("text only");
    assert!(text.contains("this model cannot see images"), "{text}");

    // With a vision model set, a blind channel model gets the image described.
    let env = TestEnv::start_with(&[("VISION_MODEL", "openai/gpt-4o-mini")]).await;
    telegram_file(&env, "PHOTO3", PNG.to_vec());
    env.llm.push(Scripted::Text("A single white pixel on nothing.".into()));
    env.llm.reply("It is one white pixel.");
    let photo = json!({"file_id": "PHOTO3", "file_unique_id": "u3", "width": 1, "height": 1});
    env.telegram_update(&dm_with_file(7003, 78, "photo", photo, "and this?")).await;
    env.wait_for_sent(1).await;
    let requests = env.llm.requests();
    assert_eq!(requests[0]["model"], "gpt-4o-mini", "the vision model first");
    assert!(turn_message(&requests[0])["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .starts_with("data:image/png"));
    let text = all_message_text(&requests[1]);
    assert!(text.contains("described: A single white pixel on nothing."), "{text}");
    let usage = wait_for("the description's usage", Duration::from_secs(10), || async {
        let usage = env.admin("/api/channels/telegram:78/usage").await;
        usage["vision"]["input_tokens"].as_u64().filter(|tokens| *tokens > 0).map(|_| usage)
    })
    .await;
    assert_eq!(usage["vision"]["output_tokens"], 5, "charged like any model call");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_voice_note_is_transcribed_and_answered_as_its_text() {
    let env = TestEnv::start_with(&[("TRANSCRIBE_MODEL", "openai/whisper-1")]).await;
    telegram_file(&env, "VOICE1", OGG.to_vec());
    env.llm.set_transcript("Remind me to call Ada at five.");
    env.llm.reply("I'll remind you.");
    let voice = json!({"file_id": "VOICE1", "file_unique_id": "v1", "duration": 2, "mime_type": "audio/ogg"});
    env.telegram_update(&dm_with_file(7011, 73, "voice", voice, "")).await;
    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["text"], "I'll remind you.");
    let text = all_message_text(&env.llm.requests()[0]);
    assert!(text.contains("[voice note, transcribed] Remind me to call Ada at five."), "{text}");
    let asked = String::from_utf8_lossy(&env.llm.transcriptions()[0]).into_owned();
    assert!(asked.contains("whisper-1") && asked.contains("OpusHead"), "the model and the note's own bytes");
    // The history keeps the transcript: the next turn sees what was said.
    env.llm.reply("Done.");
    env.telegram_update(&dm_update(7012, 73, "thanks")).await;
    env.wait_for_sent(2).await;
    assert!(all_message_text(&env.llm.requests()[1]).contains("Remind me to call Ada at five."));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_reads_a_csv_sent_in_its_conversation_and_not_one_sent_elsewhere() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    telegram_file(&env, "CSV1", CSV.as_bytes().to_vec());
    telegram_file(&env, "CSV2", b"secret,plans\n".to_vec());
    let own = edgebot::files::rules::file_id("telegram:74", "CSV1");
    let elsewhere = edgebot::files::rules::file_id("telegram:75", "CSV2");

    // Someone in another conversation sends a file first.
    env.llm.reply("Got it.");
    let file = json!({"file_id": "CSV2", "file_unique_id": "c2", "file_name": "plans.csv"});
    env.telegram_update(&dm_with_file(7020, 75, "document", file, "keep this")).await;
    env.wait_for_sent(1).await;

    env.llm.push(spawn(&format!("summarise the sales in file {own}"), false, "Looking at it."));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("attachment_read".into(), json!({ "id": own }))]));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("attachment_read".into(), json!({ "id": elsewhere }))]));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("attachment_recall".into(), json!({}))]));
    env.llm.push_for(WORKER, status("outcome", "North sold most: 120 of 245."));
    env.llm.push(Scripted::ToolCalls(vec![("reply".into(), json!({ "content": "North sold most: 120 of 245." }))]));
    let file = json!({"file_id": "CSV1", "file_unique_id": "c1", "file_name": "sales.csv", "file_size": CSV.len()});
    env.telegram_update(&dm_with_file(7021, 74, "document", file, "summarise this")).await;
    let prompt = wait_for("the channel's turn", Duration::from_secs(20), || async {
        env.llm.requests().iter().map(all_message_text).find(|text| text.contains("summarise this"))
    })
    .await;
    let line = format!("sales.csv (text/csv, {} B, id {own}): a branch or worker can read it", CSV.len());
    assert!(prompt.contains(&line), "{prompt}");
    let sent = wait_for("the outcome", Duration::from_secs(40), || async {
        let sent = env.telegram.calls("sendMessage");
        sent.iter().any(|call| call["text"] == "North sold most: 120 of 245.").then_some(sent)
    })
    .await;
    assert!(sent.iter().all(|call| !call["text"].as_str().unwrap_or_default().contains("secret,plans")));
    let last = worker_requests(&env).last().cloned().unwrap();
    let results = tool_results(&last);
    assert!(results[0].contains("sales.csv (text/csv):\nregion,sales\nnorth,120"), "{results:?}");
    assert_eq!(results[1], format!("error: this conversation has no file {elsewhere}"));
    assert!(results[2].contains(&own) && !results[2].contains(&elsewhere), "recall lists only its own: {}", results[2]);
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_files_are_refused_with_a_message_and_foreign_hosts_are_never_fetched() {
    let env = TestEnv::start().await;
    env.llm.reply("Anything else?");
    // Said to be too large: not even downloaded.
    let file =
        json!({"file_id": "BIG1", "file_unique_id": "b1", "file_name": "scan.pdf", "file_size": 25 * 1024 * 1024});
    env.telegram_update(&dm_with_file(7031, 76, "document", file, "here")).await;
    let sent = env.wait_for_sent(2).await;
    let texts: Vec<&str> = sent.iter().map(|call| call["text"].as_str().unwrap()).collect();
    assert!(texts.contains(&"I couldn't keep scan.pdf: it is larger than 20 MB."), "{texts:?}");
    assert!(env.telegram.calls("/getFile").is_empty(), "never downloaded");
    assert!(all_message_text(&env.llm.requests()[0]).contains("scan.pdf (not kept: it is larger than 20 MB)"));

    // Said to be small, but larger once read: cut off at the cap and refused.
    telegram_file(&env, "BIG2", vec![b'a'; 20 * 1024 * 1024 + 1]);
    env.llm.reply("Noted.");
    let file = json!({"file_id": "BIG2", "file_unique_id": "b2", "file_name": "log.txt", "file_size": 10});
    env.telegram_update(&dm_with_file(7032, 76, "document", file, "and this")).await;
    let sent = env.wait_for_sent(4).await;
    assert!(sent.iter().any(|call| call["text"] == "I couldn't keep log.txt: it is larger than 20 MB."));

    // A Slack file whose URL is not on Slack's file host is never fetched.
    env.slack.serve_file("/files/a.csv", CSV.as_bytes().to_vec());
    env.llm.reply("Thanks.");
    let event = json!({"type": "message", "channel": "D9", "channel_type": "im", "user": "U1", "text": "two files",
    "ts": "1795000000.000900", "files": [
        {"id": "F1", "name": "a.csv", "size": 38, "url_private_download": format!("{}/files/a.csv", env.slack.base_url)},
        {"id": "F2", "name": "b.csv", "size": 38, "url_private_download": format!("{}/files/a.csv", env.llm.base_url)}
    ]});
    env.slack_event(&slack_callback("EvFiles", event)).await;
    let prompt = wait_for("the Slack turn", Duration::from_secs(20), || async {
        env.llm.requests().iter().map(all_message_text).find(|text| text.contains("two files"))
    })
    .await;
    let kept = format!("a.csv (text/csv, {} B, id f", CSV.len());
    assert!(prompt.contains(&kept), "the file on Slack's host is kept: {prompt}");
    assert!(prompt.contains("b.csv (not kept: it could not be downloaded)"), "{prompt}");
    let fetched = env.slack.requests().into_iter().find(|call| call.path == "/files/a.csv").expect("fetched");
    assert_eq!((fetched.method.as_str(), fetched.authorization.as_deref()), ("GET", Some("Bearer xoxb-test")));
    assert_eq!(env.slack.requests().iter().filter(|call| call.path.starts_with("/files/")).count(), 1);
}

/// A worker writes a CSV and sends it: the person gets it as a file on their
/// platform (Telegram's sendDocument, Slack's upload flow, a Discord
/// attachment), with its bytes, once, after the channel's reply.
async fn a_worker_sends_a_file(chat: Chat) {
    let env = chat.start(&[("LLM_TIMEOUT_MS", "10000"), ("STREAM_REPLIES", "off")]).await;
    let summary = "region,total\nnorth,120\nsouth,80\n";
    env.llm.push(spawn("write the sales summary as a CSV", false, "On it."));
    env.llm.push_for(
        WORKER,
        Scripted::ToolCalls(vec![("send_file".into(), json!({ "name": "summary.csv", "text": summary }))]),
    );
    env.llm.push_for(WORKER, status("outcome", "Sent the summary."));
    env.llm.answer_always(Scripted::Reply("Here you are.".into()));
    chat.ask(&env, 40, "send me the sales summary").await;
    let upload = wait_for("the file", Duration::from_secs(40), || async {
        let api = chat.api(&env);
        api.requests().into_iter().find(|call| call.body.as_str().is_some_and(|body| body.contains("north,120")))
    })
    .await;
    env.settle().await;
    let body = upload.body.as_str().unwrap();
    assert!(body.contains("filename=\"summary.csv\""), "sent as a named file: {body}");
    match chat.name {
        "telegram" => {
            assert!(upload.path.ends_with("/sendDocument"), "{}", upload.path);
            assert!(body.contains("name=\"chat_id\"") && body.contains("summary.csv"));
        }
        "slack" => {
            assert_eq!(upload.path, "/upload/F900");
            let completed = env.slack.calls("/files.completeUploadExternal");
            assert_eq!(completed.len(), 1);
            assert_eq!(
                (completed[0]["channel_id"].as_str(), completed[0]["files"][0]["id"].as_str()),
                (Some("D1"), Some("F900"))
            );
        }
        _ => {
            assert!(upload.path.contains("/webhooks/") && upload.method == "POST", "a follow-up: {}", upload.path);
            assert!(body.contains("name=\"payload_json\"") && body.contains("\"filename\":\"summary.csv\""));
        }
    }
    let uploads = chat
        .api(&env)
        .requests()
        .into_iter()
        .filter(|call| call.body.as_str().is_some_and(|body| body.contains("north,120")));
    assert_eq!(uploads.count(), 1, "sent once");
    let prompt = env.llm.requests().iter().map(all_message_text).find(|text| text.contains("sent the person a file"));
    assert!(prompt.is_some_and(|text| text.contains("summary.csv")), "the channel knows what was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_sends_a_file_on_telegram() {
    a_worker_sends_a_file(TELEGRAM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_sends_a_file_on_slack() {
    a_worker_sends_a_file(SLACK).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_sends_a_file_on_discord() {
    a_worker_sends_a_file(DISCORD).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn files_are_kept_thirty_days_then_the_cron_deletes_them() {
    let mut env = TestEnv::start().await;
    telegram_file(&env, "OLD1", CSV.as_bytes().to_vec());
    telegram_file(&env, "NEW1", CSV.as_bytes().to_vec());
    env.llm.answer_always(Scripted::Reply("Got it.".into()));
    // One at a time: two files sent while a turn runs would be answered in one turn.
    for (answered, (update, file_id)) in [(7051, "OLD1"), (7052, "NEW1")].into_iter().enumerate() {
        let file = json!({"file_id": file_id, "file_unique_id": file_id, "file_name": format!("{file_id}.csv")});
        env.telegram_update(&dm_with_file(update, 77, "document", file, "keep")).await;
        env.wait_for_sent(answered + 1).await;
    }
    let old = edgebot::files::rules::file_id("telegram:77", "OLD1");
    let month_ago = edgebot::files::rules::KEEP_DAYS * 24 * 60 * 60 * 1000 + 60_000;
    env.sql_while_stopped(&format!("UPDATE files SET created_at = created_at - {month_ago} WHERE id = '{old}'")).await;
    env.cron().await;
    let tick = env.admin("/api/status").await["last_cron"].clone();
    assert_eq!(tick["files"], "ok: deleted 1 file(s), 0 workspace file(s)", "{tick}");
    let left = env.sql_while_stopped("SELECT name FROM files ORDER BY name").await;
    let names: Vec<&str> =
        left[0]["results"].as_array().unwrap().iter().filter_map(|row| row["name"].as_str()).collect();
    assert_eq!(names, ["NEW1.csv"], "the old one's record is gone (its bytes went first)");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_sends_an_image_it_fetched_and_nothing_from_a_private_address() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000"), ("FETCH_ALLOW_HOSTS", "127.0.0.1")]).await;
    env.telegram.serve_file("/pics/cat.png", PNG.to_vec());
    let found = format!("{}/pics/cat.png", env.telegram.base_url);
    env.llm.push(spawn("find a picture of a cat", false, "Looking."));
    let send = |arguments: Value| Scripted::ToolCalls(vec![("send_file".into(), arguments)]);
    env.llm.push_for(WORKER, send(json!({ "url": "http://169.254.169.254/latest/meta-data" })));
    env.llm.push_for(WORKER, send(json!({ "url": found })));
    env.llm.push_for(WORKER, status("outcome", "Sent a cat."));
    env.llm.answer_always(Scripted::Reply("Here is a cat.".into()));
    env.telegram_update(&dm_update(7061, 79, "a cat please")).await;
    let photo = wait_for("the photo", Duration::from_secs(40), || async {
        env.telegram.requests().into_iter().find(|call| call.path.ends_with("/sendPhoto"))
    })
    .await;
    let body = photo.body.as_str().unwrap();
    assert!(body.contains("filename=\"cat.png\"") && body.contains("IHDR"), "the fetched bytes, as a photo");
    let refused = worker_requests(&env).iter().flat_map(tool_results).find(|result| result.contains("169.254"));
    let refused =
        refused.or_else(|| worker_requests(&env).iter().flat_map(tool_results).find(|r| r.contains("refused")));
    assert!(refused.is_some_and(|result| result.starts_with("error: refused")), "a private address is never fetched");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_past_its_daily_files_is_told_and_another_is_not_held_by_it() {
    let mut env = TestEnv::start().await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let day = edgebot::budget::rules::day_of(now);
    let rows: Vec<String> = (0..edgebot::files::rules::DAY_LIMIT_FILES)
        .map(|n| {
            format!("('f{n:016x}', 'telegram:80', 'p{n}', 'a.txt', 'text', 'text/plain', 1, 'k{n}', '', '{day}', 0)")
        })
        .collect();
    let insert = format!(
        "INSERT INTO files (id, conversation_key, platform_file_id, name, kind, content_type, size, r2_key, message_id, day, created_at) VALUES {}",
        rows.join(", ")
    );
    env.sql_while_stopped(&insert).await;
    telegram_file(&env, "FULL1", CSV.as_bytes().to_vec());
    env.llm.answer_always(Scripted::Reply("Noted.".into()));
    let file = json!({"file_id": "FULL1", "file_unique_id": "x1", "file_name": "more.csv"});
    env.telegram_update(&dm_with_file(7071, 80, "document", file.clone(), "one more")).await;
    let sent = env.wait_for_sent(2).await;
    let told = "I couldn't keep more.csv: this conversation has sent as many files as it may today.";
    assert!(sent.iter().any(|call| call["text"] == told), "{sent:?}");
    // Another conversation's allowance is its own.
    env.telegram_update(&dm_with_file(7072, 81, "document", file, "here")).await;
    wait_for("the other conversation's turn", Duration::from_secs(20), || async {
        env.llm.requests().iter().map(all_message_text).find(|text| text.contains("more.csv (text/csv"))
    })
    .await;
}
