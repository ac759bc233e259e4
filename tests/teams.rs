//! Microsoft Teams end to end, beyond the conformance kit
//! (`conformance::teams::`, which covers forged tokens, retries, streaming,
//! approvals and files): where the bot's token may go, a channel's reply
//! chain, and the signing keys' and token's caches.

use std::time::Duration;

use axum::Router;
use serde_json::{json, Value};

use crate::harness::fake_teams::{text_of, FakeTeams, APP_ID, BOT_TOKEN, KEY_ID, SIGNING_KEY};
use crate::harness::{all_message_text, TestEnv};

async fn start(teams: &FakeTeams) -> TestEnv {
    let vars = teams.vars();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(name, value)| (*name, value.as_str())).collect();
    TestEnv::start_with(&vars).await
}

async fn post(env: &TestEnv, body: &Value, token: &str) -> reqwest::Response {
    let headers = [("content-type", "application/json".to_string()), ("authorization", format!("Bearer {token}"))];
    env.post("/webhooks/teams", &headers, body.to_string().into_bytes()).await
}

/// A loopback server that records every request it gets (an attacker's connector).
async fn attacker() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let router = Router::new().fallback(move |request: axum::extract::Request| {
        let recorded = recorded.clone();
        async move {
            let authorization = request.headers().get("authorization").map(|value| format!("{value:?}"));
            recorded.lock().unwrap().push(format!("{} {} {authorization:?}", request.method(), request.uri()));
            axum::Json(json!({ "id": "stolen" }))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (url, seen, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_service_url_never_receives_the_bots_token() {
    let teams = FakeTeams::start().await;
    let env = start(&teams).await;
    let (elsewhere, seen, server) = attacker().await;
    env.llm.reply("answered where it came from");

    // A genuine token names the genuine connector: an activity naming another is refused.
    let mut forged = teams.activity("1001", "a:dm-ada", "29:ada", "send your token here");
    forged["serviceUrl"] = json!(elsewhere);
    let refused = post(&env, &forged, &teams.genuine_token()).await;
    assert_eq!(refused.status(), 401);
    assert!(refused.json::<Value>().await.unwrap()["error"].is_string());

    // Even a token that names it (signed as Microsoft would) is refused: it is not an allowed connector.
    let naming_it = teams.token(SIGNING_KEY, KEY_ID, json!({ "serviceurl": elsewhere }));
    let refused = post(&env, &forged, &naming_it).await;
    assert_eq!(refused.status(), 403);
    assert!(refused.json::<Value>().await.unwrap()["error"].is_string());

    // The genuine conversation is answered, through the genuine connector only.
    let genuine = teams.activity("1002", "a:dm-ada", "29:ada", "hello");
    assert_eq!(post(&env, &genuine, &teams.genuine_token()).await.status(), 200);
    crate::harness::wait_for("the reply", Duration::from_secs(40), || async {
        (!teams.shown("a:dm-ada").is_empty()).then_some(())
    })
    .await;
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "only the genuine activity reached the model");
    assert!(seen.lock().unwrap().is_empty(), "the forged connector got nothing: {:?}", seen.lock().unwrap());
    let connector_calls: Vec<_> = teams.requests().into_iter().filter(|call| call.path.starts_with("/v3/")).collect();
    assert!(!connector_calls.is_empty());
    let bearer = format!("Bearer {BOT_TOKEN}");
    assert!(connector_calls.iter().all(|call| call.authorization.as_deref() == Some(bearer.as_str())));
    let events = env.admin(&format!("/api/channels/{}/events", "teams%3Aa%3Adm-ada")).await;
    assert_eq!(events.as_array().map(Vec::len), Some(1), "the forged activities stored nothing: {events}");
    server.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_channel_reply_chain_is_its_own_conversation_engaged_by_a_mention() {
    let teams = FakeTeams::start().await;
    let env = start(&teams).await;
    env.llm.reply("Here is the plan.");
    let chain = "19:general@thread.tacv2;messageid=1700";
    let mut message = teams.activity("1701", chain, "29:ada", "<at>edgebot</at> what is the plan?");
    message["entities"] = json!([{ "type": "mention", "text": "<at>edgebot</at>",
                                   "mentioned": { "id": format!("28:{APP_ID}"), "name": "edgebot" } }]);
    assert_eq!(post(&env, &message, &teams.genuine_token()).await.status(), 200);
    let shown = crate::harness::wait_for("the reply in the chain", Duration::from_secs(40), || async {
        teams.shown(chain).first().map(|posted| text_of(&posted.activity))
    })
    .await;
    assert_eq!(shown, "Here is the plan.");
    let prompt = all_message_text(&env.llm.requests()[0]);
    assert!(
        prompt.contains("what is the plan?") && !prompt.contains("<at>"),
        "the mention's tag was taken out: {prompt}"
    );
    let events = env.admin("/api/channels/teams%3A19%3Ageneral%40thread.tacv2%3Bmessageid%3D1700/events").await;
    assert_eq!(events.as_array().map(Vec::len), Some(1), "{events}");
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_and_the_bots_token_are_fetched_once_and_keys_again_when_they_rotate() {
    let teams = FakeTeams::start().await;
    let env = start(&teams).await;
    env.llm.answer_always(crate::harness::Scripted::Reply("noted".into()));
    for n in 1..=2 {
        let message = teams.activity(&format!("200{n}"), "a:dm-ada", "29:ada", &format!("message {n}"));
        assert_eq!(post(&env, &message, &teams.genuine_token()).await.status(), 200);
    }
    crate::harness::wait_for("both replies", Duration::from_secs(60), || async {
        (teams.shown("a:dm-ada").len() >= 2).then_some(())
    })
    .await;
    assert_eq!(teams.key_fetches(), 1, "the keys are cached in the isolate");
    assert_eq!(teams.token_requests(), 1, "the bot's token is cached until it nears expiry");

    // The keys rotate: a token under the new key id fetches them again (once
    // the last fetch is 10 s old) and is taken.
    teams.publish("test-key-2");
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    let rotated = teams.token(SIGNING_KEY, "test-key-2", json!({}));
    let message = teams.activity("2003", "a:dm-ada", "29:ada", "after the rotation");
    assert_eq!(post(&env, &message, &rotated).await.status(), 200);
    assert_eq!(teams.key_fetches(), 2);
    // A token naming a key nobody published right after is refused without another fetch.
    let unknown = teams.token(SIGNING_KEY, "never-published", json!({}));
    let message = teams.activity("2004", "a:dm-ada", "29:ada", "forged");
    assert_eq!(post(&env, &message, &unknown).await.status(), 401);
    assert_eq!(teams.key_fetches(), 2, "forged key ids cannot make every request a fetch");
}
