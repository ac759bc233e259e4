//! Branches: the channel delegates thinking to a Queue job and answers with
//! its conclusion in a later turn, without ever waiting for it.

use std::time::Duration;

use serde_json::json;

use crate::harness::{dm_update, turn_message, wait_for, Scripted, TestEnv};

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_that_branches_later_answers_with_the_branch_conclusion() {
    let env = TestEnv::start().await;
    env.llm.push(Scripted::ToolCalls(vec![
        ("branch".into(), json!({"question": "what is six times seven?"})),
        ("reply".into(), json!({"content": "Let me think about that."})),
    ]));
    env.llm.push(Scripted::Text("Six times seven is 42.".into())); // the branch
    env.llm.reply("It's 42."); // the channel, retriggered by the conclusion

    env.telegram_update(&dm_update(1, 51, "what is 6x7? think carefully")).await;
    let sent = env.wait_for_sent(2).await;
    assert_eq!(sent[0]["text"], "Let me think about that.");
    assert_eq!(sent[1]["text"], "It's 42.");

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 3);
    let branch = crate::harness::all_message_text(&requests[1]);
    assert!(branch.contains("You are a branch"), "the branch has its own system prompt");
    assert!(branch.contains("Ada: what is 6x7? think carefully"), "the branch forks the channel's history");
    assert!(branch.contains("what is six times seven?"));
    let tools: Vec<&str> = requests[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"memory_save") && tools.contains(&"channel_recall"), "{tools:?}");
    assert!(!tools.contains(&"reply"), "the branch gets no channel tools");

    let retrigger = turn_message(&requests[2]);
    assert!(retrigger.contains("## Status"), "{retrigger}");
    assert!(retrigger.contains("Six times seven is 42."));
    assert!(retrigger.contains("No new messages"));

    env.settle().await;
    assert_eq!(env.telegram.calls("sendMessage").len(), 2, "one retrigger, no cascade");
    // The retrigger turn's rows are stored after its send.
    let concluded = |rows: &[serde_json::Value]| {
        rows.iter().any(|row| row["content"].as_str().unwrap_or_default().contains("Six times seven is 42."))
    };
    let history = env.history_when("telegram:51", "the branch's conclusion in the history", concluded).await;
    let contents: Vec<&str> = history.iter().map(|row| row["content"].as_str().unwrap()).collect();
    assert!(contents.iter().any(|content| content.contains("Six times seven is 42.")), "{contents:?}");

    // The envelopes between the channel and its branch, as JSON lines.
    let lines = env.admin_text("/api/channels/telegram:51/envelopes").await;
    let envelopes: Vec<serde_json::Value> = lines.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let kinds: Vec<&str> = envelopes.iter().map(|envelope| envelope["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["task", "done"]);
    assert_eq!(envelopes[1]["ref"], envelopes[0]["to"].as_str().unwrap().trim_start_matches("branch:"));
    assert_eq!(envelopes[1]["v"], 1);
    let done = env.admin_text("/api/channels/telegram:51/envelopes?type=done&last=5").await;
    assert_eq!(done.lines().count(), 1);
    assert!(done.contains("Six times seven is 42."));
    assert_eq!(env.admin_text("/api/channels/telegram:51/envelopes?last=1").await.lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_branch_that_exhausts_its_retries_ends_with_a_message_to_the_user() {
    let env = TestEnv::start_with(&[("LLM_MAX_ATTEMPTS", "1")]).await;
    env.llm.push(Scripted::ToolCalls(vec![
        ("branch".into(), json!({"question": "the hard question"})),
        ("reply".into(), json!({"content": "On it."})),
    ]));
    // The branch's model fails on every delivery (the queue tries three times).
    for _ in 0..3 {
        env.llm.push(Scripted::Status(503));
    }
    env.llm.reply("Sorry, I could not work that out.");

    env.telegram_update(&dm_update(1, 52, "a hard one")).await;
    let sent = wait_for("the failure message", Duration::from_secs(60), || async {
        let sent = env.telegram.calls("sendMessage");
        (sent.len() >= 2).then_some(sent)
    })
    .await;
    assert_eq!(sent[1]["text"], "Sorry, I could not work that out.");
    let requests = env.llm.requests();
    assert_eq!(requests.len(), 5, "one channel turn, three branch attempts, one retrigger");
    let retrigger = turn_message(&requests[4]);
    assert!(retrigger.contains("failed on \"the hard question\""), "{retrigger}");
    let dead_letter = env.admin("/api/status").await["last_dead_letter"].clone();
    assert_eq!(
        (dead_letter["kind"].as_str(), dead_letter["conversation"].as_str()),
        (Some("branch"), Some("telegram:52"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_context_window_compacts_and_the_conversation_carries_on_with_the_summary() {
    // Sized so the fifth round's prompt fills it past 80% (summarise) but not 95% (cut without
    // a summary): 700 tokens for the instructions and history, 80 for the "People in this turn"
    // block, plus what the identity documents take (the prompt's size estimate counts them too).
    let identity = edgebot::identity::rules::IdentityTexts::default().render().unwrap();
    let window = 780 + identity.len().div_ceil(4);
    let env = TestEnv::start_with(&[("CONTEXT_WINDOW_TOKENS", &window.to_string())]).await;
    for _ in 0..3 {
        env.llm.push_for("You summarise", Scripted::Text("SUMMARY: Ada's cat is called Tom.".into()));
    }
    let padding = "and some more detail about my day ".repeat(17); // ~580 characters
    for round in 1..=5 {
        env.llm.reply(&format!("noted {round}"));
        let text =
            if round == 1 { format!("my cat is called Tom, {padding}") } else { format!("message {round}, {padding}") };
        env.telegram_update(&dm_update(round, 53, &text)).await;
        env.wait_for_sent(round as usize).await;
        env.settle().await; // let a queued compaction finish before the next turn
    }
    let requests = env.llm.requests();
    let compactions: Vec<_> =
        requests.iter().filter(|request| crate::harness::all_message_text(request).contains("You summarise")).collect();
    assert!(!compactions.is_empty(), "the window filled up and a compaction job ran");
    assert!(
        crate::harness::all_message_text(compactions[0]).contains("my cat is called Tom"),
        "it summarised the oldest"
    );

    let last_turn = requests
        .iter()
        .rev()
        .find(|request| !crate::harness::all_message_text(request).contains("You summarise"))
        .unwrap();
    let prompt = crate::harness::all_message_text(last_turn);
    assert!(prompt.contains("SUMMARY: Ada's cat is called Tom."), "the summary is in the prompt: {prompt}");
    assert!(!prompt.contains("my cat is called Tom,"), "the summarised message left the live history");
    assert!(turn_message(last_turn).contains("message 5"), "the conversation carried on");
    // The last answer's row is stored after its send.
    let history = env.history_when("telegram:53", "the last answer in the history", |rows| rows.len() >= 10).await;
    assert_eq!(history.len(), 10, "compacted messages stay archived in D1");
}
