//! People: a note a branch keeps about the person writing follows that person
//! to every conversation they write in (on any platform, once an operator has
//! linked their ids) and to no other; a person who asks is forgotten; notes
//! about someone absent, and past the caps, are refused; the People API is
//! operators' only and links two platform ids into one person.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{all_message_text, dm_update, slack_callback, turn_message, wait_for, Scripted, TestEnv};

const BRANCH: &str = "You are a branch";

fn branch_then_reply(question: &str, reply: &str) -> Scripted {
    Scripted::ToolCalls(vec![
        ("branch".into(), json!({ "question": question })),
        ("reply".into(), json!({ "content": reply })),
    ])
}

/// A Telegram DM from Dana (user and chat 81).
fn dana_on_telegram(update_id: i64, text: &str) -> Value {
    let mut update = dm_update(update_id, 81, text);
    update["message"]["from"]["first_name"] = json!("Dana");
    update["message"]["chat"]["first_name"] = json!("Dana");
    update
}

fn slack_dm(user: &str, channel: &str, text: &str, ts: &str) -> Value {
    json!({"type": "message", "channel": channel, "channel_type": "im", "user": user, "text": text, "ts": ts})
}

async fn wait_for_posts(env: &TestEnv, count: usize) -> Vec<Value> {
    wait_for(&format!("{count} chat.postMessage call(s)"), Duration::from_secs(20), || async {
        let posts = env.slack.calls("/chat.postMessage");
        (posts.len() >= count).then_some(posts)
    })
    .await
}

fn channel_requests(env: &TestEnv) -> Vec<Value> {
    env.llm.requests().into_iter().filter(|request| !all_message_text(request).contains(BRANCH)).collect()
}

fn branch_requests(env: &TestEnv) -> Vec<Value> {
    env.llm.requests().into_iter().filter(|request| all_message_text(request).contains(BRANCH)).collect()
}

/// The tool results of a recorded request, in order.
fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The person a platform id belongs to, from the People API. A turn stores its
/// people in the commit after its send, so a person just written to is waited for.
async fn person_with(env: &TestEnv, platform_key: &str) -> Value {
    wait_for(&format!("a person with {platform_key}"), Duration::from_secs(20), || async {
        let people = env.admin("/api/people").await;
        people.as_array().unwrap().iter().find(|person| has_id(person, platform_key)).cloned()
    })
    .await
}

fn has_id(person: &Value, platform_key: &str) -> bool {
    person["platform_ids"].as_array().unwrap().iter().any(|id| id["platform_key"] == platform_key)
}

fn note_texts(person: &Value) -> Vec<String> {
    person["notes"].as_array().unwrap().iter().map(|note| note["text"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_note_learned_on_telegram_follows_the_linked_person_to_slack_only_and_is_forgotten_when_asked() {
    let env = TestEnv::start().await;

    // On Telegram Dana asks for short answers; a branch notes it.
    env.llm.push(branch_then_reply("Dana wants short answers: note it in her profile", "Will do."));
    env.llm.push_for(
        BRANCH,
        Scripted::ToolCalls(vec![("person_note".into(), json!({ "note": "prefers short answers" }))]),
    );
    env.llm.push_for(BRANCH, Scripted::Text("Noted that Dana prefers short answers.".into()));
    env.llm.reply("Noted: short answers from now on.");
    env.telegram_update(&dana_on_telegram(1, "please keep your answers short")).await;
    env.wait_for_sent(2).await;
    let branch = branch_requests(&env);
    assert!(all_message_text(&branch[0]).contains("- Dana (telegram:81): nothing noted yet"), "{}", branch[0]);
    assert_eq!(tool_results(&branch[1]), ["noted about Dana (1 of 20 notes): prefers short answers"]);
    let dana = person_with(&env, "telegram:81").await;
    assert_eq!(note_texts(&dana), ["prefers short answers"]);
    assert_eq!(dana["display_name"], "Dana");

    // The operator links Dana's Slack id (U1) to her record, before she ever wrote there.
    let id = dana["id"].as_str().unwrap().to_string();
    let (status, linked) = env
        .admin_send(Method::POST, &format!("/api/people/{id}/link"), Some(json!({ "platform_key": "slack:U1" })))
        .await;
    assert_eq!(status, 200, "{linked}");
    let keys: Vec<&str> = linked["person"]["platform_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id["platform_key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["slack:U1", "telegram:81"]);

    // On Slack the turn's prompt carries her profile: the bot knows her by name there.
    env.llm.reply("Hi Dana.");
    env.slack_event(&slack_callback("Ev1", slack_dm("U1", "D1", "hello from slack", "1795000000.000100"))).await;
    wait_for_posts(&env, 1).await;
    let slack_turn = turn_message(channel_requests(&env).last().unwrap());
    let people = slack_turn.find("## People in this turn").expect("a people section");
    assert!(slack_turn[people..].contains("- Dana (writing as U1):\n  1. prefers short answers"), "{slack_turn}");

    // In a Slack channel where only Bob writes, Dana's notes are nowhere in the prompt.
    env.llm.reply("Hi Bob.");
    let bob = json!({"type": "app_mention", "channel": "C2", "user": "U2", "text": "<@UEDGEBOT> hi", "ts": "1795000000.000200"});
    env.slack_event(&slack_callback("Ev2", bob)).await;
    wait_for_posts(&env, 2).await;
    let bob_turn = channel_requests(&env).last().cloned().unwrap();
    let everything = all_message_text(&bob_turn);
    assert!(everything.contains("- U2: nothing noted yet"), "Bob's own (empty) profile: {everything}");
    assert!(!everything.contains("short answers") && !everything.contains("Dana"), "{everything}");

    // Back on Telegram Dana asks to be forgotten: the branch removes her notes and says what went.
    env.llm.push(branch_then_reply("Dana asks me to forget what I know about her", "One moment."));
    env.llm.push_for(BRANCH, Scripted::ToolCalls(vec![("person_forget".into(), json!({}))]));
    env.llm.push_for(BRANCH, Scripted::Text("Removed from Dana's profile: \"prefers short answers\".".into()));
    env.llm.reply("Done: I forgot that you prefer short answers. I know nothing else about you.");
    env.telegram_update(&dana_on_telegram(2, "forget what you know about me")).await;
    let sent = env.wait_for_sent(4).await;
    assert_eq!(sent[3]["text"], "Done: I forgot that you prefer short answers. I know nothing else about you.");
    let forget = branch_requests(&env).last().cloned().unwrap();
    let removed = tool_results(&forget).pop().unwrap();
    assert!(
        removed.starts_with("forgot everything in Dana's profile (1 item(s)): \"prefers short answers\""),
        "{removed}"
    );
    let retrigger = turn_message(channel_requests(&env).last().unwrap());
    assert!(retrigger.contains("Removed from Dana's profile: \"prefers short answers\""), "{retrigger}");
    assert!(
        retrigger.contains("- Dana: nothing noted yet"),
        "the retrigger turn shows her profile as it is now: {retrigger}"
    );
    let dana = env.admin(&format!("/api/people/{id}")).await;
    assert_eq!(note_texts(&dana), Vec::<String>::new(), "{dana}");
}

#[tokio::test(flavor = "multi_thread")]
async fn notes_about_someone_absent_or_past_the_caps_are_refused() {
    let env = TestEnv::start().await;
    env.llm.reply("Hello Ada.");
    env.telegram_update(&dm_update(1, 82, "hi")).await;
    env.wait_for_sent(1).await;
    let ada = person_with(&env, "telegram:82").await;
    let id = ada["id"].as_str().unwrap().to_string();

    // The operator fills her profile to the cap; one more is refused and changes nothing.
    let over: Vec<String> = (1..=21).map(|index| format!("fact number {index}")).collect();
    let (status, body) =
        env.admin_send(Method::PUT, &format!("/api/people/{id}"), Some(json!({ "notes": over }))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("full (20 notes)"), "{body}");
    let long = "x".repeat(201);
    let (status, _) = env.admin_send(Method::PUT, &format!("/api/people/{id}"), Some(json!({ "notes": [long] }))).await;
    assert_eq!(status, 400);
    assert_eq!(note_texts(&env.admin(&format!("/api/people/{id}")).await).len(), 0);
    let full = &over[..20];
    let (status, body) =
        env.admin_send(Method::PUT, &format!("/api/people/{id}"), Some(json!({ "notes": full }))).await;
    assert_eq!((status, body["notes"].as_array().unwrap().len()), (200, 20), "{body}");

    // A branch may not write about Carol (she is not writing), nor past the caps.
    env.llm.push(branch_then_reply("note that Carol is Ada's sister and Ada likes tea", "Noted."));
    env.llm.push_for(
        BRANCH,
        Scripted::ToolCalls(vec![
            ("person_note".into(), json!({ "person": "Carol", "note": "is Ada's sister" })),
            ("person_note".into(), json!({ "note": "y".repeat(201) })),
            ("person_note".into(), json!({ "note": "likes tea" })),
            ("person_note".into(), json!({ "person": "Ada", "replaces": 20, "note": "likes tea" })),
        ]),
    );
    env.llm.push_for(BRANCH, Scripted::Text("Could not note Carol; replaced note 20 with tea.".into()));
    env.llm.reply("I'll remember the tea.");
    env.telegram_update(&dm_update(2, 82, "my sister Carol visits; I like tea")).await;
    env.wait_for_sent(3).await;
    let results = tool_results(branch_requests(&env).last().unwrap());
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(results[0].starts_with("error: Carol is not writing in this turn"), "{results:?}");
    assert!(results[1].starts_with("error: a note holds at most 200 characters"), "{results:?}");
    assert!(results[2].starts_with("error: Ada's profile is full (20 notes)"), "{results:?}");
    assert_eq!(results[3], "corrected Ada's note 20: was \"fact number 20\", now \"likes tea\"");
    let notes = note_texts(&env.admin(&format!("/api/people/{id}")).await);
    assert_eq!(notes.len(), 20);
    assert_eq!(notes[19], "likes tea");
    assert!(notes.iter().all(|note| !note.contains("Carol") && !note.contains("yyy")), "{notes:?}");
    assert_eq!(env.admin("/api/people?q=carol").await, json!([]), "no record was made for Carol");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_people_api_is_for_operators_and_a_link_merges_two_records_whose_time_zone_schedules_use() {
    let env = TestEnv::start().await;
    env.llm.reply("Hi on Telegram.");
    env.telegram_update(&dana_on_telegram(1, "hi")).await;
    env.wait_for_sent(1).await;
    env.llm.reply("Hi on Slack.");
    env.slack_event(&slack_callback("Ev1", slack_dm("U1", "D1", "hi", "1795000000.000100"))).await;
    wait_for_posts(&env, 1).await;
    let telegram = person_with(&env, "telegram:81").await;
    let slack = person_with(&env, "slack:U1").await;
    let (telegram_id, slack_id) = (telegram["id"].as_str().unwrap(), slack["id"].as_str().unwrap());
    assert_ne!(telegram_id, slack_id, "two records until an operator links them");

    let (status, body) = env
        .admin_send(
            Method::PUT,
            &format!("/api/people/{slack_id}"),
            Some(json!({ "notes": ["works nights"], "time_zone": "Europe/Berlin", "language": "German" })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = env
        .admin_send(Method::PUT, &format!("/api/people/{slack_id}"), Some(json!({ "time_zone": "Mars/Base" })))
        .await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("unknown time zone"), "{body}");

    // Without the operator's token nothing is read or changed.
    let base = &env.worker.base_url;
    let anonymous = [
        (Method::GET, "/api/people".to_string(), None),
        (Method::GET, format!("/api/people/{slack_id}"), None),
        (Method::PUT, format!("/api/people/{slack_id}"), Some(json!({ "notes": ["planted"] }))),
        (Method::POST, format!("/api/people/{telegram_id}/link"), Some(json!({ "platform_key": "slack:U1" }))),
        (Method::DELETE, format!("/api/people/{slack_id}/notes"), None),
    ];
    for (method, path, body) in anonymous {
        let mut request = env.client.request(method.clone(), format!("{base}{path}"));
        if let Some(body) = body {
            request = request.json(&body);
        }
        assert_eq!(request.send().await.unwrap().status(), 401, "{method} {path} without a token");
    }
    let wrong = env.client.get(format!("{base}/api/people")).bearer_auth("not-the-admin-token").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let unchanged = env.admin(&format!("/api/people/{slack_id}")).await;
    assert_eq!(note_texts(&unchanged), ["works nights"]);
    assert_eq!(env.admin("/api/people").await.as_array().unwrap().len(), 2, "nothing was linked");

    // A bad platform id is refused; linking Slack's id merges that record into Telegram's.
    let link = format!("/api/people/{telegram_id}/link");
    let (status, _) = env.admin_send(Method::POST, &link, Some(json!({ "platform_key": "irc:dana" }))).await;
    assert_eq!(status, 400);
    let (status, linked) = env.admin_send(Method::POST, &link, Some(json!({ "platform_key": "slack:U1" }))).await;
    assert_eq!(status, 200, "{linked}");
    let person = &linked["person"];
    assert_eq!(person["id"], telegram_id);
    assert_eq!(note_texts(person), ["works nights"], "the notes came along");
    assert_eq!((person["time_zone"].as_str(), person["language"].as_str()), (Some("Europe/Berlin"), Some("German")));
    assert_eq!(person["platform_ids"].as_array().unwrap().len(), 2, "{person}");
    let (status, _) = env.admin_send(Method::GET, &format!("/api/people/{slack_id}"), None).await;
    assert_eq!(status, 404, "the merged record is gone");
    assert_eq!(env.admin("/api/people").await.as_array().unwrap().len(), 1);

    // Her time zone is the default of a schedule she creates (on either platform).
    env.llm.push(Scripted::ToolCalls(vec![
        (
            "schedule".into(),
            json!({ "action": "create", "prompt": "remind Dana to stretch", "at": "2031-01-02 09:00" }),
        ),
        ("reply".into(), json!({ "content": "I'll remind you." })),
    ]));
    env.telegram_update(&dana_on_telegram(2, "remind me to stretch on 2 January 2031 at 9")).await;
    env.wait_for_sent(2).await;
    let jobs = env.admin("/api/schedules").await;
    assert_eq!(jobs[0]["plan"]["zone"], "Europe/Berlin", "{jobs}");
    assert!(jobs[0]["next_run"].as_str().unwrap().contains("09:00"), "{jobs}");

    // The operator forgets her notes; the answer says what went.
    let (status, removed) = env.admin_send(Method::DELETE, &format!("/api/people/{telegram_id}/notes"), None).await;
    assert_eq!(status, 200);
    assert_eq!(removed["removed"][0]["text"], "works nights");
    assert_eq!(note_texts(&env.admin(&format!("/api/people/{telegram_id}")).await), Vec::<String>::new());
}
