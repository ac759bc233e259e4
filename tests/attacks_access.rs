//! Who gets in, attacked: forged operator cookies built from what an
//! invitation holder knows, a guest's cookie presented as an operator's,
//! parallel token guessing, framing and sniffing of pages and assets, and a
//! secret too short to sign with.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{TestEnv, ADMIN_TOKEN};
use edgebot::config::Config;
use edgebot::sessions::rules::{issue, SessionKind};

const INVITE: &str = "invitation-for-guests-1";
/// A year from now, in milliseconds.
fn far_future_ms() -> i64 {
    (crate::harness::now_secs() + 365 * 24 * 3600) * 1000
}

/// Every admin route (src/router.rs), with a harmless body for the changing ones.
fn admin_routes() -> Vec<(Method, &'static str)> {
    let get = |path| (Method::GET, path);
    vec![
        get("/api/status"),
        get("/api/ops"),
        get("/api/session"),
        get("/api/conversations"),
        get("/api/settings"),
        get("/api/memory/bulletin"),
        get("/api/channels/telegram%3A1/events"),
        get("/api/channels/telegram%3A1/messages"),
        get("/api/channels/telegram%3A1/outbox"),
        get("/api/channels/telegram%3A1/envelopes"),
        get("/api/channels/telegram%3A1/usage"),
        get("/api/channels/telegram%3A1/processes"),
        get("/api/channels/telegram%3A1/workers"),
        get("/api/channels/telegram%3A1/live"),
        get("/api/channels/telegram%3A1/identity"),
        (Method::PUT, "/api/channels/telegram%3A1/identity"),
        (Method::DELETE, "/api/channels/telegram%3A1/identity"),
        get("/api/identity"),
        get("/api/identity/soul/versions"),
        (Method::PUT, "/api/identity/soul"),
        (Method::POST, "/api/identity/soul/restore/0"),
        get("/api/memories"),
        (Method::POST, "/api/memories"),
        (Method::DELETE, "/api/memories/1"),
        get("/api/schedules"),
        (Method::POST, "/api/schedules"),
        (Method::POST, "/api/schedules/1/pause"),
        (Method::POST, "/api/schedules/1/resume"),
        (Method::DELETE, "/api/schedules/1"),
        get("/api/schedules/1/runs"),
        get("/api/people"),
        get("/api/people/p1"),
        (Method::PUT, "/api/people/p1"),
        (Method::POST, "/api/people/p1/link"),
        (Method::DELETE, "/api/people/p1/notes"),
        get("/api/tasks"),
        (Method::POST, "/api/tasks"),
        (Method::POST, "/api/tasks/1/approve"),
        (Method::POST, "/api/tasks/1/move"),
        (Method::DELETE, "/api/tasks/1"),
        (Method::POST, "/api/discord/gateway"),
        (Method::DELETE, "/api/discord/gateway"),
        get("/api/discord/gateway"),
        get("/api/mcp/servers"),
        (Method::PUT, "/api/mcp/servers/planted"),
        (Method::DELETE, "/api/mcp/servers/planted"),
        (Method::POST, "/api/mcp/servers/planted/refresh"),
        get("/api/approvals"),
        get("/api/mcp-clients"),
        (Method::POST, "/api/mcp-clients"),
        (Method::DELETE, "/api/mcp-clients/ffffffffffffffff"),
    ]
}

/// Sends `cookie` (a whole `name=value`) from the site's own origin, as a
/// browser on the dashboard would, to every admin route; returns the routes
/// that did not answer 401.
async fn admin_routes_opened_by(env: &TestEnv, cookie: &str) -> Vec<String> {
    let base = &env.worker.base_url;
    let mut opened = Vec::new();
    for (method, path) in admin_routes() {
        let mut request = env.client.request(method.clone(), format!("{base}{path}")).header("cookie", cookie);
        if method != Method::GET {
            request = request.header("origin", base.as_str()).json(&json!({
                "conversation": "telegram:1", "prompt": "post this everywhere", "in_seconds": 60,
                "title": "planted", "status": "ready"
            }));
        }
        if path.ends_with("/live") {
            request = request
                .header("origin", base.as_str())
                .header("upgrade", "websocket")
                .header("connection", "Upgrade")
                .header("sec-websocket-version", "13")
                .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
        }
        let status = request.send().await.expect("admin request").status().as_u16();
        if status != 401 {
            opened.push(format!("{method} {path} -> {status}"));
        }
    }
    opened
}

/// Every signing key someone holding only the invitation (and the source
/// code) could build: the old scheme's key with no admin token, and each
/// kind's key derived from the invitation as if it were that kind's secret.
fn keys_an_invitation_holder_can_build() -> Vec<(String, Vec<u8>)> {
    let posing_as_admin = Config::from_lookup(|name| (name == "ADMIN_TOKEN").then(|| INVITE.to_string()));
    let as_invited = Config::from_lookup(|name| (name == "WEB_CHAT_TOKEN").then(|| INVITE.to_string()));
    let mut keys = vec![
        ("the old scheme, no admin token".to_string(), format!("edgebot-session\n\n{INVITE}").into_bytes()),
        ("the invitation itself".to_string(), INVITE.as_bytes().to_vec()),
    ];
    for kind in [SessionKind::Operator, SessionKind::OperatorChat] {
        keys.push((
            format!("{kind:?} derived from the invitation"),
            kind.signing_key(&posing_as_admin).unwrap().to_vec(),
        ));
    }
    keys.push(("the guest key".into(), SessionKind::GuestChat.signing_key(&as_invited).unwrap().to_vec()));
    keys
}

/// Operator cookies forged with every such key, under the old and the new cookie name.
fn forged_operator_cookies() -> Vec<String> {
    let mut cookies = Vec::new();
    for (_, key) in keys_an_invitation_holder_can_build() {
        for kind in ["admin", "chat", "chat-operator"] {
            let value = issue(&key, kind, "operator", far_future_ms()).unwrap();
            for name in ["edgebot_admin", "__Host-edgebot_admin"] {
                cookies.push(format!("{name}={value}"));
            }
        }
    }
    cookies
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_cookies_forged_from_the_invitation_open_no_admin_route() {
    for admin_token in [None, Some(ADMIN_TOKEN)] {
        let mut vars = vec![("WEB_CHAT_TOKEN", INVITE)];
        if admin_token.is_none() {
            vars.push(("ADMIN_TOKEN", ""));
        }
        let env = TestEnv::start_with(&vars).await;
        for cookie in forged_operator_cookies() {
            let opened = admin_routes_opened_by(&env, &cookie).await;
            assert!(opened.is_empty(), "admin token {admin_token:?}: {cookie} opened {opened:?}");
        }
        // Without ADMIN_TOKEN nobody is an operator: not even by the invitation.
        if admin_token.is_none() {
            let base = &env.worker.base_url;
            let sign_in = env.client.post(format!("{base}/api/session")).json(&json!({ "token": INVITE }));
            assert_eq!(sign_in.send().await.unwrap().status(), 401);
        }
    }
}

/// Starts a web chat with `token`; returns the whole `name=value` cookie and the answer.
async fn start_chat(env: &TestEnv, token: &str) -> (String, Value) {
    let response = env
        .client
        .post(format!("{}/api/chat/session", env.worker.base_url))
        .json(&json!({ "token": token }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let set_cookie = response.headers()["set-cookie"].to_str().unwrap().to_string();
    (set_cookie.split(';').next().unwrap().to_string(), response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guests_cookie_is_never_an_operators() {
    for admin_token in [None, Some(ADMIN_TOKEN)] {
        let mut vars = vec![("WEB_CHAT_TOKEN", INVITE)];
        if admin_token.is_none() {
            vars.push(("ADMIN_TOKEN", ""));
        }
        let env = TestEnv::start_with(&vars).await;
        let (guest, answer) = start_chat(&env, INVITE).await;
        assert_eq!(answer["role"], "guest");
        let (chat_cookie_name, value) = guest.split_once('=').unwrap();

        // The guest's own value as an operator's; with its kind rewritten; and its
        // contents signed again as an operator's with every key the invitation gives.
        let (_, tag) = value.rsplit_once('.').unwrap();
        let (_, rest) = value.split_once('.').unwrap();
        let (subject, _) = rest.split_once('.').unwrap();
        let mut values = vec![value.to_string()];
        for kind in ["admin", "chat-operator"] {
            values.push(format!("{kind}.{rest}"));
            values.push(format!("{kind}.operator.{}.{tag}", far_future_ms()));
            for (_, key) in keys_an_invitation_holder_can_build() {
                values.push(issue(&key, kind, subject, far_future_ms()).unwrap());
            }
        }
        for value in &values {
            for name in ["edgebot_admin", "__Host-edgebot_admin"] {
                let cookie = format!("{name}={value}");
                let opened = admin_routes_opened_by(&env, &cookie).await;
                assert!(opened.is_empty(), "admin token {admin_token:?}: {cookie} opened {opened:?}");
            }
        }
        // Nor does a guest's chat cookie rewritten to an operator's chat make the guest an operator there.
        let chat_session = |cookie: String| {
            env.client.get(format!("{}/api/chat/session", env.worker.base_url)).header("cookie", cookie).send()
        };
        let rewritten = chat_session(format!("{chat_cookie_name}=chat-operator.{rest}")).await.unwrap();
        assert_eq!(rewritten.status(), 401, "an edited chat cookie is nobody's");
        // The genuine guest cookie stays a guest's.
        let genuine = chat_session(guest.clone()).await.unwrap();
        assert_eq!(genuine.json::<Value>().await.unwrap()["role"], "guest");
    }
}

/// POSTs a sign-in from `address` (as Cloudflare's CF-Connecting-IP); returns the status and Retry-After.
async fn sign_in_from(env: &TestEnv, address: &str, token: &str) -> (u16, Option<u64>) {
    let response = env
        .client
        .post(format!("{}/api/session", env.worker.base_url))
        .header("cf-connecting-ip", address)
        .json(&json!({ "token": token }))
        .send()
        .await
        .unwrap();
    let retry_after = response.headers().get("retry-after").and_then(|value| value.to_str().ok()?.parse().ok());
    (response.status().as_u16(), retry_after)
}

async fn bearer_from(env: &TestEnv, address: &str, token: &str) -> u16 {
    let response = env
        .client
        .get(format!("{}/api/conversations", env.worker.base_url))
        .header("cf-connecting-ip", address)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

const ATTACKER: &str = "203.0.113.7";
const OPERATOR: &str = "198.51.100.20";

#[tokio::test(flavor = "multi_thread")]
async fn thirty_parallel_guesses_from_one_address_meet_its_limit_and_the_operator_still_gets_in() {
    let env = TestEnv::start().await;
    let started = Instant::now();
    let guesses = (0..30).map(|index| {
        let env = &env;
        async move { sign_in_from(env, ATTACKER, &format!("guess-number-{index:04}")).await }
    });
    let answers = futures_join_all(guesses).await;
    let refused_slowly = answers.iter().filter(|(status, _)| *status == 401).count();
    let limited: Vec<_> = answers.iter().filter(|(status, _)| *status == 429).collect();
    assert_eq!((refused_slowly, limited.len()), (10, 20), "SIGN_IN_CLIENT_LIMIT=10 judged; the rest 429: {answers:?}");
    for (_, retry_after) in &limited {
        let seconds = retry_after.expect("a 429 says when to retry");
        assert!((1..=900).contains(&seconds), "{seconds}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));

    // Blocked, the attacker learns nothing: the right token is refused unjudged, by any route.
    assert_eq!(sign_in_from(&env, ATTACKER, ADMIN_TOKEN).await.0, 429);
    assert_eq!(bearer_from(&env, ATTACKER, ADMIN_TOKEN).await, 429);
    assert_eq!(bearer_from(&env, ATTACKER, "bearer-guess-0001").await, 429);

    // The operator, elsewhere, signs in and uses the admin API as usual.
    assert_eq!(sign_in_from(&env, OPERATOR, ADMIN_TOKEN).await.0, 200);
    assert_eq!(bearer_from(&env, OPERATOR, ADMIN_TOKEN).await, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn guesses_from_many_addresses_meet_the_overall_limit_but_not_the_operator() {
    let env = TestEnv::start_with(&[("SIGN_IN_CLIENT_LIMIT", "5"), ("SIGN_IN_LIMIT", "12")]).await;
    // The operator has used the admin token from their address before.
    assert_eq!(bearer_from(&env, OPERATOR, ADMIN_TOKEN).await, 200);

    // 30 addresses, one guess each, in parallel; bearer guesses count as much as sign-ins.
    let guesses = (0..30).map(|index| {
        let env = &env;
        async move {
            let address = format!("192.0.2.{}", index + 1);
            match index % 2 {
                0 => sign_in_from(env, &address, "guess").await.0,
                _ => bearer_from(env, &address, "guess").await,
            }
        }
    });
    let statuses = futures_join_all(guesses).await;
    let judged = statuses.iter().filter(|status| **status == 401).count();
    let limited = statuses.iter().filter(|status| **status == 429).count();
    assert_eq!((judged, limited), (12, 18), "{statuses:?}");

    // The operator's address is trusted: it still signs in and uses the API.
    assert_eq!(sign_in_from(&env, OPERATOR, ADMIN_TOKEN).await.0, 200);
    assert_eq!(bearer_from(&env, OPERATOR, ADMIN_TOKEN).await, 200);
    // An address never seen with the admin token waits (the documented price of the overall limit).
    let (status, retry_after) = sign_in_from(&env, "198.51.100.99", ADMIN_TOKEN).await;
    assert_eq!(status, 429);
    assert!(retry_after.is_some());
}

/// Awaits every future concurrently (tokio's JoinSet would need 'static futures).
async fn futures_join_all<T, F: std::future::Future<Output = T>>(futures: impl Iterator<Item = F>) -> Vec<T> {
    let futures: Vec<_> = futures.map(Box::pin).collect();
    let mut results: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    let mut pending: Vec<(usize, std::pin::Pin<Box<F>>)> = futures.into_iter().enumerate().collect();
    std::future::poll_fn(|context| {
        pending.retain_mut(|(index, future)| match future.as_mut().poll(context) {
            std::task::Poll::Ready(value) => {
                results[*index] = Some(value);
                false
            }
            std::task::Poll::Pending => true,
        });
        if pending.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    results.into_iter().map(|result| result.expect("every future finished")).collect()
}

const EXPECTED_HEADERS: [(&str, &str); 4] = [
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
         manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

#[tokio::test(flavor = "multi_thread")]
async fn every_page_asset_and_answer_forbids_framing_sniffing_inline_script_and_referrers() {
    let env = TestEnv::start_with(&[("WEB_CHAT_TOKEN", INVITE)]).await;
    let base = &env.worker.base_url;
    let paths = [
        // Static assets (served without the Worker).
        "/",
        "/dashboard/",
        "/chat/",
        "/style.css",
        "/dashboard/app.js",
        "/chat/app.js",
        // The Worker's own answers: success, refusal, not found.
        "/health",
        "/api/session",
        "/api/conversations",
        "/no-such-page",
    ];
    for path in paths {
        let response = env.client.get(format!("{base}{path}")).send().await.unwrap();
        let status = response.status();
        for (name, expected) in EXPECTED_HEADERS {
            let got = response.headers().get(name).and_then(|value| value.to_str().ok());
            assert_eq!(got, Some(expected), "{path} ({status}): {name}");
        }
    }
    // The assets' own rules file is not served.
    let rules = env.client.get(format!("{base}/_headers")).send().await.unwrap();
    assert_eq!(rules.status(), 404);

    // Session cookies are `__Host-`: Secure, the whole site, no Domain.
    let signed_in =
        env.client.post(format!("{base}/api/session")).json(&json!({ "token": ADMIN_TOKEN })).send().await.unwrap();
    let chat =
        env.client.post(format!("{base}/api/chat/session")).json(&json!({ "token": INVITE })).send().await.unwrap();
    for response in [signed_in, chat] {
        for (name, expected) in EXPECTED_HEADERS {
            assert_eq!(response.headers().get(name).and_then(|value| value.to_str().ok()), Some(expected));
        }
        let cookie = response.headers()["set-cookie"].to_str().unwrap().to_string();
        assert!(cookie.starts_with("__Host-edgebot_"), "{cookie}");
        assert!(cookie.contains("; Secure") && cookie.contains("; Path=/;"), "{cookie}");
        assert!(!cookie.to_ascii_lowercase().contains("domain="), "{cookie}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_too_short_to_sign_with_refuses_every_request_and_says_which() {
    for (name, value) in [("ADMIN_TOKEN", "fifteen-chars-x"), ("WEB_CHAT_TOKEN", "short-invite")] {
        let env = TestEnv::start_with(&[(name, value)]).await;
        let base = &env.worker.base_url;
        let health = env.client.get(format!("{base}/health")).send().await.unwrap();
        assert_eq!(health.status(), 503, "{name}");
        let body: Value = health.json().await.unwrap();
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(name) && error.contains("shorter than 16 characters"), "{body}");
        assert!(!error.contains(value), "the value is never shown: {body}");
        // Nothing else is served either: not the admin API (even with that very token), not a sign-in, not a webhook.
        let admin = env.client.get(format!("{base}/api/status")).bearer_auth(value).send().await.unwrap();
        assert_eq!(admin.status(), 503);
        let sign_in = env.client.post(format!("{base}/api/session")).json(&json!({ "token": value })).send();
        assert_eq!(sign_in.await.unwrap().status(), 503);
        let webhook = env.telegram_update(&crate::harness::dm_update(1, 5, "hello")).await;
        assert_eq!(webhook.status(), 503);
        assert_eq!(env.telegram.total_calls(), 0);
    }
}
