//! The behaviours every messenger must show, each written once against
//! [`Messenger`] and run for every messenger by `conformance_tests!`.

use std::time::Duration;

use serde_json::{json, Value};

use super::kit::{
    events, eventually, expected, history, outbox, shows, Change, Messenger, Settlement, Support, Update,
};
use crate::harness::fake_llm::Pace;
use crate::harness::fake_mcp::FakeMcp;
use crate::harness::{all_message_text, Scripted};
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

/// (1) A forged delivery is refused with a 4xx JSON error, stores nothing and
/// reaches no model; the genuine one after it is answered (so the refusals
/// were not of everything).
pub async fn refuses_forged_deliveries<M: Messenger>() {
    let messenger = M::start(&[]).await;
    let refusals = messenger.forge(1, "forged message").await;
    assert!(!refusals.is_empty(), "{}: a forger has ways to try", M::NAME);
    for refused in &refusals {
        assert!((400..500).contains(&refused.status), "{}: {} was refused: {refused:?}", M::NAME, refused.what);
        assert!(refused.body["error"].is_string(), "{}: {} got a JSON error: {refused:?}", M::NAME, refused.what);
    }
    let env = messenger.env();
    env.settle().await;
    assert_eq!(events(&messenger).await, Vec::<Value>::new(), "{}: nothing stored", M::NAME);
    assert!(env.llm.requests().is_empty(), "{}: no model call", M::NAME);
    assert!(messenger.shown().await.is_empty(), "{}: nothing sent", M::NAME);

    env.llm.reply("genuine and answered");
    messenger.say(2, "a genuine message").await;
    shows(&messenger, &expected::<M>("genuine and answered")).await;
}

/// (2) The same delivery twice (and once more after the reply) gets one reply.
pub async fn answers_a_retried_delivery_once<M: Messenger>() {
    let messenger = M::start(&[]).await;
    messenger.env().llm.reply("only once");
    messenger.say(1, "are you there?").await;
    messenger.say_again(1, "are you there?").await;
    shows(&messenger, &expected::<M>("only once")).await;
    messenger.say_again(1, "are you there?").await;
    shows(&messenger, &expected::<M>("only once")).await;
    assert_eq!(messenger.env().llm.requests().len(), 1, "{}: one turn", M::NAME);
    assert_eq!(events(&messenger).await.len(), 1, "{}: one stored inbound", M::NAME);
}

/// (3) A plain reply arrives, and the model saw what the person said.
pub async fn sends_a_reply<M: Messenger>() {
    let messenger = M::start(&[]).await;
    messenger.env().llm.reply("Hello Ada, nice to meet you!");
    messenger.say(1, "hi there").await;
    shows(&messenger, &expected::<M>("Hello Ada, nice to meet you!")).await;
    let requests = messenger.env().llm.requests();
    assert_eq!(requests.len(), 1);
    assert!(all_message_text(&requests[0]).contains("hi there"), "{}: the model saw the message", M::NAME);
}

/// (4) An answer longer than the platform's limit arrives as several messages,
/// each within the limit, nothing lost.
pub async fn splits_a_long_answer_at_the_limit<M: Messenger>() {
    let messenger = M::start(&[("STREAM_REPLIES", "off")]).await;
    let sentence = "Every paragraph of this long answer adds a few more plain words. ";
    let answer = sentence.repeat(M::LIMIT * 5 / 2 / sentence.len());
    messenger.env().llm.reply(&answer);
    messenger.say(1, "tell me everything").await;
    let pieces = expected::<M>(&answer);
    shows(&messenger, &pieces).await;
    let shown = messenger.shown().await;
    assert!(shown.len() >= 3, "{}: over twice the limit: {} message(s)", M::NAME, shown.len());
    for message in &shown {
        let length = message.chars().count();
        assert!(length <= M::LIMIT, "{}: a message of {length} characters", M::NAME);
    }
    // Each piece is cut at whitespace, which the cut drops.
    let words = |text: &str| text.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let (arrived, written) = (words(&shown.join(" ")), words(&answer));
    assert!(arrived == written, "{}: every word, in order, once: {} of {}", M::NAME, arrived.len(), written.len());
}

/// A few hundred characters written over about 4.5 s.
fn slow_answer() -> String {
    format!(
        "Here is the whole plan for today, step by step. First we gather the notes. Then we write the \
         summary and send it around. {}Done.",
        "More words keep the stream going. ".repeat(6)
    )
}

fn slow_pace() -> Pace {
    Pace { first: Duration::from_millis(500), every: Duration::from_millis(60), chars: 8 }
}

fn is_text(update: &Update) -> bool {
    update.change != Change::Delete
}

/// (5) With streaming on, a slow answer shows while it is written and ends as
/// one message: the whole answer.
pub async fn streams_a_draft_into_the_whole_answer<M: Messenger>() {
    let messenger = M::start(&[("STREAM_REPLIES", M::NAME)]).await;
    messenger.env().llm.set_pace(slow_pace());
    let answer = slow_answer();
    messenger.env().llm.reply(&answer);
    messenger.say(1, "what is the plan?").await;
    let pieces = expected::<M>(&answer);
    assert_eq!(pieces.len(), 1);
    shows(&messenger, &pieces).await;

    let updates = messenger.updates();
    if let Support::Unsupported(why) = messenger.streams() {
        // The alternative: no part shows; the answer arrives once, whole.
        assert_eq!(updates.len(), 1, "{}: one message and no draft ({why}): {updates:?}", M::NAME);
        assert_eq!((updates[0].change, &updates[0].text), (Change::Post, &pieces[0]), "{}: the whole answer", M::NAME);
        return;
    }
    let finished = messenger.env().llm.last_chunks()[0];
    let early: Vec<&Update> = updates.iter().filter(|update| update.at < finished && is_text(update)).collect();
    assert!(early.len() >= 2, "{}: shown in steps while the model wrote: {updates:?}", M::NAME);
    for update in &early {
        assert!(!update.text.is_empty() && update.text.len() < pieces[0].len(), "{}: a part: {update:?}", M::NAME);
        assert!(pieces[0].starts_with(update.text.trim_end()), "{}: {update:?} begins the answer", M::NAME);
    }
    assert!(early.windows(2).all(|pair| pair[1].text.len() >= pair[0].text.len()), "{}: only grows", M::NAME);
    let posts = updates.iter().filter(|update| update.change == Change::Post).count();
    assert_eq!(posts, 1, "{}: one message, edited (or drafted) into the whole: {updates:?}", M::NAME);
    assert!(updates.iter().all(|update| update.change != Change::Delete), "{}: nothing deleted", M::NAME);
}

/// (6) The Worker dies while a streamed draft shows; the turn runs again and
/// ends in `skip`: the draft is deleted (docs/streaming.md, "Drafts are
/// outbox rows"). Where drafts are not messages, nothing of it stays.
pub async fn withdraws_a_draft_the_answer_did_not_need<M: Messenger>() {
    let mut messenger = M::start(&[("STREAM_REPLIES", M::NAME)]).await;
    messenger.env().llm.set_pace(Pace {
        first: Duration::from_millis(300),
        every: Duration::from_millis(60),
        chars: 6,
    });
    match messenger.streams() {
        Support::Yes(()) => messenger.env().llm.reply(&slow_answer()),
        // Unstreamed, the answer comes whole: slowly, so the crash can come first.
        Support::Unsupported(_) => {
            messenger.env().llm.push(Scripted::SlowReply(Duration::from_millis(1_000), slow_answer()))
        }
    }
    messenger.env().llm.push(Scripted::ToolCalls(vec![("skip".into(), json!({ "reason": "said enough" }))]));
    messenger.say(1, "what is the plan?").await;
    match messenger.streams() {
        // Past the draft's first post (its answer came back), still writing.
        Support::Yes(()) => {
            eventually("a draft shown and grown", || async {
                (messenger.updates().iter().filter(|update| is_text(update)).count() >= 2).then_some(())
            })
            .await
        }
        // No draft to show: the crash comes while the model writes.
        Support::Unsupported(_) => {
            eventually("the model writing", || async { (messenger.env().llm.in_flight() == 1).then_some(()) }).await
        }
    }
    messenger.crash_and_restart().await;
    eventually("the turn to run again", || async { (messenger.env().llm.requests().len() >= 2).then_some(()) }).await;
    shows(&messenger, &[]).await;
    let deletes = messenger.updates().iter().filter(|update| update.change == Change::Delete).count();
    match messenger.deletes() {
        Support::Yes(()) => assert!(deletes >= 1, "{}: the draft was deleted", M::NAME),
        Support::Unsupported(why) => {
            // The alternative: the draft was never a message, and no message came.
            assert_eq!(deletes, 0, "{}: {why}", M::NAME);
            let posts = messenger.updates().iter().filter(|update| update.change == Change::Post).count();
            assert_eq!(posts, 0, "{}: no message after the skip ({why})", M::NAME);
        }
    }
    assert_eq!(messenger.env().llm.requests().len(), 2, "{}: the turn ran again, once", M::NAME);
}

/// (7) The platform answers the send with 429 and a wait: the next call waits
/// for it, and exactly one reply arrives. Where there is no platform to
/// refuse, the reply arrives once with one attempt.
pub async fn honours_a_rate_limit<M: Messenger>() {
    const WAIT_SECONDS: u64 = 2;
    let messenger = M::start(&[("STREAM_REPLIES", "off")]).await;
    let support = messenger.rate_limit_next_send(WAIT_SECONDS);
    messenger.env().llm.reply("after the rate limit");
    messenger.say(1, "hi").await;
    shows(&messenger, &expected::<M>("after the rate limit")).await;
    assert_eq!(messenger.env().llm.requests().len(), 1, "{}: the rate limit did not re-run the turn", M::NAME);
    let piece = outbox(&messenger).await.first().cloned().unwrap_or_default();
    assert_eq!(piece["status"], "sent", "{}: {piece}", M::NAME);
    match support {
        Support::Yes(()) => {
            let attempts = messenger.send_attempts();
            assert_eq!(attempts.len(), 2, "{}: one refused attempt and exactly one delivery", M::NAME);
            let waited = attempts[1] - attempts[0];
            assert!(waited >= Duration::from_secs(WAIT_SECONDS), "{}: the wait was honoured: {waited:?}", M::NAME);
            assert_eq!(piece["attempts"], 2, "{}: {piece}", M::NAME);
        }
        Support::Unsupported(why) => assert_eq!(piece["attempts"], 1, "{}: sent at once ({why}): {piece}", M::NAME),
    }
}

/// (8) The Worker dies while the platform holds a send (it took the message,
/// its answer never came): after the restart the send is settled as
/// docs/delivery.md says for the platform, never left silent. Where no
/// platform call can be interrupted, a crash mid-turn still ends in one reply.
pub async fn settles_an_interrupted_send<M: Messenger>() {
    let mut messenger = M::start(&[("STREAM_REPLIES", "off"), ("LLM_TIMEOUT_MS", "10000")]).await;
    let reply = "only once, please";
    let support = messenger.hang_next_send();
    if let Support::Unsupported(_) = support {
        // The crash comes while the model writes instead.
        messenger.env().llm.push(Scripted::SlowReply(Duration::from_secs(3), reply.into()));
    }
    messenger.env().llm.reply(reply);
    messenger.say(1, "hello").await;
    match support {
        Support::Yes(_) => {
            eventually("the held send", || async { (!messenger.send_attempts().is_empty()).then_some(()) }).await
        }
        Support::Unsupported(_) => {
            eventually("the model writing", || async { (messenger.env().llm.in_flight() == 1).then_some(()) }).await
        }
    }
    messenger.crash_and_restart().await;
    let piece = eventually("the piece settled", || async {
        outbox(&messenger).await.into_iter().find(|piece| piece["status"] == "sent")
    })
    .await;
    match support {
        Support::Yes(Settlement::ResentMarked) => {
            let shown =
                eventually("the resend", || async { Some(messenger.shown().await).filter(|shown| shown.len() >= 2) })
                    .await;
            shows(&messenger, &shown).await;
            assert_eq!(shown.len(), 2, "{}: the interrupted copy and exactly one resend", M::NAME);
            assert_eq!(shown[0], reply, "{}: the first copy carries no note", M::NAME);
            assert!(shown[1].starts_with("↻ Sent again after an interruption"), "{}: {}", M::NAME, shown[1]);
            assert!(shown[1].ends_with(reply), "{}: {}", M::NAME, shown[1]);
            assert_eq!(messenger.send_attempts().len(), 2);
            assert_eq!(piece["attempts"], 2, "{}: the interrupted call counts: {piece}", M::NAME);
        }
        Support::Yes(Settlement::LookedUp) => {
            shows(&messenger, &expected::<M>(reply)).await;
            assert!(messenger.lookups() >= 1, "{}: the send was looked up", M::NAME);
            assert_eq!(messenger.send_attempts().len(), 1, "{}: found, so not sent again", M::NAME);
        }
        Support::Yes(Settlement::SentAgain) => {
            shows(&messenger, &expected::<M>(reply)).await;
            assert_eq!(messenger.send_attempts().len(), 2, "{}: the interrupted call and one resend", M::NAME);
        }
        Support::Unsupported(why) => {
            shows(&messenger, &expected::<M>(reply)).await;
            assert_eq!(messenger.env().llm.requests().len(), 2, "{}: the turn ran again ({why})", M::NAME);
        }
    }
    if let Support::Yes(_) = support {
        assert_eq!(messenger.env().llm.requests().len(), 1, "{}: the model was not asked again", M::NAME);
    }
    // The reply's row is stored after its send: waited for, then the note's absence means something.
    let remembered = eventually("the reply in the history", || async {
        Some(history(&messenger).await.to_string()).filter(|remembered| remembered.contains(reply))
    })
    .await;
    assert!(remembered.contains(reply) && !remembered.contains("Sent again"), "{}: {remembered}", M::NAME);
}

const MCP_TOKEN: &str = "mcp-token-7f3a9c2e51";

/// (9) A tool call that needs approval shows buttons; another person's press
/// is refused to them alone and decides nothing; the asker's press runs it.
pub async fn lets_only_the_asker_decide_an_approval<M: Messenger>() {
    let fake = FakeMcp::start().await;
    fake.require_token(MCP_TOKEN);
    let messenger =
        M::start(&[("FETCH_ALLOW_HOSTS", "127.0.0.1"), ("MCP_TRACKER_TOKEN", MCP_TOKEN), ("LLM_TIMEOUT_MS", "10000")])
            .await;
    let env = messenger.env();
    let settings = json!({ "url": fake.url(), "auth": { "kind": "bearer", "token_secret": "MCP_TRACKER_TOKEN" } });
    let (code, server) = env.admin_send(reqwest::Method::PUT, "/api/mcp/servers/tracker", Some(settings)).await;
    assert_eq!(code, 200, "{server}");
    env.llm.push(spawn("file an issue about the slow login", false, "I'll file it once you approve."));
    let create = json!({ "title": "Login is slow" });
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("mcp_tracker_create_issue".into(), create.clone())]));
    env.llm.push_for(WORKER, status("outcome", "Filed issue #101."));
    env.llm.reply("Filed as issue #101.");
    messenger.say(1, "please file an issue: login is slow").await;

    let approval = |id: String| async move {
        let all = env.admin("/api/approvals").await;
        all.as_array().and_then(|all| all.iter().find(|approval| approval["id"] == id.as_str()).cloned())
    };
    let id = eventually("the approval", || async {
        let all = env.admin("/api/approvals").await;
        all.as_array()?.first()?["id"].as_str().map(str::to_string)
    })
    .await;
    eventually("the buttons", || async { messenger.shows_buttons(&id).await.then_some(()) }).await;
    let filed = || fake.tool_calls().into_iter().filter(|(tool, _)| tool == "create_issue").count();
    assert_eq!(filed(), 0, "{}: nothing runs before the yes", M::NAME);

    let shown_before = messenger.shown().await;
    let refusal = messenger.press(2, false, "approve", &id).await;
    assert!(refusal.is_some_and(|text| !text.is_empty()), "{}: the other person is told, privately", M::NAME);
    env.settle().await;
    assert_eq!(approval(id.clone()).await.unwrap()["status"], "waiting", "{}: their press decided nothing", M::NAME);
    assert_eq!(messenger.shown().await, shown_before, "{}: the chat shows nothing of it", M::NAME);
    assert_eq!(filed(), 0);

    let answer = messenger.press(3, true, "approve", &id).await;
    assert!(answer.is_none(), "{}: the asker's press is not refused: {answer:?}", M::NAME);
    let outcome_text = expected::<M>("Filed as issue #101.").remove(0);
    let outcome = tokio::time::timeout(Duration::from_secs(40), async {
        while !messenger.shown().await.contains(&outcome_text) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    if outcome.await.is_err() {
        panic!("{}: no outcome after the yes; the person sees {:?}", M::NAME, messenger.shown().await);
    }
    assert_eq!(filed(), 1, "{}: run once", M::NAME);
    assert_eq!(approval(id.clone()).await.unwrap()["status"], "approved");
    let (_, arguments) = fake.tool_calls().into_iter().find(|(tool, _)| tool == "create_issue").unwrap();
    assert_eq!(arguments, create);
}

const CSV: &str = "region,sales\nnorth,120\nsouth,80\neast,45\n";

/// (10) A file the person sends is kept and reaches the turn and a worker that
/// reads it; the file the worker sends back arrives on the platform, once.
pub async fn takes_a_file_in_and_sends_one_out<M: Messenger>() {
    let messenger = M::start_for_attachments(&[("LLM_TIMEOUT_MS", "10000"), ("STREAM_REPLIES", "off")]).await;
    let env = messenger.env();
    let file = messenger.attach("sales.csv", CSV.as_bytes()).await;
    let summary = "region,total\nnorth,120\nsouth,80\n";
    env.llm.push(spawn(&format!("summarise file {} as a CSV and send it", file.id), false, "On it."));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("attachment_read".into(), json!({ "id": file.id }))]));
    let send = json!({ "name": "summary.csv", "text": summary });
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("send_file".into(), send)]));
    env.llm.push_for(WORKER, status("outcome", "Sent the summary."));
    env.llm.answer_always(Scripted::Reply("Here you are.".into()));
    messenger.say_with_file(1, "summarise this", &file).await;

    let prompt = eventually("the turn with the file", || async {
        env.llm.requests().iter().map(all_message_text).find(|text| text.contains("summarise this"))
    })
    .await;
    let line = format!("sales.csv (text/csv, {} B, id {}): a branch or worker can read it", CSV.len(), file.id);
    assert!(prompt.contains(&line), "{}: the file was kept and named to the model: {prompt}", M::NAME);
    let arrived = eventually("the worker's file on the platform", || async {
        let sent = messenger.files_sent().await;
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    assert_eq!(arrived[0].name, "summary.csv", "{}", M::NAME);
    assert!(arrived[0].body.contains("north,120\nsouth,80"), "{}: the file's own bytes", M::NAME);
    let read = worker_requests(env).iter().flat_map(tool_results).find(|result| result.contains("sales.csv"));
    assert!(read.is_some_and(|result| result.contains(CSV.trim_end())), "{}: the worker read the file", M::NAME);
    env.settle().await;
    assert_eq!(messenger.files_sent().await.len(), 1, "{}: sent once", M::NAME);
}

/// (11) A reply that comes later, from work the channel handed off (a
/// worker's outcome), is a message of its own: the reply the person already
/// read stays as it was.
pub async fn keeps_an_earlier_reply_when_a_worker_reports<M: Messenger>() {
    let messenger = M::start(&[("LLM_TIMEOUT_MS", "10000"), ("STREAM_REPLIES", "off")]).await;
    let env = messenger.env();
    env.llm.push(spawn("count the stars", false, "I've set a worker on it."));
    env.llm.push_for(WORKER, status("outcome", "There are 42 stars."));
    env.llm.reply("The worker counted 42 stars.");
    messenger.say(1, "how many stars are there?").await;
    let mut both = expected::<M>("I've set a worker on it.");
    both.extend(expected::<M>("The worker counted 42 stars."));
    shows(&messenger, &both).await;
}

/// (12) An edit of an earlier message replaces it in what the next turn
/// reads, a deletion takes it out, and neither starts a turn; where the
/// platform has no such event, the old text stays (docs/heard.md).
pub async fn hears_edits_and_deletions<M: Messenger>() {
    let messenger = M::start(&[]).await;
    let env = messenger.env();
    env.llm.reply("Hi Bob.");
    messenger.say(1, "my name is Bob").await;
    shows(&messenger, &expected::<M>("Hi Bob.")).await;
    env.llm.reply("Noted.");
    messenger.say(2, "my pin is 9876").await;
    eventually("the second reply", || async { (messenger.shown().await.len() >= 2).then_some(()) }).await;
    let edited = messenger.edit(3, 1, "my name is Rob").await;
    let deleted = messenger.delete_own(4, 2).await;
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 2, "{}: neither starts a turn", M::NAME);
    env.llm.reply("You are Rob.");
    messenger.say(5, "who am I?").await;
    eventually("the third reply", || async { (messenger.shown().await.len() >= 3).then_some(()) }).await;
    let prompt = all_message_text(&env.llm.requests()[2]);
    match edited {
        Support::Yes(()) => {
            assert!(prompt.contains("my name is Rob") && !prompt.contains("my name is Bob"), "{}: {prompt}", M::NAME)
        }
        Support::Unsupported(why) => assert!(prompt.contains("my name is Bob"), "{}: {why}: {prompt}", M::NAME),
    }
    match deleted {
        Support::Yes(()) => assert!(!prompt.contains("9876"), "{}: the deleted message is gone: {prompt}", M::NAME),
        Support::Unsupported(why) => assert!(prompt.contains("9876"), "{}: {why}: {prompt}", M::NAME),
    }
}

/// (13) A reaction to the bot's reply starts no turn and is seen by the next
/// one; where the platform has none, nothing of the kind shows.
pub async fn sees_a_reaction_to_its_reply<M: Messenger>() {
    let messenger = M::start(&[]).await;
    let env = messenger.env();
    env.llm.reply("The meeting is at 5 pm.");
    messenger.say(1, "when is the meeting?").await;
    shows(&messenger, &expected::<M>("The meeting is at 5 pm.")).await;
    let bot_message = eventually("the reply in the history", || async {
        let history = history(&messenger).await;
        let reply = history.as_array()?.iter().find(|row| row["role"] == "assistant")?.clone();
        // A reply some platform keeps no id for (a Discord command's) is named by nothing.
        Some(reply["platform_message_id"].as_str().unwrap_or_default().to_string())
    })
    .await;
    let reacted = messenger.react(2, &bot_message).await;
    env.settle().await;
    assert_eq!(env.llm.requests().len(), 1, "{}: a reaction starts no turn", M::NAME);
    env.llm.reply("Glad it suits you.");
    messenger.say(3, "thanks").await;
    eventually("the second reply", || async { (messenger.shown().await.len() >= 2).then_some(()) }).await;
    let prompt = all_message_text(&env.llm.requests()[1]);
    match reacted {
        Support::Yes(()) => {
            assert!(prompt.contains("reacted") && prompt.contains("“The meeting is at 5 pm.”"), "{}: {prompt}", M::NAME)
        }
        Support::Unsupported(why) => assert!(!prompt.contains("reacted"), "{}: {why}: {prompt}", M::NAME),
    }
}
