//! Slack in many workspaces ("Add to Slack"): the install link and the OAuth
//! callback against the fake `oauth.v2.access`, one sealed token per
//! workspace, each reply with its own workspace's token, replayed and forged
//! states refused, uninstalled workspaces ignored, tokens never shown.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::fake_api::{slack_code, slack_workspace_token, SLACK_CLIENT_ID, SLACK_CLIENT_SECRET};
use crate::harness::{now_secs, slack_headers, spent_tokens, wait_for, TestEnv};

/// 32 bytes, base64: the key tokens are sealed with.
const TOKEN_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const STATE_COOKIE: &str = "edgebot_slack_install";

/// Installs on, and no single bot token.
pub const INSTALLS_ON: [(&str, &str); 4] = [
    ("SLACK_BOT_TOKEN", ""),
    ("SLACK_CLIENT_ID", SLACK_CLIENT_ID),
    ("SLACK_CLIENT_SECRET", SLACK_CLIENT_SECRET),
    ("SLACK_TOKEN_KEY", TOKEN_KEY),
];

/// A Worker with installs on and no single bot token.
async fn with_installs() -> TestEnv {
    TestEnv::start_with(&INSTALLS_ON).await
}

/// A client that shows redirects instead of following them (to slack.com).
fn browser() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// Opens the install link: the state Slack is sent with, and the cookie set.
async fn install_link(env: &TestEnv) -> (String, String) {
    let response = browser().get(format!("{}/slack/install", env.worker.base_url)).send().await.unwrap();
    assert_eq!(response.status(), 302, "off to Slack");
    let location = response.headers()["location"].to_str().unwrap().to_string();
    let link = url::Url::parse(&location).unwrap();
    assert_eq!((link.host_str(), link.path()), (Some("slack.com"), "/oauth/v2/authorize"));
    let query: std::collections::HashMap<_, _> = link.query_pairs().into_owned().collect();
    assert_eq!(query["client_id"], SLACK_CLIENT_ID);
    assert_eq!(query["redirect_uri"], format!("{}/slack/oauth/callback", env.worker.base_url));
    assert!(query["scope"].split(',').any(|scope| scope == "chat:write"));
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    let cookie = cookie.split(';').next().unwrap().to_string();
    assert_eq!(cookie, format!("{STATE_COOKIE}={}", query["state"]));
    (query["state"].clone(), cookie)
}

/// Slack's redirect back with `code` and `state`, from a browser holding `cookie`.
async fn come_back(env: &TestEnv, code: &str, state: &str, cookie: Option<&str>) -> reqwest::Response {
    let url = format!("{}/slack/oauth/callback?code={code}&state={state}", env.worker.base_url);
    let mut request = browser().get(url);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

/// A workspace's admin installs the app, start to end.
pub async fn install(env: &TestEnv, team: &str) {
    install_with(env, team, &slack_code(team)).await;
}

/// An install whose approval gave `code` (each code works once).
async fn install_with(env: &TestEnv, team: &str, code: &str) {
    let (state, cookie) = install_link(env).await;
    let response = come_back(env, code, &state, Some(&cookie)).await;
    assert_eq!(response.status(), 200, "installed in {team}");
    let page = response.text().await.unwrap();
    assert!(page.contains(&format!("Workspace {team}")), "{page}");
    assert!(!page.contains("xoxb"), "the token is never shown");
}

/// A direct message in `team`'s channel `channel`, as that workspace's delivery.
fn message_in(team: &str, channel: &str, n: u64, text: &str) -> Value {
    json!({
        "token": "unused", "team_id": team, "api_app_id": "A1", "type": "event_callback",
        "event_id": format!("Ev{team}{n}"), "event_time": 1_795_000_000,
        "authorizations": [{"team_id": team, "user_id": format!("UBOT{team}"), "is_bot": true}],
        "event": {"type": "message", "channel": channel, "channel_type": "im", "user": "U1", "text": text,
                  "ts": format!("1795000000.{n:06}")}
    })
}

fn uninstalled(team: &str) -> Value {
    json!({
        "token": "unused", "team_id": team, "api_app_id": "A1", "type": "event_callback",
        "event_id": format!("EvGone{team}"), "event_time": 1_795_000_100,
        "event": {"type": "app_uninstalled"}
    })
}

/// Each `chat.postMessage` to `channel`, with the token it carried.
fn posts_to(env: &TestEnv, channel: &str) -> Vec<(String, Option<String>)> {
    env.slack
        .requests()
        .into_iter()
        .filter(|call| call.path.ends_with("/chat.postMessage") && call.body["channel"] == channel)
        .map(|call| (call.body["text"].as_str().unwrap_or_default().to_string(), call.authorization))
        .collect()
}

async fn wait_for_post(env: &TestEnv, channel: &str, count: usize) -> Vec<(String, Option<String>)> {
    wait_for(&format!("{count} post(s) to {channel}"), Duration::from_secs(20), || async {
        let posts = posts_to(env, channel);
        (posts.len() >= count).then_some(posts)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_workspaces_install_and_each_reply_goes_out_with_its_own_token() {
    let mut env = with_installs().await;
    install(&env, "TA").await;
    install(&env, "TB").await;
    assert_eq!(env.slack.calls("/oauth.v2.access").len(), 2, "one exchange per install");

    env.llm.reply("hello workspace A");
    assert_eq!(env.slack_event(&message_in("TA", "DA", 1, "hi from A")).await.status(), 200);
    let posts = wait_for_post(&env, "DA", 1).await;
    assert_eq!(posts[0].0, "hello workspace A");
    assert_eq!(posts[0].1.as_deref(), Some(format!("Bearer {}", slack_workspace_token("TA")).as_str()));

    env.llm.reply("hello workspace B");
    assert_eq!(env.slack_event(&message_in("TB", "DB", 2, "hi from B")).await.status(), 200);
    let posts = wait_for_post(&env, "DB", 1).await;
    assert_eq!(posts[0].0, "hello workspace B");
    assert_eq!(posts[0].1.as_deref(), Some(format!("Bearer {}", slack_workspace_token("TB")).as_str()));
    // Every call of either reply (reactions included) carried its own workspace's token.
    for call in env.slack.requests().into_iter().filter(|call| !call.path.ends_with("/oauth.v2.access")) {
        let channel = call.body["channel"].as_str().unwrap_or_default().to_string();
        let team = if channel == "DA" { "TA" } else { "TB" };
        assert_eq!(call.authorization, Some(format!("Bearer {}", slack_workspace_token(team))), "{}", call.path);
    }

    // The operator sees which workspaces are installed, never a token.
    let listed = env.admin("/api/slack/workspaces").await;
    let teams: Vec<&str> =
        listed["workspaces"].as_array().unwrap().iter().filter_map(|w| w["team_id"].as_str()).collect();
    assert_eq!(teams.len(), 2, "{listed}");
    assert!(teams.contains(&"TA") && teams.contains(&"TB"));
    assert!(listed["workspaces"].as_array().unwrap().iter().all(|w| w["installed"] == true));
    let status = env.admin("/api/status").await;
    let slack = &status["platforms"]["slack"];
    assert_eq!((slack["ready"].as_bool(), slack["installs"].as_bool()), (Some(true), Some(true)), "{status}");
    assert_eq!(slack["bot_token"], false);
    let shown = [
        env.admin_text("/api/slack/workspaces").await,
        env.admin_text("/api/status").await,
        env.admin_text("/api/settings").await,
        env.admin_text("/api/channels/slack:TA:DA/events").await,
        env.admin_text("/api/channels/slack:TA:DA/outbox").await,
    ];
    let log = env.worker.log();
    for team in ["TA", "TB"] {
        let token = slack_workspace_token(team);
        assert!(shown.iter().all(|text| !text.contains(&token)), "no {team} token in the admin API");
        assert!(!log.contains(&token), "no {team} token in the Worker's log");
    }
    // At rest the token is sealed.
    let rows = env.sql_while_stopped("SELECT team_id, sealed_token FROM slack_workspaces ORDER BY team_id").await;
    let rows = rows.to_string();
    assert!(rows.contains("TA") && rows.contains("TB"), "{rows}");
    assert!(!rows.contains("xoxb"), "sealed, not stored in the clear: {rows}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_or_forged_install_state_is_refused_before_slack_is_asked() {
    let env = with_installs().await;
    let (state, cookie) = install_link(&env).await;
    assert_eq!(come_back(&env, &slack_code("TA"), &state, Some(&cookie)).await.status(), 200);
    assert_eq!(env.slack.calls("/oauth.v2.access").len(), 1);

    // The same callback again (a replay, with the same browser's cookie): the state is used up.
    let replayed = come_back(&env, &slack_code("TR"), &state, Some(&cookie)).await;
    assert_eq!(replayed.status(), 403);
    assert!(replayed.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("used or expired"));

    // A state this Worker never issued, even with a cookie to match it.
    let forged = "ab".repeat(32);
    let response = come_back(&env, &slack_code("TF"), &forged, Some(&format!("{STATE_COOKIE}={forged}"))).await;
    assert_eq!(response.status(), 403);
    // A real state, but from a browser that did not ask for the link (no cookie, or another one).
    let (fresh, _) = install_link(&env).await;
    assert_eq!(come_back(&env, &slack_code("TG"), &fresh, None).await.status(), 403);
    let other = format!("{STATE_COOKIE}={}", "cd".repeat(32));
    assert_eq!(come_back(&env, &slack_code("TG"), &fresh, Some(&other)).await.status(), 403);
    // Malformed callbacks and a cancelled install.
    let missing = browser().get(format!("{}/slack/oauth/callback?state={fresh}", env.worker.base_url));
    assert_eq!(missing.send().await.unwrap().status(), 400);
    let cancelled = browser().get(format!("{}/slack/oauth/callback?error=access_denied", env.worker.base_url));
    assert_eq!(cancelled.send().await.unwrap().status(), 400);

    assert_eq!(env.slack.calls("/oauth.v2.access").len(), 1, "no refused callback reached Slack");
    let listed = env.admin("/api/slack/workspaces").await;
    assert_eq!(listed["workspaces"].as_array().unwrap().len(), 1, "only the one real install: {listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_uninstalled_workspace_is_ignored_and_nothing_is_sent_there() {
    let env = with_installs().await;
    install(&env, "TA").await;
    env.llm.reply("before the uninstall");
    env.slack_event(&message_in("TA", "DA", 1, "hello")).await;
    wait_for_post(&env, "DA", 1).await;

    let response = env.slack_event(&uninstalled("TA")).await;
    assert_eq!(response.status(), 200);
    let listed = env.admin("/api/slack/workspaces").await;
    assert_eq!(listed["workspaces"][0]["installed"], false, "{listed}");

    let calls_before = env.slack.total_calls();
    let llm_before = env.llm.requests().len();
    let response = env.slack_event(&message_in("TA", "DA", 2, "are you there?")).await;
    assert_eq!(response.status(), 200);
    assert!(response.json::<Value>().await.unwrap()["ignored"].is_string());
    // A workspace that never installed, with no single token to answer it: ignored too.
    let response = env.slack_event(&message_in("TZ", "DZ", 3, "hello?")).await;
    assert!(response.json::<Value>().await.unwrap()["ignored"].is_string());
    env.settle().await;
    assert_eq!(env.slack.total_calls(), calls_before, "nothing sent to Slack");
    assert_eq!(env.llm.requests().len(), llm_before, "no turn ran");
    assert_eq!(posts_to(&env, "DA").len(), 1);

    // Installing again brings the workspace back, with its new token.
    install_with(&env, "TA", &format!("{}.2", slack_code("TA"))).await;
    env.llm.reply("back again");
    env.slack_event(&message_in("TA", "DA", 4, "welcome back")).await;
    let posts = wait_for_post(&env, "DA", 2).await;
    assert_eq!(posts[1].0, "back again");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_installs_the_link_names_what_to_set_and_the_single_token_answers() {
    let env = TestEnv::start().await;
    let response = browser().get(format!("{}/slack/install", env.worker.base_url)).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("SLACK_CLIENT_ID"));
    let state = "ab".repeat(32);
    let response = come_back(&env, "code-TA", &state, Some(&format!("{STATE_COOKIE}={state}"))).await;
    assert_eq!(response.status(), 503);

    // An uninstall with installs off changes nothing: the single token still answers.
    assert_eq!(env.slack_event(&uninstalled("T1")).await.status(), 200);
    env.llm.reply("still here");
    let body = message_in("T1", "D1", 5, "hello").to_string().into_bytes();
    env.post("/webhooks/slack", &slack_headers(&body, now_secs(), "application/json"), body).await;
    let posts = wait_for_post(&env, "D1", 1).await;
    assert_eq!(posts[0].1.as_deref(), Some("Bearer xoxb-test"));
}

/// The fake model reports 15 tokens a call: a workspace budget of 10 is spent
/// by its first answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_over_its_daily_budget_is_told_and_other_workspaces_go_on() {
    let mut vars = INSTALLS_ON.to_vec();
    vars.push(("BUDGET_WORKSPACE_TOKENS_PER_DAY", "10"));
    let env = TestEnv::start_with(&vars).await;
    install(&env, "TA").await;
    install(&env, "TB").await;
    env.llm.reply("one in A");
    env.slack_event(&message_in("TA", "DA", 1, "hello")).await;
    wait_for_post(&env, "DA", 1).await;
    // The next turn's budget reads the workspace's spend, which reaches D1
    // with this turn's commit, after its reply.
    env.spend_when("the first turn's commit", |report| spent_tokens(report, "workspaces", "slack:TA") >= Some(15))
        .await;

    // Someone else, in another channel of the same workspace: its own person and
    // conversation budgets are untouched, the workspace's is spent.
    let mut other = message_in("TA", "CA", 2, "and me?");
    other["event"]["user"] = json!("U2");
    other["event"]["channel_type"] = json!("channel");
    other["event"]["text"] = json!("<@UBOTTA> and me?");
    env.slack_event(&other).await;
    let notice = wait_for_post(&env, "CA", 1).await;
    assert!(notice[0].0.starts_with("This workspace has used today's share of my budget"), "{notice:?}");
    assert_eq!(env.llm.requests().len(), 1, "no model call for the spent workspace");

    env.llm.reply("one in B");
    env.slack_event(&message_in("TB", "DB", 3, "hello")).await;
    assert_eq!(wait_for_post(&env, "DB", 1).await[0].0, "one in B", "another workspace goes on");

    let report = env.admin("/api/spend").await;
    let workspace = report["workspaces"].as_array().unwrap().iter().find(|row| row["subject"] == "slack:TA").cloned();
    let workspace = workspace.unwrap_or_else(|| panic!("the workspace's spend: {report}"));
    assert_eq!((workspace["tokens"].as_i64(), workspace["limit"]["tokens"].as_i64()), (Some(15), Some(10)));
}
