//! The Discord Gateway sharded: K shard objects against the fake Gateway,
//! which routes each guild's events to shard `(guild_id >> 22) % K` as
//! Discord does. Each shard IDENTIFYs once, in bucket order, 5 s apart per
//! rate-limit key; a guild's message reaches one shard and is answered once;
//! a dropped shard RESUMEs (what waited for it drains; the others go on
//! meanwhile); 4011 stops one shard only; a resharding K→K′
//! answers each message once.

use std::time::Duration;

use serde_json::Value;

use crate::gateway::{message, posts, HEARTBEAT_MS};
use crate::harness::fake_gateway::{FakeGateway, BOT_USER_ID};
use crate::harness::{wait_for, TestEnv};

/// A guild id on shard `n % K` for any K dividing 4 (`(id >> 22) % K`).
fn guild(n: u64) -> String {
    ((1000 + n) << 22).to_string()
}

fn mention(id: &str, channel: &str, guild_id: &str) -> Value {
    message(id, channel, Some(guild_id), "U1", "<@900000000000000001> hello", &[BOT_USER_ID])
}

async fn start(gateway: &FakeGateway, extra: &[(&str, &str)], recommended: (u64, u64)) -> TestEnv {
    let mut vars = vec![
        ("DISCORD_GATEWAY", "on"),
        ("DISCORD_GATEWAY_URL", gateway.url.as_str()),
        ("DISCORD_BOT_TOKEN", "discord-bot-token"),
        ("COALESCE_DEBOUNCE_MS", "100"),
    ];
    vars.extend_from_slice(extra);
    let env = TestEnv::start_with(&vars).await;
    env.discord.set_gateway_bot(recommended.0, recommended.1);
    let (status, _) = env.admin_send(reqwest::Method::POST, "/api/discord/gateway", None).await;
    assert_eq!(status, 200);
    env
}

/// Waits until shards `[0..count, count]` are all connected with a session.
async fn all_up(gateway: &FakeGateway, count: u64) {
    let wanted: Vec<[u64; 2]> = (0..count).map(|shard| [shard, count]).collect();
    gateway
        .wait_until(&format!("{count} shards up"), Duration::from_secs(60), |gateway| {
            let up = gateway.connected_shards();
            wanted.iter().all(|shard| up.contains(shard))
        })
        .await;
}

/// The admin's status, once `check` holds for it.
async fn status_when(env: &TestEnv, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, Duration::from_secs(30), || async {
        let status = env.admin("/api/discord/gateway").await;
        check(&status).then_some(status)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn four_shards_identify_in_bucket_order_hear_their_guilds_once_resume_and_stop_alone() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    // The setting wins over Discord's recommendation; max_concurrency 2: keys {0, 2} and {1, 3}.
    let env = start(&gateway, &[("DISCORD_SHARDS", "4")], (1, 2)).await;
    all_up(&gateway, 4).await;

    // Each shard IDENTIFYed once, and a key's second shard 5 s after its first.
    let identified = gateway.identify_times();
    let shards: Vec<[u64; 2]> = identified.iter().map(|(_, shard)| *shard).collect();
    for shard in 0..4 {
        assert_eq!(shards.iter().filter(|seen| **seen == [shard, 4]).count(), 1, "shard {shard} once: {shards:?}");
    }
    let at = |shard: u64| identified.iter().find(|(_, seen)| *seen == [shard, 4]).unwrap().0;
    for shard in 2..4 {
        let gap = at(shard).duration_since(at(shard - 2));
        assert!(gap >= Duration::from_millis(4_900), "shard {shard} IDENTIFYed {gap:?} after shard {}", shard - 2);
    }

    // Every shard's state is shown, to the admin and on /api/status.
    let status = status_when(&env, "four connected shards", |status| {
        status["shards"].as_array().is_some_and(|shards| {
            shards.len() == 4
                && shards.iter().all(|shard| shard["connected"] == true && shard["session_id"].is_string())
        })
    })
    .await;
    assert_eq!((status["count"].as_u64(), status["max_concurrency"].as_u64()), (Some(4), Some(2)));
    let overall = env.admin("/api/status").await;
    assert_eq!(overall["discord_gateway"]["shards"].as_array().map(Vec::len), Some(4), "{overall}");

    // A guild's message reaches its one shard and is answered once.
    for n in 0..4u64 {
        let channel = format!("C{n}");
        env.llm.reply(&format!("answer {n}"));
        let event = mention(&format!("13000000000000001{n:02}"), &channel, &guild(n));
        assert_eq!(gateway.dispatch_to_guild(Some(&guild(n)), "MESSAGE_CREATE", event), [[n, 4]]);
        assert_eq!(posts(&env, &channel, 1).await[0]["content"], format!("answer {n}"));
    }

    // A shard that is down delays only its own guilds: shard 1 drops and cannot
    // reconnect; its guild's message waits at Discord while guild 0 is answered.
    gateway.set_refuse_connections(true);
    gateway.drop_shard([1, 4]);
    gateway.dispatch_to_shard([1, 4], "MESSAGE_CREATE", mention("1300000000000000201", "C1", &guild(1)));
    env.llm.reply("meanwhile");
    env.llm.reply("after the resume");
    gateway.dispatch_to_guild(Some(&guild(0)), "MESSAGE_CREATE", mention("1300000000000000202", "C0", &guild(0)));
    assert_eq!(posts(&env, "C0", 2).await[1]["content"], "meanwhile");
    assert_eq!(env.discord.calls("/channels/C1/messages").len(), 1, "shard 1's message waits");
    // Back: shard 1 RESUMEs its own session (nobody IDENTIFYs again), and what waited drains.
    gateway.set_refuse_connections(false);
    gateway.wait_until("shard 1's RESUME", Duration::from_secs(30), |gateway| gateway.resumes().len() == 1).await;
    gateway.wait_until("shard 1 back", Duration::from_secs(20), |gateway| gateway.shard_connected([1, 4])).await;
    let shard_one = status["shards"][1]["session_id"].clone();
    assert_eq!(gateway.resumes()[0]["session_id"], shard_one);
    assert_eq!(posts(&env, "C1", 2).await[1]["content"], "after the resume");

    // 4011 stops shard 2 only: its status says why, the others keep answering.
    gateway.close_shard([2, 4], 4011, "Sharding required.");
    let status = status_when(&env, "shard 2 stopped", |status| status["shards"][2]["failure"].is_string()).await;
    assert!(status["shards"][2]["failure"].as_str().unwrap().contains("4011"), "{status}");
    assert_eq!(status["shards"][2]["connected"], false);
    env.cron().await;
    env.llm.reply("still here");
    gateway.dispatch_to_guild(Some(&guild(3)), "MESSAGE_CREATE", mention("1300000000000000301", "C3", &guild(3)));
    assert_eq!(posts(&env, "C3", 2).await[1]["content"], "still here");
    assert!(!gateway.shard_connected([2, 4]), "a stopped shard is not brought back by the cron");
    assert_eq!(gateway.identifies().len(), 4);
    for n in 0..4 {
        let expected = if n == 2 { 1 } else { 2 };
        assert_eq!(env.discord.calls(&format!("/channels/C{n}/messages")).len(), expected, "C{n} answered once each");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resharding_from_two_to_four_shards_answers_each_message_once() {
    let gateway = FakeGateway::start(HEARTBEAT_MS).await;
    let env = start(&gateway, &[], (2, 2)).await;
    all_up(&gateway, 2).await;
    env.llm.reply("before");
    let early = mention("1300000000000000401", "C4", &guild(3));
    assert_eq!(gateway.dispatch_to_guild(Some(&guild(3)), "MESSAGE_CREATE", early.clone()), [[1, 2]]);
    posts(&env, "C4", 1).await;

    // Discord now recommends 4: the cron notices, the new shards come up and the old close.
    env.discord.set_gateway_bot(4, 4);
    env.cron().await;
    all_up(&gateway, 4).await;
    gateway
        .wait_until("the old shards closed", Duration::from_secs(30), |gateway| {
            gateway.connected_shards() == [[0, 4], [1, 4], [2, 4], [3, 4]]
        })
        .await;
    let status = status_when(&env, "the handover done", |status| status["retiring"].is_null()).await;
    assert_eq!(status["count"], 4, "{status}");
    assert_eq!(gateway.identifies().len(), 6, "two, then four: each shard once");

    // What the old shard already delivered and the new one hears again is not
    // answered twice; a new message is answered by its new shard.
    assert_eq!(gateway.dispatch_to_guild(Some(&guild(3)), "MESSAGE_CREATE", early), [[3, 4]]);
    env.llm.reply("after");
    gateway.dispatch_to_guild(Some(&guild(3)), "MESSAGE_CREATE", mention("1300000000000000402", "C4", &guild(3)));
    let sent = posts(&env, "C4", 2).await;
    assert_eq!(sent[1]["content"], "after");
    env.settle().await;
    assert_eq!(env.discord.calls("/channels/C4/messages").len(), 2, "each message answered once");
    assert_eq!(env.llm.requests().len(), 2);
}
