//! Exactly once, from the outside: many conversations at once over several
//! connections, and a crash of the runtime while replies are in flight. Every
//! inbound carries a unique token; the echoing model repeats the turn's
//! current messages, so the fake platform's messages show which inbound each
//! answer covered.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::fake_llm::current_section;
use crate::harness::hog::CpuHog;
use crate::harness::worker::{channel_object_where, sqlite};
use crate::harness::{
    dm_update, group_update, now_secs, slack_callback, slack_headers, wait_for, Scripted, TestEnv,
    FAILURE_MESSAGE_START, TELEGRAM_SECRET,
};

/// Concurrent connections, as a busy platform opens.
const CONNECTIONS: usize = 16;

/// A unique, greppable token for message `n` of chat `chat`.
fn token(chat: i64, n: i64) -> String {
    format!("tok{}x{n}z", chat.unsigned_abs())
}

/// Every token in `text`, in order.
fn tokens_in(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("tok") {
        let candidate = &rest[start..];
        match candidate.find('z') {
            Some(end) if candidate[3..end].chars().all(|c| c.is_ascii_digit() || c == 'x') => {
                found.push(candidate[..=end].to_string());
                rest = &candidate[end + 1..];
            }
            _ => rest = &candidate[3..],
        }
    }
    found
}

/// How often each token appears across `texts`.
fn count_tokens<'a>(texts: impl Iterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for text in texts {
        for token in tokens_in(text) {
            *counts.entry(token).or_insert(0) += 1;
        }
    }
    counts
}

/// A group message in chat `chat` from its one human, mentioning the bot or not.
fn group_message(update_id: i64, chat: i64, text: &str, mention: bool) -> Value {
    let mut update = group_update(update_id, (chat.abs() + 7, "Member", false), text, mention);
    update["message"]["chat"]["id"] = chat.into();
    update
}

/// Where the Worker listens now (a restart moves it to another port).
type Address = Arc<Mutex<String>>;

fn address(env: &TestEnv) -> Address {
    Arc::new(Mutex::new(env.worker.base_url.clone()))
}

/// A platform's webhook: Telegram's update or Slack's event callback, signed
/// when it is sent.
#[derive(Clone, Copy)]
enum Platform {
    Telegram,
    Slack,
}

impl Platform {
    fn request(self, client: &reqwest::Client, base: &str, body: &Value) -> reqwest::RequestBuilder {
        let body = body.to_string().into_bytes();
        let request = match self {
            Platform::Telegram => client
                .post(format!("{base}/webhooks/telegram"))
                .header("content-type", "application/json")
                .header("X-Telegram-Bot-Api-Secret-Token", TELEGRAM_SECRET),
            Platform::Slack => {
                let headers = slack_headers(&body, now_secs(), "application/json");
                headers.into_iter().fold(client.post(format!("{base}/webhooks/slack")), |request, (name, value)| {
                    request.header(name, value)
                })
            }
        };
        request.body(body)
    }
}

/// Starts `connections` concurrent senders that post every webhook, each
/// retrying until it is acknowledged (as the platforms do); the handle
/// yields the number of attempts that were not acknowledged.
fn post_all(
    address: &Address,
    platform: Platform,
    updates: Vec<Value>,
    connections: usize,
) -> tokio::task::JoinHandle<usize> {
    let queue = Arc::new(Mutex::new(updates.into_iter()));
    let mut senders = Vec::new();
    for _ in 0..connections {
        let (queue, address, client) = (queue.clone(), address.clone(), reqwest::Client::new());
        senders.push(tokio::spawn(async move {
            let mut refused = 0;
            loop {
                let Some(update) = queue.lock().unwrap().next() else { return refused };
                for attempt in 0.. {
                    assert!(attempt < 600, "a webhook was never acknowledged");
                    let base = address.lock().unwrap().clone();
                    let sent = platform.request(&client, &base, &update).timeout(Duration::from_secs(10)).send().await;
                    if sent.is_ok_and(|response| response.status() == 200) {
                        break;
                    }
                    refused += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    tokio::spawn(async move {
        let mut refused = 0;
        for sender in senders {
            refused += sender.await.expect("sender");
        }
        refused
    })
}

/// The messages Slack holds (a resend after a crash that found its piece
/// adds none).
fn slack_texts(env: &TestEnv) -> Vec<String> {
    env.slack.posted().iter().map(|message| message["text"].as_str().unwrap_or_default().to_string()).collect()
}

/// The texts the fake Telegram was asked to send, each as `[chat] text`.
fn sent_texts(env: &TestEnv) -> Vec<String> {
    env.telegram
        .calls("/sendMessage")
        .iter()
        .map(|call| format!("[{}] {}", call["chat_id"], call["text"].as_str().unwrap_or_default()))
        .collect()
}

/// How often the test fires the every-minute trigger while it waits (the
/// scheduler's minute, shortened as `SWEEP_AFTER_MS` is in these tests).
const CRON_EVERY: Duration = Duration::from_secs(5);

/// Waits until every token in `expected` was sent at least once, or its chat
/// got the apology (or the time is up), firing the sweeper's trigger as the
/// scheduler would; then waits for stragglers that would double one. Returns
/// the counts of what `texts` reads (what the platform shows).
async fn answered(
    env: &TestEnv,
    texts: fn(&TestEnv) -> Vec<String>,
    expected: &[String],
    timeout: Duration,
) -> BTreeMap<String, usize> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut next_cron = tokio::time::Instant::now() + CRON_EVERY;
    loop {
        let texts = texts(env);
        let counts = count_tokens(texts.iter().map(String::as_str));
        let apologised = apologies_by_chat(&texts);
        let settled = |token: &String| counts.contains_key(token) || apologised.contains_key(&chat_of(token));
        if expected.iter().all(settled) || tokio::time::Instant::now() > deadline {
            break;
        }
        if tokio::time::Instant::now() > next_cron {
            env.cron_every_minute().await;
            next_cron = tokio::time::Instant::now() + CRON_EVERY;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    env.settle().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let texts = texts(env);
    count_tokens(texts.iter().map(String::as_str))
}

/// The chat a token was sent in (its number, without a group's sign).
fn chat_of(token: &str) -> String {
    token[3..token.find('x').unwrap_or(token.len())].to_string()
}

/// How many apologies each chat got; the texts carry the chat as `[chat] text`
/// ([`sent_texts`]).
fn apologies_by_chat(texts: &[String]) -> BTreeMap<String, usize> {
    let mut apologies = BTreeMap::new();
    for text in texts {
        if let Some((chat, said)) = text.strip_prefix('[').and_then(|rest| rest.split_once("] ")) {
            if said.contains(FAILURE_MESSAGE_START) {
                *apologies.entry(chat.trim_start_matches('-').to_string()).or_insert(0) += 1;
            }
        }
    }
    apologies
}

/// What became of every acknowledged message: answered (once or twice),
/// apologised for (its chat got the apology instead), or lost (neither).
struct Tally {
    acknowledged: usize,
    answered: usize,
    apologised: usize,
    doubled: Vec<String>,
    lost: Vec<String>,
}

impl Tally {
    fn of(expected: &[String], counts: &BTreeMap<String, usize>, texts: &[String]) -> Tally {
        let apologies = apologies_by_chat(texts);
        let mut tally =
            Tally { acknowledged: expected.len(), answered: 0, apologised: 0, doubled: Vec::new(), lost: Vec::new() };
        for token in expected {
            match counts.get(token) {
                Some(count) => {
                    tally.answered += 1;
                    if *count > 1 {
                        tally.doubled.push(token.clone());
                    }
                }
                None if apologies.contains_key(&chat_of(token)) => tally.apologised += 1,
                None => tally.lost.push(token.clone()),
            }
        }
        tally
    }

    /// One line for the log and the delivery table (docs/delivery.md).
    fn line(&self, what: &str) -> String {
        format!(
            "{what}: {} acknowledged, {} answered, {} apologised, {} doubled, {} lost",
            self.acknowledged,
            self.answered,
            self.apologised,
            self.doubled.len(),
            self.lost.len()
        )
    }
}

/// Where the delivery table (docs/delivery.md) comes from: 2,000 group webhooks over
/// 200 groups and 160 DMs, from 16 connections, with every core busy with
/// other work the whole time.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "loads the whole machine (a CPU hog): `make test` runs it alone"]
async fn under_load_and_a_cpu_hog_every_acknowledged_message_is_answered_exactly_once() {
    // The local runtime is one thread: under this load a model answer can
    // take seconds to be read, which is not what this test is about.
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "20000"), ("SWEEP_AFTER_MS", "20000")]).await;
    env.llm.answer_always(Scripted::Echo);
    // Half the groups mention the bot; in the other half one person talks
    // with the bot (two members), so plain messages engage too.
    env.telegram.set_member_count(2);
    let (groups, per_group, dms, per_dm) = (200, 10, 40, 4);
    let _hog = CpuHog::start();
    let mut updates = Vec::new();
    let mut expected = Vec::new();
    let mut update_id = 1;
    // Interleaved, so every conversation gets messages while its turns run.
    for n in 0..per_group.max(per_dm) {
        for group in 0..groups {
            let chat = -(1_000 + group);
            if n < per_group {
                updates.push(group_message(update_id, chat, &format!("question {}", token(chat, n)), group % 2 == 0));
                expected.push(token(chat, n));
                update_id += 1;
            }
        }
        for dm in 0..dms {
            let chat = 5_000 + dm;
            if n < per_dm {
                updates.push(dm_update(update_id, chat, &format!("hello {}", token(chat, n))));
                expected.push(token(chat, n));
                update_id += 1;
            }
        }
    }
    let refused = post_all(&address(&env), Platform::Telegram, updates, CONNECTIONS).await.expect("senders");
    assert_eq!(refused, 0, "every webhook was acknowledged at the first attempt");

    let counts = answered(&env, sent_texts, &expected, Duration::from_secs(300)).await;
    let tally = Tally::of(&expected, &counts, &sent_texts(&env));
    // Each inbound in the current messages of exactly one model call, too.
    let requests = env.llm.requests();
    let in_turns = count_tokens(requests.iter().map(current_section).collect::<Vec<_>>().iter().map(String::as_str));
    let turned_twice: Vec<(&String, &usize)> = in_turns.iter().filter(|(_, count)| **count > 1).collect();
    println!(
        "{} over {} conversations from {CONNECTIONS} connections, under a CPU hog; {} in two turns, {} model calls",
        tally.line("load test"),
        groups + dms,
        turned_twice.len(),
        requests.len()
    );
    assert!(tally.lost.is_empty(), "acknowledged but neither answered nor apologised for: {:?}", tally.lost);
    assert!(tally.doubled.is_empty(), "answered twice: {:?}", tally.doubled);
    assert!(turned_twice.is_empty(), "in two turns: {turned_twice:?}");
    let asked: usize = counts.keys().filter(|token| expected.contains(token)).count();
    assert_eq!(asked, counts.len(), "nothing was answered that was not asked");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "loads the whole machine (a CPU hog): `make test` runs it alone"]
async fn a_crash_under_a_cpu_hog_while_telegram_replies_are_in_flight_leaves_nobody_in_silence() {
    let mut env = TestEnv::start_with(&[("SWEEP_AFTER_MS", "20000")]).await;
    let _hog = CpuHog::start();
    // As in production: the model takes 0.4 s, Telegram's send 0.3 s.
    env.llm.answer_always(Scripted::Delayed(Duration::from_millis(400), Box::new(Scripted::Echo)));
    env.telegram.set_latency("/sendMessage", Duration::from_millis(300));
    let (chats, per_chat) = (40, 6);
    let mut updates = Vec::new();
    let mut expected = Vec::new();
    for n in 0..per_chat {
        for chat in 0..chats {
            let chat = 7_000 + chat;
            updates.push(dm_update(1 + n * chats + (chat - 7_000), chat, &format!("hi {}", token(chat, n))));
            expected.push(token(chat, n));
        }
    }
    let address = address(&env);
    let senders = post_all(&address, Platform::Telegram, updates, CONNECTIONS);
    // Kill the runtime while the chats talk, replies in flight; start it again.
    wait_for("replies in flight", Duration::from_secs(60), || async {
        (env.telegram.calls("/sendMessage").len() >= 40).then_some(())
    })
    .await;
    env.crash_and_restart().await;
    *address.lock().unwrap() = env.worker.base_url.clone();
    senders.await.expect("senders");

    let counts = answered(&env, sent_texts, &expected, Duration::from_secs(300)).await;
    let texts = sent_texts(&env);
    let tally = Tally::of(&expected, &counts, &texts);
    let marked: Vec<&String> = texts.iter().filter(|text| text.contains(RESEND_NOTE)).collect();
    let marked_tokens = count_tokens(marked.iter().map(|text| text.as_str()));
    println!(
        "{} in {chats} chats, under a CPU hog; {} resent marked as a possible repeat",
        tally.line("crash test"),
        marked.len()
    );
    assert!(tally.lost.is_empty(), "acknowledged but neither answered nor apologised for: {:?}", tally.lost);
    for token in &tally.doubled {
        assert_eq!(counts[token], 2, "{token} was sent more than twice");
        assert_eq!(marked_tokens.get(token), Some(&1), "{token}'s second copy says it may be a repeat");
    }
}

/// The opening of the note a possibly repeated copy carries (prompts/resend_note.md).
const RESEND_NOTE: &str = "↻ Sent again after an interruption";

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_while_slack_replies_are_in_flight_loses_and_doubles_nothing() {
    let mut env = TestEnv::start().await;
    env.llm.answer_always(Scripted::Delayed(Duration::from_millis(400), Box::new(Scripted::Echo)));
    env.slack.set_latency("/chat.postMessage", Duration::from_millis(300));
    let (chats, per_chat) = (20, 6);
    let mut events = Vec::new();
    let mut expected = Vec::new();
    for n in 0..per_chat {
        for chat in 0..chats {
            let (channel, ts) = (format!("D{chat}"), format!("1795000{n:03}.{chat:06}"));
            let text = format!("hi {}", token(chat, n));
            let event = json!({"type": "message", "channel": channel, "channel_type": "im", "user": format!("U{chat}"), "text": text, "ts": ts});
            events.push(slack_callback(&format!("Ev{n}x{chat}"), event));
            expected.push(token(chat, n));
        }
    }
    let address = address(&env);
    let senders = post_all(&address, Platform::Slack, events, CONNECTIONS);
    wait_for("replies in flight", Duration::from_secs(60), || async {
        (env.slack.calls("/chat.postMessage").len() >= 20).then_some(())
    })
    .await;
    env.crash_and_restart().await;
    *address.lock().unwrap() = env.worker.base_url.clone();
    senders.await.expect("senders");

    let counts = answered(&env, slack_texts, &expected, Duration::from_secs(240)).await;
    let lost: Vec<&String> = expected.iter().filter(|token| !counts.contains_key(*token)).collect();
    let doubled: Vec<&String> = counts.iter().filter(|(_, count)| **count > 1).map(|(token, _)| token).collect();
    let looked_up = env.slack.calls("/conversations.history").len();
    println!(
        "slack crash test: {} acknowledged messages in {chats} DMs, {} lost, {} doubled, {looked_up} interrupted pieces looked up",
        expected.len(),
        lost.len(),
        doubled.len()
    );
    assert!(lost.is_empty(), "acknowledged but never answered: {lost:?}");
    assert!(doubled.is_empty(), "Slack holds a second copy of: {doubled:?}");
}

/// The inbox's delivery ids are kept in the object's memory (no index on
/// disk: src/channel/deliveries.rs) and read again from its rows after a
/// start: an observed message and a question retried after a crash are still
/// repeats, and what comes after them is filed under numbers above theirs.
#[tokio::test(flavor = "multi_thread")]
async fn deliveries_retried_after_a_crash_are_still_repeats() {
    let mut env = TestEnv::start().await;
    env.llm.answer_always(Scripted::Echo);
    let chat = -4_210;
    let observed = group_message(1, chat, &format!("chatting {}", token(chat, 1)), false);
    let asked = group_message(2, chat, &format!("bot, {}", token(chat, 2)), true);
    for update in [&observed, &asked] {
        assert_eq!(env.telegram_update(update).await.status(), 200);
    }
    env.wait_for_sent(1).await;
    env.settle().await;

    env.crash_and_restart().await;
    for update in [&observed, &asked] {
        let again: Value = env.telegram_update(update).await.json().await.unwrap();
        assert_eq!(again["duplicate"], true, "{again}");
    }
    assert_eq!(
        env.telegram_update(&group_message(3, chat, &format!("bot, {}", token(chat, 3)), true)).await.status(),
        200
    );
    env.wait_for_sent(2).await;
    env.settle().await;

    let texts = sent_texts(&env);
    let counts = count_tokens(texts.iter().map(String::as_str));
    assert_eq!(counts.get(&token(chat, 2)), Some(&1), "the question answered once: {texts:?}");
    assert_eq!(counts.get(&token(chat, 3)), Some(&1), "the next one answered: {texts:?}");
    assert_eq!(env.llm.requests().len(), 2);
    let events = env.admin(&format!("/api/channels/telegram:{chat}/events")).await;
    let seqs: Vec<i64> = events.as_array().unwrap().iter().filter_map(|event| event["seq"].as_i64()).collect();
    assert_eq!(seqs.len(), 3, "one row each: {events}");
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "numbered on in arrival order: {seqs:?}");
}

/// A group the bot only observes settles no turn, yet its inbox keeps seven
/// days too: the sweep after the conversation index's flush takes the rows
/// past them, and the object's memory forgets their ids with them (as the
/// table's index did: a delivery that old is new again).
#[tokio::test(flavor = "multi_thread")]
async fn an_observed_group_forgets_rows_past_seven_days_and_their_ids() {
    let mut env = TestEnv::start().await;
    let chat = -4_211;
    let key = format!("telegram:{chat}");
    let first = group_message(1, chat, "an old line", false);
    for update in [&first, &group_message(2, chat, "another old line", false)] {
        assert_eq!(env.telegram_update(update).await.status(), 200);
    }
    env.settle().await;
    // Eight days on, as far as the rows can tell.
    env.while_stopped(|state_dir| {
        let file = channel_object_where(state_dir, &format!("inbox WHERE event LIKE '%\"{key}\"%'"));
        sqlite(&file, "UPDATE inbox SET received_at = received_at - 8 * 86400000")
    })
    .await;
    let again: Value = env.telegram_update(&first).await.json().await.unwrap();
    assert_eq!(again["duplicate"], true, "still held before the sweep: {again}");
    assert_eq!(env.telegram_update(&group_message(3, chat, "today", false)).await.status(), 200);

    let events = format!("/api/channels/{key}/events");
    let kept = wait_for("the old rows swept after the index's flush", Duration::from_secs(30), || async {
        let listed = env.admin(&events).await;
        (listed.as_array().unwrap().len() == 1).then_some(listed)
    })
    .await;
    assert_eq!(kept[0]["delivery_id"], "3", "today's row kept: {kept}");
    let after: Value = env.telegram_update(&first).await.json().await.unwrap();
    assert!(after["duplicate"].is_null(), "a delivery swept is new again: {after}");
    assert_eq!(env.admin(&events).await.as_array().unwrap().len(), 2);
}
