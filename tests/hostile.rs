//! What a hostile or unlucky platform does: oversized bodies, a crash while a
//! reply is in flight, a new group's first line, interaction types edgebot
//! does not handle, and URL spellings that smuggle a private host.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{
    discord_headers, dm_update, group_update, now_secs, slack_callback, slack_headers, wait_for, Scripted, TestEnv,
    GROUP_CHAT,
};

const ADA: (i64, &str, bool) = (7001, "Ada", false);

fn slack_dm(text: &str, ts: &str) -> Value {
    json!({"type": "message", "channel": "D9", "channel_type": "im", "user": "U1", "text": text, "ts": ts})
}

/// The outbox row of the turn's first piece, once it has this status.
async fn piece_with_status(env: &TestEnv, conversation: &str, status: &str) -> Value {
    let path = format!("/api/channels/{conversation}/outbox");
    wait_for(&format!("the piece to be {status}"), Duration::from_secs(30), || async {
        let outbox = env.admin(&path).await;
        outbox.as_array().and_then(|pieces| pieces.first()).filter(|piece| piece["status"] == status).cloned()
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_bodies_are_refused_before_any_work_and_the_conversation_goes_on() {
    let env = TestEnv::start().await;
    // A validly authenticated update of several MB: refused at the edge, with a JSON error.
    let huge = dm_update(1, 81, &"x".repeat(3 << 20));
    let response = env.telegram_update(&huge).await;
    assert_eq!(response.status(), 413);
    assert!(response.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("request body over"));

    let body = slack_callback("EvBig", slack_dm(&"y".repeat(2 << 20), "1795000000.000100")).to_string().into_bytes();
    let response = env.post("/webhooks/slack", &slack_headers(&body, now_secs(), "application/json"), body).await;
    assert_eq!(response.status(), 413);
    let body = json!({"type": 2, "id": "1", "data": {"name": "ask"}, "pad": "z".repeat(2 << 20)}).to_string();
    let response = env.post("/webhooks/discord", &discord_headers(body.as_bytes(), now_secs()), body.into()).await;
    assert_eq!(response.status(), 413);

    // Under the body cap but over Telegram's own 4,096 characters: stored cut, with a marker.
    env.llm.reply("got it");
    let long = env.telegram_update(&dm_update(2, 81, &"é".repeat(10_000))).await;
    assert_eq!(long.status(), 200);
    env.wait_for_sent(1).await;
    let events = env.admin("/api/channels/telegram:81/events").await;
    let text = events[0]["event"]["text"].as_str().unwrap().to_string();
    assert!(text.starts_with(&"é".repeat(4096)) && text.ends_with("[…cut: 5904 more characters]"), "{}", text.len());
    assert_eq!(events.as_array().unwrap().len(), 1, "the refused update left nothing behind");

    // The conversation is not stuck: the next message is answered.
    env.llm.reply("still here");
    assert_eq!(env.telegram_update(&dm_update(3, 81, "still there?")).await.status(), 200);
    assert_eq!(env.wait_for_sent(2).await[1]["text"], "still here");

    // The admin import has its own cap.
    let items: Vec<Value> = (0..500)
        .map(|index| json!({"content": format!("{index} {}", "m".repeat(9_000)), "memory_type": "fact"}))
        .collect();
    let (status, body) = env.admin_send(reqwest::Method::POST, "/api/memories", Some(json!(items))).await;
    assert_eq!((status, body["error"].is_string()), (413, true), "{body}");
}

/// POSTs `body` to Telegram's webhook in HTTP/1.1 chunks, with no
/// `content-length` (as a proxy that streams may): the status and the body.
async fn telegram_chunked(env: &TestEnv, body: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = env.worker.base_url.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.expect("connect to the Worker");
    let head = format!(
        "POST /webhooks/telegram HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         x-telegram-bot-api-secret-token: {}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        crate::harness::TELEGRAM_SECRET
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.chunks(64 << 10) {
        // The Worker may answer (413) and close before the whole body is sent.
        if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await.is_err()
            || stream.write_all(chunk).await.is_err()
            || stream.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).to_string();
    let status = answer.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_sent_in_chunks_is_read_to_the_same_cap_and_answered_once() {
    let env = TestEnv::start().await;
    let (status, answer) = telegram_chunked(&env, dm_update(1, 82, &"x".repeat(3 << 20)).to_string().as_bytes()).await;
    assert_eq!(status, 413, "{}", &answer[..answer.len().min(400)]);
    assert!(answer.contains("request body over"), "{}", &answer[..answer.len().min(400)]);

    env.llm.reply("chunks are fine");
    let (status, answer) = telegram_chunked(&env, dm_update(2, 82, "in pieces").to_string().as_bytes()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(env.wait_for_sent(1).await[0]["text"], "chunks are fine");
    let events = env.admin("/api/channels/telegram:82/events").await;
    assert_eq!(events.as_array().unwrap().len(), 1, "the refused body left nothing behind");
    assert_eq!(events[0]["event"]["text"], "in pieces");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_long_messages_during_a_slow_turn_is_all_taken_and_answered() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "30000")]).await;
    env.llm.push(Scripted::SlowReply(Duration::from_secs(10), "first answer".into()));
    env.llm.reply("second answer");
    env.telegram_update(&dm_update(1, 82, "start")).await;
    wait_for("the slow turn to start", Duration::from_secs(20), || async { (env.llm.in_flight() == 1).then_some(()) })
        .await;
    // 80 messages at Telegram's limit while the model thinks: far past what one
    // checkpoint row may hold, were they kept whole.
    for update in 2..82 {
        let response = env.telegram_update(&dm_update(update, 82, &"w".repeat(4096))).await;
        assert_eq!(response.status(), 200, "message {update} was taken");
    }
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["text"], "second answer", "the queued messages got their turn");
    let current = crate::harness::turn_message(&env.llm.requests()[1]);
    assert!(current.contains("more characters]"), "later messages past the budget were cut for the prompt");
    wait_for("every message to be answered", Duration::from_secs(20), || async {
        let events = env.admin("/api/channels/telegram:82/events").await;
        let events = events.as_array().cloned().unwrap_or_default();
        (events.len() == 81 && events.iter().all(|event| event["status"] == "answered")).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_while_telegram_holds_a_reply_resends_it_once_marked_as_a_possible_repeat() {
    let mut env = TestEnv::start().await;
    env.llm.reply("only once, please");
    env.telegram.hang_next("/sendMessage", true);
    env.telegram_update(&dm_update(1, 83, "hello")).await;
    env.wait_for_sent(1).await;
    env.crash_and_restart().await;

    // Telegram cannot be asked whether it has the message: never silence, so
    // it is sent once more, saying that it may be a repeat.
    let piece = piece_with_status(&env, "telegram:83", "sent").await;
    env.settle().await;
    let sent = env.telegram.calls("/sendMessage");
    assert_eq!(sent.len(), 2, "the interrupted call and exactly one resend");
    let resent = sent[1]["text"].as_str().unwrap();
    assert!(resent.starts_with("↻ Sent again after an interruption"), "{resent}");
    assert!(resent.ends_with("only once, please"), "{resent}");
    assert_eq!(sent[0]["text"], "only once, please", "the first copy carries no note");
    assert_eq!(piece["attempts"], 2, "the interrupted call counts as an attempt");
    // The model remembers its answer, not the note.
    // The answer's row is stored after its send: waited for, then the note's absence means something.
    let answered = |rows: &[Value]| rows.iter().any(|row| row["role"] == "assistant");
    let history = Value::from(env.history_when("telegram:83", "the answer in the history", answered).await).to_string();
    assert!(history.contains("only once, please"), "{history}");
    assert!(!history.contains("Sent again"), "{history}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_while_slack_holds_a_reply_looks_it_up_before_sending_again() {
    for lands in [true, false] {
        let mut env = TestEnv::start().await;
        env.llm.reply("exactly one copy");
        env.slack.hang_next("/chat.postMessage", lands);
        let event = slack_callback("Ev1", slack_dm("hello", "1795000000.000100"));
        assert_eq!(env.slack_event(&event).await.status(), 200);
        wait_for("the first post", Duration::from_secs(20), || async {
            (!env.slack.calls("/chat.postMessage").is_empty()).then_some(())
        })
        .await;
        env.crash_and_restart().await;

        let piece = piece_with_status(&env, "slack:T1:D9", "sent").await;
        env.settle().await;
        let posted = env.slack.posted();
        assert_eq!(posted.len(), 1, "landed={lands}: exactly one copy in the channel");
        assert_eq!(piece["platform_message_id"], posted[0]["ts"]);
        assert!(!env.slack.calls("/conversations.history").is_empty(), "the piece was looked up");
        let attempts = env.slack.calls("/chat.postMessage").len();
        assert_eq!(attempts, if lands { 1 } else { 2 }, "landed={lands}: resent only when it had not landed");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slack_post_that_times_out_after_landing_is_looked_up_not_posted_twice() {
    let env = TestEnv::start().await;
    env.llm.reply("exactly one copy");
    // Slack takes the post but its answer never comes: the Worker's call
    // times out (10 s) without a crash. No answer is not a no.
    env.slack.hang_next("/chat.postMessage", true);
    let event = slack_callback("Ev1", slack_dm("hello", "1795000000.000100"));
    assert_eq!(env.slack_event(&event).await.status(), 200);

    let piece = piece_with_status(&env, "slack:T1:D9", "sent").await;
    env.settle().await;
    let posted = env.slack.posted();
    assert_eq!(posted.len(), 1, "exactly one copy in the channel");
    assert_eq!(piece["platform_message_id"], posted[0]["ts"]);
    assert!(!env.slack.calls("/conversations.history").is_empty(), "the piece was looked up");
    assert_eq!(env.slack.calls("/chat.postMessage").len(), 1, "not posted again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_groups_first_unaddressed_line_waits_for_the_member_count() {
    for (members, expected, reason) in [(6, "observe", "not addressed"), (2, "engage", "solo human")] {
        let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100")]).await;
        env.telegram.set_member_count(members);
        env.llm.reply("hello Ada");
        let response = env.telegram_update(&group_update(1, ADA, "is the build broken?", false)).await;
        let decision: Value = response.json().await.unwrap();
        assert_eq!(decision["decision"], "held", "acknowledged at once, decided in the alarm");
        let event = first_decided_event(&env, &format!("telegram:{GROUP_CHAT}")).await;
        assert_eq!((event["decision"].as_str(), event["reason"].as_str()), (Some(expected), Some(reason)));
        assert_eq!(env.telegram.calls("getChatMemberCount").len(), 1, "read before deciding, once");
        let humans = members - 1;
        let note = event["membership"].as_str().unwrap_or_default();
        assert!(
            note.starts_with("member count read before deciding, at ")
                && note.ends_with(&format!(": {humans} human(s)")),
            "{note}"
        );
    }
}

/// The conversation's first inbound, once the alarm has decided it.
async fn first_decided_event(env: &TestEnv, key: &str) -> Value {
    wait_for("the held inbound to be decided", Duration::from_secs(20), || async {
        let events = env.admin(&format!("/api/channels/{key}/events")).await;
        Some(events[0].clone()).filter(|event| event.is_object() && event["decision"] != "held")
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_member_count_that_does_not_come_is_noted_and_the_speakers_decide() {
    let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100")]).await;
    env.telegram.fail_next("/getChatMemberCount", 500, json!({"ok": false, "error_code": 500}), None);
    env.llm.reply("hello Ada");
    let response = env.telegram_update(&group_update(1, ADA, "anyone?", false)).await;
    assert_eq!(response.status(), 200);
    let event = first_decided_event(&env, &format!("telegram:{GROUP_CHAT}")).await;
    let note = event["membership"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("member count unavailable at ") && note.ends_with("; decided on the speakers seen"),
        "{note}"
    );
    assert_eq!(event["reason"], "solo human", "one speaker seen");
}

#[tokio::test(flavor = "multi_thread")]
async fn interaction_types_edgebot_does_not_handle_get_a_json_error() {
    let env = TestEnv::start().await;
    // Autocomplete (4) is not handled; a modal submitted (5) is answered
    // (tests/heard.rs: `discord_a_modal_submitted_is_answered_never_dropped`).
    let body = json!({"id": "5", "application_id": "A", "type": 4, "token": "t", "channel_id": "C",
                      "user": {"id": "U", "username": "ada"}, "data": {"name": "ask"}})
    .to_string();
    let response = env.post("/webhooks/discord", &discord_headers(body.as_bytes(), now_secs()), body.into()).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"], "Discord interaction type 4 is not handled");
    assert_eq!(env.discord.total_calls(), 0, "nothing was sent to the person");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slack_thread_under_ones_own_message_in_a_one_human_channel_is_answered() {
    let env = TestEnv::start().await;
    // The bot and one person. The root itself engages (one human); the thread's
    // turn answers in the thread.
    env.slack.set_member_count(2);
    env.llm.reply("noted");
    env.llm.reply("noted");
    let root = json!({"type": "message", "channel": "C5", "channel_type": "channel", "user": "U1",
                      "text": "deploys are slow today", "ts": "1795000000.000100"});
    let thread_reply = json!({"type": "message", "channel": "C5", "channel_type": "channel", "user": "U1",
                              "text": "and the cache misses too", "ts": "1795000001.000200",
                              "thread_ts": "1795000000.000100", "parent_user_id": "U1"});
    env.slack_event(&slack_callback("Ev1", root)).await;
    let response = env.slack_event(&slack_callback("Ev2", thread_reply)).await;
    assert_eq!(response.json::<Value>().await.unwrap()["decision"], "held", "a new thread waits for the count");
    let event = first_decided_event(&env, "slack:T1:C5:1795000000.000100").await;
    assert_eq!((event["decision"].as_str(), event["reason"].as_str()), (Some("engage"), Some("solo human")));
    let note = event["membership"].as_str().unwrap_or_default();
    assert!(note.ends_with(": 1 human(s)"), "the new thread read it: {note}");
    wait_for("the answer in the thread", Duration::from_secs(20), || async {
        let posts = env.slack.calls("/chat.postMessage");
        posts.into_iter().find(|post| post["thread_ts"] == "1795000000.000100")
    })
    .await;
}
