//! Discord over the Gateway: the Gateway object connects to a fake Gateway (a
//! real WebSocket server on 127.0.0.1), identifies, keeps the session alive,
//! and hands every message to the channel objects like a webhook would.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::fake_gateway::{FakeGateway, BOT_USER_ID};
use crate::harness::{all_message_text, wait_for, TestEnv};

pub(crate) const HEARTBEAT_MS: u64 = 600;
const TOKEN: &str = "discord-bot-token";

async fn start(gateway: &FakeGateway) -> TestEnv {
    start_with(gateway, &[]).await
}

pub(crate) async fn start_with(gateway: &FakeGateway, extra: &[(&str, &str)]) -> TestEnv {
    let mut vars = vec![
        ("DISCORD_GATEWAY", "on"),
        ("DISCORD_GATEWAY_URL", gateway.url.as_str()),
        ("DISCORD_BOT_TOKEN", TOKEN),
        ("COALESCE_DEBOUNCE_MS", "100"),
    ];
    vars.extend_from_slice(extra);
    let env = TestEnv::start_with(&vars).await;
    let (status, _) = env.admin_send(reqwest::Method::POST, "/api/discord/gateway", None).await;
    assert_eq!(status, 200);
    ready(&env, gateway, 1).await;
    env
}

/// Waits until the object has READY from session `session`.
async fn ready(env: &TestEnv, gateway: &FakeGateway, session: usize) {
    gateway.wait_until("IDENTIFY", Duration::from_secs(20), |gateway| gateway.identifies().len() >= session).await;
    let expected = format!("session-{session}");
    wait_for("READY to be taken", Duration::from_secs(20), || async {
        let status = env.admin("/api/discord/gateway").await;
        (status["session_id"] == expected.as_str() && status["connected"] == true).then_some(())
    })
    .await;
}

pub(crate) fn message(
    id: &str,
    channel: &str,
    guild: Option<&str>,
    author: &str,
    content: &str,
    mentions: &[&str],
) -> Value {
    let mut data = json!({
        "id": id, "channel_id": channel, "type": 0, "content": content,
        "author": {"id": author, "username": author},
        "mentions": mentions.iter().map(|id| json!({"id": id})).collect::<Vec<_>>(),
    });
    if let Some(guild) = guild {
        data["guild_id"] = json!(guild);
    }
    data
}

/// The messages posted in a channel: a resend with a nonce Discord already
/// saw (after a crash mid-send) creates no second message, so it is not one.
pub(crate) async fn posts(env: &TestEnv, channel: &str, count: usize) -> Vec<Value> {
    let path = format!("/channels/{channel}/messages");
    wait_for(&format!("{count} post(s) in {channel}"), Duration::from_secs(20), || async {
        let mut nonces = std::collections::HashSet::new();
        let posts: Vec<Value> = env
            .discord
            .calls(&path)
            .into_iter()
            .filter(|post| post["nonce"].as_str().is_none_or(|nonce| nonces.insert(nonce.to_string())))
            .collect();
        (posts.len() >= count).then_some(posts)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mention_in_a_guild_channel_is_answered_once_as_a_reply_to_it() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let env = start(&gateway).await;
    let identify = &gateway.identifies()[0];
    assert_eq!((identify["token"].as_str(), identify["intents"].as_u64()), (Some(TOKEN), Some(46_593)));

    env.llm.reply("Happy to help.");
    let mention =
        message("1300000000000000001", "C1", Some("G1"), "U1", "<@900000000000000001> can you help?", &[BOT_USER_ID]);
    let seq = gateway.dispatch("MESSAGE_CREATE", mention.clone());
    let sent = posts(&env, "C1", 1).await;
    assert_eq!(sent[0]["content"], "Happy to help.");
    assert_eq!(sent[0]["message_reference"]["message_id"], "1300000000000000001", "a reply to the mention");
    assert!(sent[0]["nonce"].is_string() && sent[0]["enforce_nonce"] == true);
    assert!(!env.discord.calls("/channels/C1/typing").is_empty(), "typing while the turn ran");

    // The same event again (as a RESUME would replay it): answered once.
    gateway.dispatch_with_seq(seq, "MESSAGE_CREATE", mention);
    env.settle().await;
    assert_eq!(env.discord.calls("/channels/C1/messages").len(), 1);
    assert_eq!(env.llm.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn chatter_is_observed_then_context_dms_need_no_mention_and_threads_are_their_own() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let env = start(&gateway).await;
    env.discord.set_member_count(4); // the bot and three people
    gateway.dispatch("MESSAGE_CREATE", message("1300000000000000011", "C2", Some("G1"), "U1", "deploy is red", &[]));
    gateway.dispatch("MESSAGE_CREATE", message("1300000000000000012", "C2", Some("G1"), "U2", "looking into it", &[]));
    wait_for("two observed messages", Duration::from_secs(20), || async {
        let events = env.admin("/api/channels/discord:G1:C2/events").await;
        let events = events.as_array().cloned().unwrap_or_default();
        (events.len() == 2 && events.iter().all(|event| event["decision"] == "observe")).then_some(())
    })
    .await;

    env.llm.reply("It was the migration.");
    let ask =
        message("1300000000000000013", "C2", Some("G1"), "U3", "<@900000000000000001> what happened?", &[BOT_USER_ID]);
    gateway.dispatch("MESSAGE_CREATE", ask);
    posts(&env, "C2", 1).await;
    let prompt = all_message_text(&env.llm.requests()[0]);
    assert!(prompt.contains("deploy is red") && prompt.contains("looking into it"), "recent context: {prompt}");

    env.llm.reply("Hi in private.");
    gateway.dispatch("MESSAGE_CREATE", message("1300000000000000014", "D1", None, "U1", "hello", &[]));
    let direct = posts(&env, "D1", 1).await;
    assert_eq!(direct[0]["content"], "Hi in private.");
    assert!(direct[0].get("message_reference").is_none(), "a DM needs no quote");

    let mut in_thread = message("1300000000000000015", "T1", Some("G1"), "U1", "a side question", &[]);
    in_thread["position"] = json!(1);
    gateway.dispatch("MESSAGE_CREATE", in_thread);
    wait_for("the thread's own conversation", Duration::from_secs(20), || async {
        let events = env.admin("/api/channels/discord:G1:T1/events").await;
        let event = events.as_array().and_then(|events| events.first().cloned())?;
        Some(event).filter(|event| event["event"]["thread"] == "T1")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_stays_healthy_through_drops_zombies_reconnects_and_invalid_sessions() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let env = start(&gateway).await;
    env.llm.reply("first");
    let first = message("1300000000000000021", "C3", Some("G1"), "U1", "<@900000000000000001> one", &[BOT_USER_ID]);
    let first_seq = gateway.dispatch("MESSAGE_CREATE", first.clone());
    posts(&env, "C3", 1).await;

    // Heartbeats keep coming at about the interval, carrying the last seq. (Three
    // intervals of slack: on a loaded two-core machine a 600 ms timer once fired
    // a second late; a stalled heartbeat loop sends none at all.)
    gateway.wait_until("four heartbeats", Duration::from_secs(20), |gateway| gateway.heartbeats().len() >= 4).await;
    let beats = gateway.heartbeats();
    for pair in beats.windows(2).skip(1) {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap < Duration::from_millis(HEARTBEAT_MS * 3), "a heartbeat came {gap:?} after the one before");
    }
    assert_eq!(beats.last().unwrap().2, json!(first_seq));

    // A dropped connection RESUMEs the session at its seq; a replay is not answered again.
    gateway.drop_connection();
    gateway.wait_until("a RESUME", Duration::from_secs(20), |gateway| gateway.resumes().len() == 1).await;
    let resume = &gateway.resumes()[0];
    assert_eq!((resume["session_id"].as_str(), resume["seq"].as_u64()), (Some("session-1"), Some(first_seq)));
    assert_eq!(resume["token"], TOKEN);
    gateway.wait_until("the resumed socket", Duration::from_secs(10), |gateway| gateway.is_connected()).await;
    gateway.dispatch_with_seq(first_seq, "MESSAGE_CREATE", first);
    env.settle().await;
    assert_eq!(env.discord.calls("/channels/C3/messages").len(), 1, "the replayed event was answered once");

    // Op 7 (Reconnect): RESUME again.
    gateway.send_raw(json!({"op": 7, "d": null}));
    gateway.wait_until("a second RESUME", Duration::from_secs(20), |gateway| gateway.resumes().len() == 2).await;

    // A zombie (no ACKs): closed and RESUMEd.
    gateway.set_ack_heartbeats(false);
    gateway
        .wait_until("a RESUME after missing ACKs", Duration::from_secs(20), |gateway| gateway.resumes().len() == 3)
        .await;
    gateway.set_ack_heartbeats(true);

    // Op 9, not resumable: a fresh IDENTIFY.
    gateway.send_raw(json!({"op": 9, "d": false}));
    ready(&env, &gateway, 2).await;

    // 4004 (bad token): no reconnect loop, and the status says why.
    let connections = gateway.connections();
    gateway.close(4004, "Authentication failed.");
    let status = wait_for("the gateway to stop", Duration::from_secs(20), || async {
        let status = env.admin("/api/discord/gateway").await;
        status["failure"].is_string().then_some(status)
    })
    .await;
    assert!(status["failure"].as_str().unwrap().contains("4004"), "{status}");
    assert_eq!(status["connected"], false);
    tokio::time::sleep(Duration::from_secs(3)).await;
    env.cron().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(gateway.connections(), connections, "a bad token is not retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gateway_survives_a_dev_server_restart_and_resumes_without_identifying() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let mut env = start(&gateway).await;
    env.llm.reply("before");
    let seq = gateway.dispatch(
        "MESSAGE_CREATE",
        message("1300000000000000031", "C4", Some("G1"), "U1", "<@900000000000000001> hi", &[BOT_USER_ID]),
    );
    posts(&env, "C4", 1).await;

    env.crash_and_restart().await;
    env.cron().await; // the cron trigger makes sure the Gateway runs
    gateway
        .wait_until("a RESUME after the restart", Duration::from_secs(30), |gateway| gateway.resumes().len() == 1)
        .await;
    let resume = &gateway.resumes()[0];
    assert_eq!(resume["session_id"], "session-1");
    // The seq is saved every few seconds, not every frame: the RESUME may name
    // an older one, and the fake replays what came after it.
    assert!(resume["seq"].as_u64().is_some_and(|saved| (1..=seq).contains(&saved)), "{resume}");
    assert_eq!(gateway.identifies().len(), 1, "no new IDENTIFY");

    env.llm.reply("after");
    gateway.dispatch(
        "MESSAGE_CREATE",
        message("1300000000000000032", "C4", Some("G1"), "U1", "<@900000000000000001> still there?", &[BOT_USER_ID]),
    );
    assert_eq!(posts(&env, "C4", 2).await[1]["content"], "after", "a replayed message is not answered again");
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_while_discord_holds_a_reply_sends_it_again_and_discord_keeps_one() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let mut env = start(&gateway).await;
    env.llm.reply("only one copy");
    // Discord takes the message, but its answer never reaches the Worker.
    env.discord.hang_next("/channels/C5/messages", true);
    gateway.dispatch(
        "MESSAGE_CREATE",
        message("1300000000000000041", "C5", Some("G1"), "U1", "<@900000000000000001> hi", &[BOT_USER_ID]),
    );
    wait_for("the first post", Duration::from_secs(20), || async {
        (!env.discord.calls("/channels/C5/messages").is_empty()).then_some(())
    })
    .await;
    env.crash_and_restart().await;

    // Sent again after the restart with the same nonce: Discord returns the
    // first copy, so the channel shows one message.
    wait_for("the resend", Duration::from_secs(30), || async {
        (env.discord.calls("/channels/C5/messages").len() >= 2).then_some(())
    })
    .await;
    env.settle().await;
    let calls = env.discord.calls("/channels/C5/messages");
    assert_eq!(calls.len(), 2, "the interrupted call and one resend");
    assert_eq!(calls[0]["nonce"], calls[1]["nonce"], "the resend carries the same nonce");
    assert_eq!(posts(&env, "C5", 1).await.len(), 1, "one message in the channel");
    assert_eq!(env.llm.requests().len(), 1, "the model was not asked again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_answer_in_a_channel_is_posted_once_and_edited_into_the_whole_answer() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let env = start_with(&gateway, &[("STREAM_REPLIES", "discord")]).await;
    let pace = crate::harness::fake_llm::Pace {
        first: Duration::from_millis(300),
        every: Duration::from_millis(40),
        chars: 8,
    };
    env.llm.set_pace(pace);
    let answer = "Streaming in a guild channel works like this: post the first words, then edit. ".repeat(4);
    env.llm.reply(&answer);
    let mention =
        message("1300000000000000061", "C6", Some("G1"), "U1", "<@900000000000000001> explain", &[BOT_USER_ID]);
    gateway.dispatch("MESSAGE_CREATE", mention);
    let whole = answer.trim_end().to_string();
    wait_for("the whole answer in C6", Duration::from_secs(30), || async {
        let shown: Vec<String> = env.discord.shown().into_iter().map(|message| message.text).collect();
        (shown == [whole.clone()]).then_some(())
    })
    .await;
    let posts = env.discord.calls("/channels/C6/messages");
    assert_eq!(posts.len(), 1, "one post");
    assert!(posts[0]["content"].as_str().unwrap().len() < whole.len(), "its first words, not the whole");
    assert_eq!(posts[0]["message_reference"]["message_id"], "1300000000000000061", "a reply to the mention");
    let edits: Vec<_> = env.discord.requests().into_iter().filter(|call| call.method == "PATCH").collect();
    assert!(edits.len() >= 2 && edits.iter().all(|call| call.path.starts_with("/api/v10/channels/C6/messages/")));
    assert_eq!(edits.last().unwrap().body["content"], whole.as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_attachment_is_fetched_from_discords_host_and_nowhere_else() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let env = start(&gateway).await;
    let csv = b"region,sales\nnorth,120\n".to_vec();
    env.discord.serve_file("/attachments/1/2/sales.csv", csv.clone());
    env.llm.reply("Thanks for the file.");
    let mut mention =
        message("1300000000000000071", "C7", Some("G1"), "U1", "<@900000000000000001> a file", &[BOT_USER_ID]);
    mention["attachments"] = json!([
        {"id": "A1", "filename": "sales.csv", "size": csv.len(), "content_type": "text/csv",
         "url": format!("{}/attachments/1/2/sales.csv", env.discord.base_url)},
        {"id": "A2", "filename": "elsewhere.csv", "size": 10, "url": format!("{}/attachments/x.csv", env.llm.base_url)}
    ]);
    gateway.dispatch("MESSAGE_CREATE", mention);
    posts(&env, "C7", 1).await;
    let prompt = all_message_text(&env.llm.requests()[0]);
    let kept =
        format!("sales.csv (text/csv, {} B, id {})", csv.len(), edgebot::files::rules::file_id("discord:G1:C7", "A1"));
    assert!(prompt.contains(&kept), "{prompt}");
    assert!(prompt.contains("elsewhere.csv (not kept: it could not be downloaded)"), "{prompt}");
    let fetched: Vec<_> =
        env.discord.requests().into_iter().filter(|call| call.path.starts_with("/attachments/")).collect();
    assert_eq!(fetched.len(), 1, "only Discord's own host, and without the bot token");
    assert_eq!(fetched[0].authorization, None);
}
