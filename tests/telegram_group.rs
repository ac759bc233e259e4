//! The channel in Telegram groups: engagement, watched context, the peer-bot
//! loop guard, coalescing, non-blocking acknowledgements, crash recovery.

use std::time::Duration;

use serde_json::Value;

use crate::harness::{
    dm_update, group_reply_update, group_update, turn_message, wait_for, Scripted, TestEnv, GROUP_CHAT,
};

const ADA: (i64, &str, bool) = (11, "Ada", false);
const BO: (i64, &str, bool) = (12, "Bo", false);
const CY: (i64, &str, bool) = (14, "Cy", false);
const PEER_BOT: (i64, &str, bool) = (13, "HelperBot", true);
const LOOP_NOTICE: &str = "trading messages with other bots";
const SYSTEM_FENCE: &str = "[SYSTEM MESSAGE — not from a human]";

fn group_key() -> String {
    format!("telegram:{GROUP_CHAT}")
}

async fn wait_for_requests(env: &TestEnv, count: usize) -> Vec<Value> {
    wait_for(&format!("{count} model request(s)"), Duration::from_secs(20), || async {
        let requests = env.llm.requests();
        (requests.len() >= count).then_some(requests)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn watched_messages_come_back_as_recent_context_when_the_bot_is_addressed() {
    let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "300")]).await;
    env.llm.reply("Hello Ada.");
    env.telegram_update(&group_update(1, ADA, "hi", true)).await;
    env.wait_for_sent(1).await;

    for (update, author, text) in [(2, BO, "the deploy failed at 3pm"), (3, CY, "rolled back, all green now")] {
        let response = env.telegram_update(&group_update(update, author, text, false)).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.json::<Value>().await.unwrap()["decision"], "observe");
    }
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "watching costs no model call");

    env.llm.reply("Cy rolled it back after the 3pm failure.");
    env.telegram_update(&group_update(4, ADA, "what happened today?", true)).await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["chat_id"], GROUP_CHAT);
    assert_eq!(sent[1]["reply_parameters"]["message_id"], 40, "the reply quotes the message it answers");

    let turn = turn_message(&env.llm.requests()[1]);
    let recent = turn.find("## Recent context (not addressed to you").expect("recent context section");
    let first = turn.find("Bo: the deploy failed at 3pm").expect("first watched message");
    let second = turn.find("Cy: rolled back, all green now").expect("second watched message");
    let current = turn.find("## Current message(s) (addressed to you)").expect("current section");
    let asked = turn.find("Ada: what happened today? @edge_bot").expect("the addressed message");
    assert!(recent < first && first < second && second < current && current < asked, "{turn}");
    assert!(turn.contains(SYSTEM_FENCE) && turn.contains("group chat"), "several humans: the group-chat nudge");

    // A reply to another person's message is observed; a reply to the bot's message engages.
    let to_ada = env.telegram_update(&group_reply_update(5, BO, "agreed", (40, ADA.0))).await;
    assert_eq!(to_ada.json::<Value>().await.unwrap()["decision"], "observe");
    env.llm.reply("It was the database migration.");
    let bot_message_id = 502; // the fake Telegram numbers sent messages from 501
    let to_bot = env.telegram_update(&group_reply_update(6, BO, "why did it fail?", (bot_message_id, 4242))).await;
    assert_eq!(to_bot.json::<Value>().await.unwrap()["reason"], "reply to the bot");
    env.wait_for_sent(3).await;

    let events = env.admin(&format!("/api/channels/{}/events", group_key())).await;
    let summary: Vec<(&str, &str)> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|event| (event["decision"].as_str().unwrap(), event["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("engage", "mention"),
            ("observe", "not addressed"),
            ("observe", "not addressed"),
            ("engage", "mention"),
            // Telegram names the exact message replied to: the bot having spoken here changes nothing.
            ("observe", "reply to someone else's message"),
            ("engage", "reply to the bot"),
        ],
        "every inbound is recorded with its decision and why"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_peer_bot_ping_pong_ends_with_the_guard_notice_and_no_reply() {
    let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100")]).await;
    // Two humans talking to each other (replies to each other are observed): a busy group.
    for (update, author, parent) in [(1, ADA, (5, BO.0)), (2, BO, (10, ADA.0))] {
        let response = env.telegram_update(&group_reply_update(update, author, "hi", parent)).await;
        assert_eq!(response.json::<Value>().await.unwrap()["decision"], "observe");
    }

    for round in 1..=5usize {
        if round < 5 {
            env.llm.reply(&format!("pong {round}"));
        } else {
            env.llm.push(Scripted::Text("NO_REPLY".into()));
        }
        let response = env.telegram_update(&group_update(10 + round as i64, PEER_BOT, "ping", true)).await;
        assert_eq!(response.json::<Value>().await.unwrap()["decision"], "engage", "peer bots reach the bot by mention");
        let requests = wait_for_requests(&env, round).await;
        if round < 5 {
            env.wait_for_sent(round).await;
            let turn = turn_message(&requests[round - 1]);
            assert!(!turn.contains(LOOP_NOTICE), "round {round} is not guarded yet");
        }
    }
    env.settle().await;
    let fifth = turn_message(&env.llm.requests()[4]);
    assert!(fifth.contains(SYSTEM_FENCE) && fifth.contains(LOOP_NOTICE), "{fifth}");
    assert!(fifth.contains("NO_REPLY"));
    assert!(!fifth.contains("group chat"), "one notice per turn: the guard replaces the nudge");
    assert_eq!(env.telegram.calls("sendMessage").len(), 4, "NO_REPLY sends nothing");

    // A human speaking clears the guard.
    env.llm.reply("hi Ada");
    env.telegram_update(&group_update(20, ADA, "ok bots, enough", true)).await;
    let requests = wait_for_requests(&env, 6).await;
    assert!(!turn_message(&requests[5]).contains(LOOP_NOTICE));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_five_group_messages_makes_one_model_call() {
    let env = TestEnv::start().await;
    env.llm.reply("answering all five");
    for index in 0..5 {
        let author = if index % 2 == 0 { ADA } else { BO };
        let response =
            env.telegram_update(&group_update(100 + index, author, &format!("question {index}"), true)).await;
        assert_eq!(response.status(), 200);
    }
    env.wait_for_sent(1).await;
    env.settle().await;
    let requests = env.llm.requests();
    assert_eq!(requests.len(), 1, "the burst is one turn");
    let turn = turn_message(&requests[0]);
    for index in 0..5 {
        assert!(turn.contains(&format!("question {index}")), "{turn}");
    }
    assert_eq!(env.telegram.calls("sendMessage").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_model_does_not_hold_up_acknowledgements_and_late_messages_get_the_next_turn() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    env.llm.push(Scripted::SlowReply(Duration::from_secs(3), "first answer".into()));
    env.llm.reply("second answer");

    env.telegram_update(&dm_update(1, 21, "first")).await;
    wait_for("the model call to start", Duration::from_secs(20), || async { (env.llm.in_flight() == 1).then_some(()) })
        .await;
    for update in 2..=4 {
        let response = env.telegram_update(&dm_update(update, 21, &format!("more {update}"))).await;
        assert_eq!(response.status(), 200);
    }
    assert_eq!(env.llm.in_flight(), 1, "all three were acknowledged while the model was still thinking");

    let sent = env.wait_for_sent(2).await;
    env.settle().await;
    assert_eq!(sent.len(), 2);
    let requests = env.llm.requests();
    assert_eq!(requests.len(), 2, "the late messages make one next turn, each answered once");
    let second = turn_message(&requests[1]);
    for update in 2..=4 {
        assert!(second.contains(&format!("more {update}")), "{second}");
    }
    assert!(!second.contains("Ada: first\n"), "the first message is history now, not current");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_acknowledgement_still_answers_exactly_once() {
    let mut env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "30000")]).await;
    // The first worker never gets its answer: it is killed while the model thinks.
    env.llm.push(Scripted::SlowReply(Duration::from_secs(60), "never delivered".into()));
    env.llm.reply("answered after the restart");

    let response = env.telegram_update(&dm_update(1, 31, "are you still there?")).await;
    assert_eq!(response.status(), 200);
    wait_for("the model call to start", Duration::from_secs(20), || async { (env.llm.in_flight() == 1).then_some(()) })
        .await;
    env.crash_and_restart().await;

    let sent = env.wait_for_sent(1).await;
    assert_eq!(sent[0]["text"], "answered after the restart");
    env.settle().await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 1, "exactly once");
    // The reply's row is stored after its send.
    let history = env.history_when("telegram:31", "the reply in the history", |rows| rows.len() >= 2).await;
    assert_eq!(history.len(), 2, "one inbound, one reply: {history:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_member_count_decides_whether_a_lone_speaker_is_alone() {
    for (members, expected) in [(2, "engage"), (6, "observe")] {
        let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100"), ("STICKINESS", "off")]).await;
        env.telegram.set_member_count(members);
        env.llm.reply("hello Ada");
        env.telegram_update(&group_update(1, ADA, "hi", true)).await;
        env.wait_for_sent(1).await;
        assert_eq!(env.telegram.calls("getChatMemberCount").len(), 1, "the turn read the member count");

        let response = env.telegram_update(&group_update(2, ADA, "thanks", false)).await;
        let decision: Value = response.json().await.unwrap();
        assert_eq!(decision["decision"], expected, "{members} members (bot included): {decision}");
    }
}

/// The decision log's (decision, reason) pairs, once nothing is held any more.
async fn decided_events(env: &TestEnv, count: usize) -> Vec<Value> {
    wait_for(&format!("{count} decided inbound(s)"), Duration::from_secs(20), || async {
        let events = env.admin(&format!("/api/channels/{}/events", group_key())).await;
        let events = events.as_array().cloned().unwrap_or_default();
        (events.len() == count && events.iter().all(|event| event["decision"] != "held")).then_some(events)
    })
    .await
}

fn summary(events: &[Value]) -> Vec<(&str, &str)> {
    events.iter().map(|event| (event["decision"].as_str().unwrap(), event["reason"].as_str().unwrap())).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_peer_bot_speaking_does_not_end_the_lone_humans_fallback() {
    let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100"), ("STICKINESS", "off")]).await;
    // Ada, HelperBot and the bot: Telegram's count includes both bots.
    env.telegram.set_member_count(3);
    env.llm.reply("hello Ada");
    env.telegram_update(&group_update(1, ADA, "hi", true)).await;
    env.wait_for_sent(1).await;
    assert_eq!(env.telegram.calls("getChatMemberCount").len(), 1, "the turn read the count before HelperBot spoke");

    let bot = env.telegram_update(&group_update(2, PEER_BOT, "hello everyone", false)).await;
    let bot: Value = bot.json().await.unwrap();
    assert_eq!((bot["decision"].as_str(), bot["reason"].as_str()), (Some("observe"), Some("not addressed")));

    env.llm.reply("Sunny all day.");
    let plain = env.telegram_update(&group_update(3, ADA, "what's the weather like?", false)).await;
    let plain: Value = plain.json().await.unwrap();
    assert_eq!(
        (plain["decision"].as_str(), plain["reason"].as_str()),
        (Some("engage"), Some("solo human")),
        "a peer bot is no second human: {plain}"
    );
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["text"], "Sunny all day.");
    let turn = turn_message(&env.llm.requests()[1]);
    assert!(!turn.contains("group chat"), "one human: no group-chat nudge: {turn}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lone_human_is_answered_until_a_second_human_joins_and_speaks() {
    let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100"), ("STICKINESS", "off")]).await;
    env.telegram.set_member_count(2); // Ada and the bot
    env.llm.reply("hello Ada");
    let first = env.telegram_update(&group_update(1, ADA, "is anyone here?", false)).await;
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["decision"], "held", "the count is confirmed in the alarm, not on the webhook: {first}");
    env.wait_for_sent(1).await;

    env.telegram.set_member_count(3); // Bo joins
    for (update, author, text) in [(2, BO, "hi all, just joined"), (3, ADA, "welcome! lunch?")] {
        let response = env.telegram_update(&group_update(update, author, text, false)).await;
        let decision: Value = response.json().await.unwrap();
        assert_eq!(decision["decision"], "observe", "{}: {decision}", author.1);
    }
    env.settle().await;
    let events = decided_events(&env, 3).await;
    assert_eq!(
        summary(&events),
        vec![("engage", "solo human"), ("observe", "not addressed"), ("observe", "not addressed")],
        "alone, Ada needs no mention; with Bo here it is strict"
    );
    let note = events[0]["membership"].as_str().unwrap_or_default();
    assert!(note.starts_with("member count read before deciding, at ") && note.ends_with(": 1 human(s)"), "{note}");
    assert_eq!(env.llm.requests().len(), 1, "only Ada's first line was answered");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_groups_first_message_is_acknowledged_without_waiting_on_the_platform() {
    const SLOW_COUNT: Duration = Duration::from_millis(1_100);
    for (members, expected) in [(6, ("observe", "not addressed")), (2, ("engage", "solo human"))] {
        let env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100")]).await;
        env.telegram.set_member_count(members);
        env.telegram.delay_next("/getChatMemberCount", SLOW_COUNT);
        env.llm.reply("looking");

        let started = std::time::Instant::now();
        let first = env.telegram_update(&group_update(1, ADA, "is the build broken?", false)).await;
        let took = started.elapsed();
        let first: Value = first.json().await.unwrap();
        assert_eq!(
            (first["decision"].as_str(), first["reason"].as_str()),
            (Some("held"), Some("awaiting the member count"))
        );
        assert!(took < Duration::from_millis(800), "acknowledged in {took:?}, not after the platform's {SLOW_COUNT:?}");
        // A mention while the first waits is held behind it, so they keep their order.
        let second = env.telegram_update(&group_update(2, ADA, "CI is red", true)).await;
        assert_eq!(second.json::<Value>().await.unwrap()["decision"], "held");

        let events = decided_events(&env, 2).await;
        assert_eq!(summary(&events), vec![expected, ("engage", "mention")], "{members} members");
        let note = events[0]["membership"].as_str().unwrap_or_default();
        assert!(
            note.contains("ms after the message") && note.ends_with(&format!(": {} human(s)", members - 1)),
            "{note}"
        );
        assert_eq!(env.telegram.calls("getChatMemberCount").len(), 1, "read once, in the alarm");

        // The model is called once, after both were decided with the count.
        env.wait_for_sent(1).await;
        env.settle().await;
        let requests = env.llm.requests();
        assert_eq!(requests.len(), 1);
        let turn = turn_message(&requests[0]);
        let current = turn.find("## Current message(s)").expect("current section");
        let asked = turn.find("Ada: CI is red").expect("the mention");
        let first_line = turn.find("Ada: is the build broken?").expect("the first line");
        match members {
            // Observed with the count of five humans: shown as context, before what is addressed.
            6 => assert!(first_line < current && current < asked, "{turn}"),
            _ => assert!(current < first_line && first_line < asked, "both addressed, in order: {turn}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_while_the_member_count_is_read_loses_nothing_and_answers_once() {
    let mut env = TestEnv::start_with(&[("COALESCE_DEBOUNCE_MS", "100")]).await;
    env.telegram.set_member_count(2);
    env.telegram.hang_next("/getChatMemberCount", true);
    env.llm.reply("hello Ada");
    let first = env.telegram_update(&group_update(1, ADA, "is anyone here?", false)).await;
    assert_eq!(first.json::<Value>().await.unwrap()["decision"], "held");
    wait_for("the alarm to ask for the member count", Duration::from_secs(20), || async {
        (!env.telegram.calls("getChatMemberCount").is_empty()).then_some(())
    })
    .await;
    env.crash_and_restart().await;

    let events = decided_events(&env, 1).await;
    assert_eq!(summary(&events), vec![("engage", "solo human")], "decided after the restart, with the count");
    assert_eq!(env.telegram.calls("getChatMemberCount").len(), 2, "read again by the restarted alarm");
    env.wait_for_sent(1).await;
    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 1, "answered exactly once");
    assert_eq!(env.llm.requests().len(), 1);
}
