//! Links between agents (issue 36): a manager agent hands a task over a link
//! and relays the outcome; a one-way link refuses the reverse; two agents
//! chattering over a two-way link stop at the cap, both sides told.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, wait_for, Scripted, TestEnv};

/// The system prompt of a turn in a link conversation (its platform's name).
const ON_A_LINK: &str = "on a link between agents";
const ON_TELEGRAM: &str = "on Telegram";

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|tool| tool["function"]["name"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn system(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

async fn link(env: &TestEnv, from: &str, to: &str, kind: &str, direction: &str) -> (u16, Value) {
    let body = json!({ "from": from, "to": to, "kind": kind, "direction": direction });
    env.admin_send(reqwest::Method::POST, "/api/links", Some(body)).await
}

/// The agent `ops`, with a soul of its own that its link turns carry.
const OPS_SOUL: &str = "You are Ops, the warehouse's counter.";

async fn create_ops(env: &TestEnv) {
    let (status, made) = env.admin_send(reqwest::Method::POST, "/api/agents", Some(json!({ "id": "ops" }))).await;
    assert_eq!(status, 200, "{made}");
    let soul = json!({ "text": OPS_SOUL });
    let (status, saved) = env.admin_send(reqwest::Method::PUT, "/api/identity/soul?agent=ops", Some(soul)).await;
    assert_eq!(status, 200, "{saved}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manager_hands_a_task_over_a_link_and_tells_the_person_the_outcome() {
    let env = TestEnv::start().await;
    // The admin API: bad links are 400s and change nothing; a good one is listed.
    assert_eq!(link(&env, "Default", "ops", "hierarchical", "one_way").await.0, 400);
    assert_eq!(link(&env, "default", "default", "peer", "two_way").await.0, 400);
    assert_eq!(link(&env, "default", "ops", "boss", "one_way").await.0, 400);
    let (status, refused) = link(&env, "default", "ops", "hierarchical", "one_way").await;
    assert_eq!(status, 400, "no agent ops yet: {refused}");
    create_ops(&env).await;
    let anonymous = env.client.get(format!("{}/api/links", env.worker.base_url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(env.admin("/api/links").await["links"], json!([]));
    // With no link, no link tool is offered.
    env.llm.push_for(ON_TELEGRAM, Scripted::Reply("Hi.".into()));
    env.telegram_update(&dm_update(1, 61, "hello")).await;
    env.wait_for_sent(1).await;
    assert!(!tool_names(&env.llm.requests()[0]).contains(&"send_agent_message".to_string()));

    let (status, saved) = link(&env, "default", "ops", "hierarchical", "one_way").await;
    assert_eq!((status, saved["kind"].as_str()), (200, Some("hierarchical")));
    assert_eq!(env.admin("/api/links").await["links"].as_array().unwrap().len(), 1);

    // The manager (default, on Telegram) hands the task to its report.
    env.llm.push_for(
        ON_TELEGRAM,
        Scripted::ToolCalls(vec![
            ("send_agent_message".into(), json!({ "to": "ops", "message": "Count the boxes in aisle 7." })),
            ("reply".into(), json!({ "content": "I asked ops to count them." })),
        ]),
    );
    // The report (ops, in link:ops:default) tries to open the reverse way, is refused, then concludes.
    env.llm.push_for(
        ON_A_LINK,
        Scripted::ToolCalls(vec![("send_agent_message".into(), json!({ "to": "default", "message": "psst" }))]),
    );
    env.llm.push_for(
        ON_A_LINK,
        Scripted::ToolCalls(vec![
            ("conclude_link".into(), json!({ "outcome": "There are 42 boxes in aisle 7." })),
            ("skip".into(), json!({})),
        ]),
    );
    // The outcome comes back to the manager's conversation, which tells the person.
    env.llm.push_for(ON_TELEGRAM, Scripted::Reply("Ops counted 42 boxes in aisle 7.".into()));

    env.telegram_update(&dm_update(2, 61, "how many boxes are in aisle 7?")).await;
    let sent = wait_for("the outcome told", Duration::from_secs(60), || async {
        let sent = env.telegram.calls("sendMessage");
        (sent.len() >= 3).then_some(sent)
    })
    .await;
    assert_eq!(sent[1]["text"], "I asked ops to count them.");
    assert_eq!(sent[2]["text"], "Ops counted 42 boxes in aisle 7.");

    let requests = env.llm.requests();
    let on_link: Vec<&Value> = requests.iter().filter(|request| system(request).contains(ON_A_LINK)).collect();
    let on_telegram: Vec<&Value> = requests.iter().filter(|request| system(request).contains(ON_TELEGRAM)).collect();
    assert_eq!((on_link.len(), on_telegram.len()), (2, 3), "no other turn ran");
    // The task arrived in the envelope format, from the manager.
    let task = all_message_text(on_link[0]);
    assert!(task.contains(r#""type":"task""#) && task.contains(r#""from":"default""#), "{task}");
    assert!(task.contains("Count the boxes in aisle 7."), "{task}");
    assert!(system(on_link[0]).contains(OPS_SOUL), "ops thinks as itself");
    assert!(!system(on_telegram[0]).contains(OPS_SOUL), "and the manager as itself");
    let offered = tool_names(on_link[0]);
    assert!(offered.contains(&"conclude_link".into()) && offered.contains(&"send_agent_message".into()));
    assert!(!tool_names(on_telegram[1]).contains(&"conclude_link".into()), "only a link conversation concludes");
    // The reverse of the one-way link was refused, in words the model reads.
    let refused = all_message_text(on_link[1]);
    assert!(refused.contains("one-way"), "{refused}");
    // The outcome reached the manager as a `done` envelope from ops.
    let outcome = all_message_text(on_telegram[2]);
    assert!(outcome.contains(r#""type":"done""#) && outcome.contains("There are 42 boxes"), "{outcome}");

    env.settle().await;
    assert_eq!(env.llm.requests().len(), requests.len(), "nothing ran after the outcome");
    assert_eq!(env.telegram.calls("sendMessage").len(), 3);
    // The link conversation is a conversation like any other: its events and history show.
    let events = env.admin("/api/channels/link:ops:default/events").await;
    assert_eq!(events.as_array().unwrap().len(), 1, "one message over the link: {events}");
    assert!(env.admin("/api/channels/link:default:ops/events").await.as_array().unwrap().is_empty(), "the refused one");
    let (status, _) = env.admin_send(reqwest::Method::DELETE, "/api/links/default/ops", None).await;
    assert_eq!(status, 200);
    let (status, _) = env.admin_send(reqwest::Method::DELETE, "/api/links/default/ops", None).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_agents_chattering_stop_at_the_cap_and_both_sides_are_told() {
    let env = TestEnv::start().await;
    create_ops(&env).await;
    assert_eq!(link(&env, "default", "ops", "peer", "two_way").await.0, 200);
    env.llm.push_for(
        ON_TELEGRAM,
        Scripted::ToolCalls(vec![
            ("send_agent_message".into(), json!({ "to": "ops", "message": "Let us talk it through." })),
            ("reply".into(), json!({ "content": "I am talking it through with ops." })),
        ]),
    );
    // Each side answers every message: a loop only the cap ends.
    for _ in 0..30 {
        env.llm.push_for(ON_A_LINK, Scripted::Reply("And another thing…".into()));
    }
    env.telegram_update(&dm_update(3, 62, "talk it through with ops")).await;

    let closed = |key: &'static str| {
        let env = &env;
        async move {
            let events = env.admin(&format!("/api/channels/{key}/events")).await;
            events
                .as_array()
                .unwrap()
                .iter()
                .any(|event| event["event"]["text"].as_str().is_some_and(|text| text.starts_with("[link closed]")))
        }
    };
    wait_for("both sides told", Duration::from_secs(180), || async {
        (closed("link:ops:default").await && closed("link:default:ops").await).then_some(())
    })
    .await;
    env.settle().await;
    let link_turns = env.llm.requests().iter().filter(|request| system(request).contains(ON_A_LINK)).count();
    // 20 messages went over the link: the first was the tool's, each of the
    // others a side's reply; the reply to the 20th found the cap.
    assert_eq!(link_turns, 20);
    let delivered = |key: &'static str| {
        let env = &env;
        async move {
            let events = env.admin(&format!("/api/channels/{key}/events")).await;
            events.as_array().unwrap().iter().filter(|event| event["decision"] == "engage").count()
        }
    };
    assert_eq!(delivered("link:ops:default").await + delivered("link:default:ops").await, 20);
    // The closing note is kept, never answered.
    let notes = env.admin("/api/channels/link:ops:default/events").await;
    let note = notes.as_array().unwrap().iter().find(|event| event["event"]["author"]["id"] == "link").unwrap();
    assert_eq!(note["decision"], "observe");
    assert_eq!(env.telegram.calls("sendMessage").len(), 1, "the person was not spammed");
}
