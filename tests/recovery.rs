//! After the wasm traps, the Worker and its channel objects go on.
//!
//! A panic (`panic = "abort"`) traps the wasm. workers-rs's panic hook marks
//! the module for re-instantiation (`criticalError` on the global init state),
//! and worker-build's proxied classes re-instantiate it on the next call and
//! rebuild the objects made from the old one. worker/entry.mjs serves the
//! entrypoint and the channel object without those proxies and sends a call
//! through them only when that mark is set or the module was re-instantiated
//! since the object was made.
//!
//! The released build has no way to panic on demand, so the test sets the mark
//! as the panic hook does, through wrangler's DevTools inspector, and checks
//! that the module is re-instantiated (a new `instanceId`), that a conversation
//! whose object was made before is answered, and that a new one is too.

use serde_json::{json, Value};

use crate::harness::{dm_update, TestEnv};

#[path = "../benches/cpu/inspector.rs"]
mod inspector;

/// Evaluates `expression` in the Worker's isolate and returns its value.
fn evaluate(inspector: &mut inspector::Inspector, expression: &str) -> Value {
    let context = inspector
        .events()
        .iter()
        .find(|event| event["method"] == "Runtime.executionContextCreated")
        .map(|event| event["params"]["context"]["id"].clone())
        .expect("the isolate's execution context (Runtime.enable announces it)");
    let result = inspector
        .call("Runtime.evaluate", json!({ "expression": expression, "contextId": context, "returnByValue": true }));
    assert!(result.get("exceptionDetails").is_none(), "{expression}: {result}");
    result["result"]["value"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_trap_the_module_is_made_again_and_every_conversation_answers() {
    let env = TestEnv::start().await;
    for answer in ["first", "after the trap", "a new chat"] {
        env.llm.reply(answer);
    }

    env.telegram_update(&dm_update(9001, 61, "hello")).await;
    assert_eq!(env.wait_for_sent(1).await[0]["text"], "first");

    let mut inspector = inspector::Inspector::connect(env.worker.inspector_port).await;
    // Evaluating needs the isolate's execution context, which this announces.
    inspector.call("Runtime.enable", json!({}));
    let made = evaluate(&mut inspector, "globalThis.__worker_init_state.instanceId");
    assert!(made.as_u64().is_some(), "the init state has an instance id: {made}");
    // What workers-rs's panic hook does before the wasm traps.
    evaluate(&mut inspector, "globalThis.__worker_init_state.criticalError = true");

    // The Worker's next request re-instantiates the module before it runs.
    let health = env.client.get(format!("{}/health", env.worker.base_url)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let state = evaluate(&mut inspector, "globalThis.__worker_init_state");
    assert_eq!(state["criticalError"], false, "the mark is cleared: {state}");
    assert!(state["instanceId"].as_u64() > made.as_u64(), "the module was instantiated again: {state} after {made}");

    // The object of chat 61 was made from the module before.
    let response = env.telegram_update(&dm_update(9002, 61, "still there?")).await;
    assert_eq!(response.status(), 200);
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[1]["chat_id"], 61);
    assert_eq!(sent[1]["text"], "after the trap");

    let response = env.telegram_update(&dm_update(9003, 62, "hi")).await;
    assert_eq!(response.status(), 200);
    let sent = env.wait_for_sent(3).await;
    assert_eq!(sent[2]["chat_id"], 62);
    assert_eq!(sent[2]["text"], "a new chat");
}
