//! An agent's rooms (issue 36): a Slack workspace, a Discord channel and a
//! web-chat invitation claimed by the agent `ops` get answers from ops
//! (its identity, its conversation keys), while other workspaces, channels
//! and the deployment's `WEB_CHAT_TOKEN` stay the default agent's; a room
//! another agent holds is a 409; ops's bot token and invitation never reach
//! a reply or the Worker's log.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::chat_socket::{guest_cookie, say};
use crate::harness::{all_message_text, discord_ask, slack_callback, wait_for, TestEnv};

/// 32 bytes, base64: the key bot tokens and invitations are sealed with (SLACK_TOKEN_KEY).
const TOKEN_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const INVITE: &str = "web-chat-invitation-for-default";
const OPS_SOUL: &str = "SOUL-OPS you are Ops, the operations agent";
const DEFAULT_SOUL: &str = "SOUL-DEFAULT you are the house agent";
const OPS_TOKEN: &str = "3333:ops-bot-token-never-logged";

/// A Slack DM from workspace `team` (a new event `n`).
fn slack_dm(team: &str, n: u64, text: &str) -> Value {
    let event = json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
                       "text": text, "ts": format!("1795000000.{n:06}")});
    let mut callback = slack_callback(&format!("EvRooms{n}"), event);
    callback["team_id"] = json!(team);
    callback["authorizations"][0]["team_id"] = json!(team);
    callback
}

/// A Discord `/ask` in guild channel `channel`.
fn discord_in(channel: &str, id: &str, text: &str) -> Value {
    let mut ask = discord_ask(id, text);
    ask["channel_id"] = json!(channel);
    ask
}

/// Waits for the `count`th model request and returns its text.
async fn turn(env: &TestEnv, count: usize) -> String {
    wait_for(&format!("model request {count}"), Duration::from_secs(30), || async {
        env.llm.requests().get(count - 1).map(all_message_text)
    })
    .await
}

async fn set_soul(env: &TestEnv, query: &str, soul: &str) {
    let path = format!("/api/identity/soul{query}");
    let (status, saved) = env.admin_send(Method::PUT, &path, Some(json!({ "text": soul }))).await;
    assert_eq!(status, 200, "{saved}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agents_workspace_channel_and_invitation_are_its_own_and_the_rest_stays_the_defaults() {
    let env =
        TestEnv::start_with(&[("SLACK_TOKEN_KEY", TOKEN_KEY), ("WEB_CHAT_TOKEN", INVITE), ("LLM_TIMEOUT_MS", "10000")])
            .await;
    for agent in ["ops", "sales"] {
        let (status, made) = env.admin_send(Method::POST, "/api/agents", Some(json!({ "id": agent }))).await;
        assert_eq!(status, 200, "{made}");
    }
    let bot = json!({ "token": OPS_TOKEN, "secret": "ops-webhook-secret", "username": "ops_bot" });
    assert_eq!(env.admin_send(Method::PUT, "/api/agents/ops/telegram", Some(bot)).await.0, 200);
    set_soul(&env, "?agent=ops", OPS_SOUL).await;
    set_soul(&env, "", DEFAULT_SOUL).await;

    // ops claims workspace T9 and Discord channel 1100; sales may not take them; bad ids are 400s.
    let rooms = json!({ "slack_teams": ["T9"], "discord_channels": ["1100"] });
    let (status, ops) = env.admin_send(Method::PUT, "/api/agents/ops/rooms", Some(rooms)).await;
    assert_eq!((status, &ops["rooms"]), (200, &json!({ "slack_teams": ["T9"], "discord_channels": ["1100"] })));
    let taken = json!({ "slack_teams": ["T5", "T9"] });
    let (status, refused) = env.admin_send(Method::PUT, "/api/agents/sales/rooms", Some(taken)).await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused.to_string().contains("slack:T9"), "{refused}");
    for bad in [json!({ "slack_teams": ["t9"] }), json!({ "discord_channels": ["C1"] }), json!({ "rooms": [] })] {
        assert_eq!(env.admin_send(Method::PUT, "/api/agents/sales/rooms", Some(bad.clone())).await.0, 400, "{bad}");
    }
    assert_eq!(env.admin_send(Method::PUT, "/api/agents/default/rooms", Some(json!({}))).await.0, 400);
    let listed = env.admin("/api/agents").await;
    let sales = listed["agents"].as_array().unwrap().iter().find(|agent| agent["id"] == "sales").unwrap().clone();
    assert_eq!(sales["rooms"], json!({ "slack_teams": [], "discord_channels": [] }), "the 409 changed nothing");

    // Slack: workspace T9 is ops's; its answer echoes ops's bot token, which never goes out.
    env.llm.reply(&format!("Ops here, my token is {OPS_TOKEN}"));
    assert_eq!(env.slack_event(&slack_dm("T9", 1, "who are you?")).await.status(), 200);
    let ops_turn = turn(&env, 1).await;
    assert!(ops_turn.contains(OPS_SOUL) && !ops_turn.contains(DEFAULT_SOUL), "ops's identity: {ops_turn}");
    let posts = wait_for("ops's Slack answer", Duration::from_secs(20), || async {
        let posts = env.slack.calls("/chat.postMessage");
        (!posts.is_empty()).then_some(posts)
    })
    .await;
    let posted = posts[0].to_string();
    assert!(posted.contains("Ops here") && !posted.contains(OPS_TOKEN), "redacted: {posted}");
    let ops_history = env.admin("/api/channels/agent:ops:slack:T9:D1/events").await;
    assert!(ops_history.to_string().contains("who are you?"), "ops's conversation: {ops_history}");
    assert_eq!(env.admin("/api/channels/slack:T9:D1/events").await, json!([]), "not the default's");

    // Workspace T1 stays the default's.
    env.llm.reply("Default here");
    assert_eq!(env.slack_event(&slack_dm("T1", 2, "and you?")).await.status(), 200);
    let default_turn = turn(&env, 2).await;
    assert!(default_turn.contains(DEFAULT_SOUL) && !default_turn.contains(OPS_SOUL), "{default_turn}");
    assert!(!default_turn.contains("who are you?"), "ops's Slack history is not the default's");

    // Discord: channel 1100 is ops's, channel 1200 the default's.
    for (count, channel, soul, other) in [(3, "1100", OPS_SOUL, DEFAULT_SOUL), (4, "1200", DEFAULT_SOUL, OPS_SOUL)] {
        env.llm.reply("Noted.");
        let ask = discord_in(channel, &format!("880{count}"), "status?");
        assert_eq!(env.discord_interaction(&ask).await.status(), 200);
        let text = turn(&env, count).await;
        assert!(text.contains(soul) && !text.contains(other), "Discord channel {channel}: {text}");
    }

    // The web chat: ops's invitation (shown once) opens a chat with ops; WEB_CHAT_TOKEN with the default.
    let (status, made) = env.admin_send(Method::POST, "/api/agents/ops/invitation", Some(json!({}))).await;
    assert_eq!(status, 200, "{made}");
    let invitation = made["invitation"].as_str().unwrap().to_string();
    let listed = env.admin("/api/agents").await.to_string();
    assert!(!listed.contains(&invitation) && listed.contains("\"web_invitation\":true"), "{listed}");
    for (count, invite, soul, other) in
        [(5, invitation.as_str(), OPS_SOUL, DEFAULT_SOUL), (6, INVITE, DEFAULT_SOUL, OPS_SOUL)]
    {
        env.llm.reply("Hello, guest.");
        let cookie = guest_cookie(&env, invite).await;
        let lines = say(&env, &cookie, "hi there").await;
        assert!(lines.iter().any(|(_, line)| line.to_string().contains("Hello, guest.")), "{lines:?}");
        let text = turn(&env, count).await;
        assert!(text.contains(soul) && !text.contains(other), "web chat {count}: {text}");
    }
    let url = format!("{}/api/chat/session", env.worker.base_url);
    let wrong = env.client.post(url).json(&json!({ "token": format!("{invitation}x") })).send().await.unwrap();
    assert_eq!(wrong.status(), 401, "a wrong invitation opens nothing");

    env.settle().await;
    let log = env.worker.log();
    assert!(!log.contains(OPS_TOKEN) && !log.contains(&invitation), "no agent's secret in the Worker's log");
}
