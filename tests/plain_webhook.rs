//! The plain webhook beyond the conformance kit: what it may send out (only
//! the configured callback, and never a private address), and that each
//! piece is signed and carries its id as the idempotency key.

use serde_json::Value;

use crate::conformance::webhook::{request, Webhook, SECRET};
use crate::harness::{now_secs, wait_for};
use edgebot::platforms::plain_webhook::wire::verify;

async fn outbox(webhook: &Webhook) -> Vec<Value> {
    webhook.test_env().admin("/api/channels/webhook%3Aorders-42/outbox").await.as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_callback_on_a_private_address_is_refused_and_nothing_leaves() {
    // No FETCH_ALLOW_HOSTS: the fake receiver on 127.0.0.1 is a private address.
    let webhook = Webhook::launch(&[("FETCH_ALLOW_HOSTS", ""), ("STREAM_REPLIES", "off")]).await;
    let env = webhook.test_env();
    env.llm.reply("this must not leave");
    assert_eq!(webhook.send(&request(1, "alice", "hello")).await.status(), 200);
    let failed = wait_for("the piece given up", std::time::Duration::from_secs(40), || async {
        outbox(&webhook).await.into_iter().find(|piece| piece["status"] == "failed")
    })
    .await;
    assert!(failed["last_error"].as_str().unwrap_or_default().contains("callback URL is refused"), "{failed}");
    assert_eq!(failed["attempts"], 1, "refused for good, not retried: {failed}");
    env.settle().await;
    assert!(webhook.callback.requests().is_empty(), "nothing reached the callback");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_piece_is_signed_and_keyed_by_its_id() {
    let webhook = Webhook::launch(&[("STREAM_REPLIES", "off")]).await;
    webhook.test_env().llm.reply("signed and keyed");
    assert_eq!(webhook.send(&request(1, "alice", "hello")).await.status(), 200);
    let call = wait_for("the reply", std::time::Duration::from_secs(40), || async {
        webhook.callback.requests().into_iter().find(|call| call.body["type"] == "message")
    })
    .await;
    assert_eq!(call.body["text"], "signed and keyed");
    assert_eq!(call.body["conversation"], "orders-42");
    assert_eq!(call.idempotency_key.as_deref(), call.body["id"].as_str(), "the piece id is the key");
    let body = call.body.to_string();
    assert_eq!(verify(call.signature.as_deref(), body.as_bytes(), SECRET, now_secs()), Ok(()));
    assert!(verify(call.signature.as_deref(), body.as_bytes(), "another secret", now_secs()).is_err());
}
