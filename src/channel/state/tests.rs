//! The channel state's steps against plain inbounds, process events and member
//! counts: engagement, holding for the count, the queue, turns, branches, wake times.

use super::*;
use crate::channel::engagement::Reason;
use crate::channel::processes::{ProcessKind, ProcessStatus, MAX_CONCURRENT_BRANCHES};
use crate::inbound::Author;
use crate::process::envelope::{Envelope, MessageType};

pub(super) fn settings() -> ChannelSettings {
    ChannelSettings {
        triggers: Triggers::default(),
        stickiness: true,
        sticky_window_ms: 15 * 60 * 1000,
        aliases: vec!["edgebot".into()],
        debounce_ms: 1_500,
        max_wait_ms: 5_000,
        timeouts: Timeouts::default(),
    }
}

fn message(delivery: u32, author: &str, text: &str) -> InboundEvent {
    let author = Author { id: author.into(), name: author.into(), is_bot: author.ends_with("bot") };
    InboundEvent::plain_text(-5, &delivery.to_string(), author, text)
}

fn mention(delivery: u32, author: &str, text: &str) -> InboundEvent {
    InboundEvent { is_bot_mention: true, ..message(delivery, author, text) }
}

/// A group whose fresh member list shows three humans, so plain chatter observes.
fn busy_state() -> ChannelState {
    let mut state = ChannelState::default();
    state.membership.update([MembershipCount { others: 3, truncated: false, fetched_at_ms: 0 }]);
    state
}

fn replied() -> TurnResult {
    TurnResult { sent_messages: 1, ..TurnResult::default() }
}

#[test]
fn observed_messages_reach_the_next_turn_once() {
    let mut state = busy_state();
    let settings = settings();
    state.receive(&message(1, "ada", "lunch?"), &settings, 0);
    let receipt = state.receive(&message(2, "bo", "sure"), &settings, 10);
    assert!(!receipt.decision.engages);
    assert_eq!(receipt.wake_at_ms, None, "observing never wakes the channel");
    state.receive(&mention(3, "ada", "edgebot where?"), &settings, 20);

    let turn = state.begin_turn().expect("a turn");
    assert_eq!(turn.context.iter().map(|observed| observed.text.as_str()).collect::<Vec<_>>(), vec!["lunch?", "sure"]);
    assert_eq!(turn.messages.len(), 1);
    assert_eq!(turn.notice, Notice::GroupNudge, "two humans: the group nudge");
    state.finish_turn(&replied(), &settings, 30);
    assert!(state.context_buffer.is_empty());
    assert!(state.begin_turn().is_none(), "the turn's own writes do not retrigger it");
}

#[test]
fn the_context_buffer_keeps_twenty_messages_cut_to_800_chars() {
    let mut state = busy_state();
    let settings = settings();
    state.receive(&message(100, "ada", "hi"), &settings, 0);
    state.receive(&message(101, "bo", "hi"), &settings, 0);
    for index in 0..25 {
        state.receive(&message(index, "bo", &"x".repeat(1_000)), &settings, 0);
    }
    assert_eq!(state.context_buffer.len(), CONTEXT_BUFFER_SIZE);
    assert!(state.context_buffer.items().all(|observed| observed.text.chars().count() == CONTEXT_MESSAGE_CHARS + 1));
}

#[test]
fn messages_arriving_during_a_turn_get_the_next_turn_and_are_never_lost_or_doubled() {
    let mut state = busy_state();
    let settings = settings();
    state.receive(&mention(1, "ada", "first"), &settings, 0);
    let first = state.begin_turn().unwrap();
    assert!(state.receive(&mention(2, "ada", "second"), &settings, 5).decision.engages);
    assert_eq!(state.begin_turn().unwrap(), first, "while a turn runs, it is the turn");
    state.finish_turn(&replied(), &settings, 10);

    let second = state.begin_turn().expect("the late message gets its own turn");
    assert_eq!(second.messages.iter().map(|m| m.event.text.as_str()).collect::<Vec<_>>(), vec!["second"]);
    assert!(second.id > first.id);
    state.finish_turn(&replied(), &settings, 20);
    assert!(state.begin_turn().is_none());
    state.receive(&mention(2, "ada", "second"), &settings, 30);
    assert!(state.prompt_queue.items().is_empty(), "a redelivered message is not queued again");
}

#[test]
fn a_reply_grants_sticky_credit_and_disengage_in_the_same_turn_does_not() {
    let settings = settings();
    let mut state = busy_state();
    state.receive(&message(1, "bo", "hey all"), &settings, 0);
    state.receive(&mention(2, "ada", "edgebot help"), &settings, 0);
    state.begin_turn().unwrap();
    state.finish_turn(&replied(), &settings, 10);
    let follow_up = state.receive(&message(3, "ada", "and then?"), &settings, 20);
    assert_eq!(follow_up.decision.reason, Reason::Sticky);
    state.begin_turn().unwrap();
    state.finish_turn(&TurnResult { sent_messages: 1, disengaged: true, usage: Usage::default() }, &settings, 30);
    let after = state.receive(&message(4, "ada", "more?"), &settings, 40);
    assert!(!after.decision.engages, "disengage keeps the credit cleared despite the same-turn reply");
}

#[test]
fn a_flood_of_long_messages_during_a_turn_keeps_the_queue_inside_its_budget() {
    let settings = settings();
    let mut state = busy_state();
    state.receive(&mention(0, "ada", "edgebot, start"), &settings, 0);
    state.begin_turn().unwrap();
    for delivery in 1..=200 {
        state.receive(&mention(delivery, "ada", &"x".repeat(40_000)), &settings, delivery as i64);
    }
    assert_eq!(state.prompt_queue.items().len(), 201, "every message is queued");
    let whole = state.prompt_queue.items().iter().filter(|queued| queued.event.text.len() == 40_000).count();
    assert_eq!(whole, PROMPT_QUEUE_TEXT_BUDGET / 40_000 + 1, "whole until the budget is passed");
    let body = serde_json::to_string(state.prompt_queue.items()).unwrap();
    assert!(body.len() < 1_000_000, "the checkpoint row stays far from the 2 MB limit: {}", body.len());
    assert!(state.prompt_queue.items().last().unwrap().event.text.ends_with("more characters]"));
}

fn count(others: usize, fetched_at_ms: i64) -> MembershipCount {
    MembershipCount { others, truncated: false, fetched_at_ms }
}

fn settings_without_stickiness() -> ChannelSettings {
    ChannelSettings { stickiness: false, ..settings() }
}

#[test]
fn only_a_decision_that_depends_on_the_member_count_is_held_for_it() {
    let settings = settings();
    let mut state = ChannelState::default();
    let first = message(1, "ada", "hello?");
    assert!(state.must_hold(&first, &settings, 0), "a new group: one human or several decide differently");
    assert!(!state.must_hold(&mention(1, "ada", "edgebot?"), &settings, 0), "a mention engages anyway");
    assert!(!state.must_hold(&InboundEvent { is_dm: true, ..first.clone() }, &settings, 0), "a DM has no room");
    assert!(!state.must_hold(&message(1, "helperbot", "hi"), &settings, 0), "a peer bot never gets the solo rung");
    let elsewhere = InboundEvent { reply_to_other_message_id: Some("7".into()), ..first.clone() };
    assert!(!state.must_hold(&elsewhere, &settings, 0), "a reply to someone else is observed either way");
    let thread = InboundEvent { thread: Some("t1".into()), ..first.clone() };
    assert!(state.must_hold(&thread, &settings, 0), "a new thread: a fresh count of one opens it");
    state.membership.update([count(1, 100)]);
    assert!(!state.must_hold(&first, &settings, 200), "a count is held: decided at once");
}

#[test]
fn held_messages_are_decided_in_order_with_the_count_read_in_the_alarm() {
    let settings = settings();
    for (others, expected) in [
        (1, vec![(true, Reason::SoloHuman), (true, Reason::Mention)]),
        (4, vec![(false, Reason::NotAddressed), (true, Reason::Mention)]),
    ] {
        let mut state = ChannelState::default();
        let first = message(1, "ada", "is the build broken?");
        assert!(state.must_hold(&first, &settings, 1_000));
        assert!(state.hold(&first, 1_000));
        assert!(!state.hold(&first, 1_000), "a repeat is held once");
        let second = mention(2, "ada", "edgebot?");
        assert!(state.must_hold(&second, &settings, 1_200), "behind a held message, even a mention waits");
        state.hold(&second, 1_200);
        assert_eq!(state.wake_at(&settings, 1_300), Some(1_300), "the alarm comes at once to decide them");
        assert!(state.begin_turn().is_none(), "nothing is queued before they are decided");
        assert!(state.held_awaiting_count());

        let decided = state.confirm_held(Some(count(others, 1_500)), &settings);
        let got: Vec<_> =
            decided.iter().map(|(_, receipt)| (receipt.decision.engages, receipt.decision.reason)).collect();
        assert_eq!(got, expected, "{others} other member(s)");
        assert!(state.held.items().is_empty() && !state.held_awaiting_count());
        assert!(
            state.confirm_held(Some(count(others, 1_600)), &settings).is_empty(),
            "a second confirmation decides nothing"
        );
        let queued: Vec<&str> =
            state.prompt_queue.items().iter().map(|queued| queued.event.delivery_id.as_str()).collect();
        let watched: Vec<&str> = state.context_buffer.items().map(|observed| observed.delivery_id.as_str()).collect();
        match others {
            1 => assert_eq!((queued, watched), (vec!["1", "2"], vec![]), "both engage, in the order they came"),
            _ => assert_eq!((queued, watched), (vec!["2"], vec!["1"]), "the first is watched, the mention engages"),
        }
        assert_eq!(state.prompt_queue.items()[0].received_at_ms, if others == 1 { 1_000 } else { 1_200 });
        assert_eq!(state.wake_at(&settings, 1_600), Some(1_200 + settings.debounce_ms), "debounced from arrival");
    }
}

#[test]
fn a_count_that_does_not_come_leaves_the_speakers_to_decide_and_a_crash_loses_nothing() {
    let settings = settings();
    let mut state = ChannelState::default();
    state.hold(&message(1, "ada", "anyone?"), 0);
    // A crash after the hold: the checkpoint still holds the message.
    let checkpoint = state.changed_slots(|_| None).unwrap();
    let mut restored = ChannelState::restore(checkpoint.iter().map(|(index, _, body)| (SLOTS[*index], body.as_str())));
    assert_eq!(restored, state);
    let decided = restored.confirm_held(None, &settings);
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0].1.decision.reason, Reason::SoloHuman, "one speaker seen, no count");
    assert!(restored.membership.get().is_none(), "the next message that depends on it waits for it again");
    assert_eq!(restored.prompt_queue.items().len(), 1);
}

#[test]
fn a_peer_bot_that_speaks_neither_makes_the_count_a_hint_nor_counts_as_a_human() {
    let settings = settings_without_stickiness();
    let mut state = ChannelState::default();
    // Telegram counts Ada, HelperBot and this bot; read before HelperBot spoke.
    state.membership.update([count(2, 0)]);
    let ada = state.receive(&mention(1, "ada", "edgebot, hi"), &settings, 100);
    assert!(ada.decision.multi_human_group, "a bot that never spoke cannot be told from a person");
    let bot = message(2, "helperbot", "hello everyone");
    state.update_membership(None, &bot);
    assert!(state.membership.get().unwrap().is_fresh_and_complete(200), "a bot's first words make no hint");
    assert_eq!(state.receive(&bot, &settings, 200).decision.reason, Reason::NotAddressed);
    let plain = message(3, "ada", "what's the weather?");
    state.update_membership(None, &plain);
    assert_eq!(state.receive(&plain, &settings, 300).decision.reason, Reason::SoloHuman, "still the lone human");
    // Stale (a minute on), the count is a hint: still no second human.
    let later = message(4, "ada", "and tomorrow?");
    state.update_membership(None, &later);
    assert_eq!(state.receive(&later, &settings, 120_000).decision.reason, Reason::SoloHuman);
}

#[test]
fn a_lone_human_is_answered_until_a_second_human_joins_and_speaks() {
    let settings = settings_without_stickiness();
    let mut state = ChannelState::default();
    let first = message(1, "ada", "hello?");
    state.hold(&first, 0);
    let decided = state.confirm_held(Some(count(1, 100)), &settings);
    assert_eq!(decided[0].1.decision.reason, Reason::SoloHuman, "the bot and one human: her first line engages");
    // Bo joins and speaks: the count of one predates him; it is only a hint now.
    let bo = message(2, "bo", "hi all");
    assert!(!state.must_hold(&bo, &settings, 200), "a count is held");
    state.update_membership(None, &bo);
    assert_eq!(state.receive(&bo, &settings, 200).decision.reason, Reason::NotAddressed, "two people are here now");
    assert!(!state.membership.get().unwrap().is_fresh_and_complete(300), "the turn reads it again");
    let again = message(3, "ada", "so, lunch?");
    state.update_membership(None, &again);
    let receipt = state.receive(&again, &settings, 300);
    assert_eq!(receipt.decision.reason, Reason::NotAddressed, "strict now");
    assert!(receipt.decision.multi_human_group);
}

#[test]
fn a_quick_second_follow_up_in_a_busy_group_engages_too() {
    let settings = settings();
    let mut state = busy_state();
    state.receive(&mention(1, "ada", "edgebot, the deploy failed"), &settings, 0);
    state.begin_turn().unwrap();
    state.finish_turn(&replied(), &settings, 10);
    // Two lines before the bot answered the first: both are hers to it.
    let first = state.receive(&message(2, "ada", "it says permission denied"), &settings, 1_000);
    let second = state.receive(&message(3, "ada", "on the prod box"), &settings, 2_000);
    assert_eq!((first.decision.reason, second.decision.reason), (Reason::Sticky, Reason::Sticky));
    // A full quiet window after her last line ends the credit.
    let window = settings.sticky_window_ms;
    let late = state.receive(&message(4, "ada", "anyone?"), &settings, 2_000 + window);
    assert!(!late.decision.engages, "the credit expired after a quiet window");
}

#[test]
fn the_loop_guard_notice_replaces_the_nudge_after_five_peer_bot_turns() {
    let settings = settings();
    let mut state = busy_state();
    state.receive(&message(1, "ada", "hi"), &settings, 0);
    state.receive(&message(2, "bo", "hi"), &settings, 0);
    let mut notices = Vec::new();
    for turn in 0..5u32 {
        state.receive(&mention(10 + turn, "peerbot", "ping"), &settings, i64::from(turn) * 100);
        notices.push(state.begin_turn().unwrap().notice);
        state.finish_turn(&replied(), &settings, i64::from(turn) * 100 + 50);
    }
    assert_eq!(notices[..4], [Notice::GroupNudge; 4]);
    assert_eq!(notices[4], Notice::LoopGuard);
    state.receive(&mention(20, "ada", "stop it"), &settings, 1_000);
    assert_eq!(state.begin_turn().unwrap().notice, Notice::GroupNudge, "a human resets the guard");
}

fn branch(question: &str, origin: &InboundEvent) -> ProcessStatus {
    ProcessStatus::started(ProcessKind::Branch, question, origin.clone(), false, 0)
}

/// A channel that answered Ada's message (delivery 1) and left branch `b1` thinking.
fn thinking_on_branch_b1(settings: &ChannelSettings) -> ChannelState {
    let mut state = busy_state();
    let origin = mention(1, "ada", "edgebot, think hard");
    state.receive(&origin, settings, 0);
    state.begin_turn().unwrap();
    assert!(state.start_process("b1", branch("what is the answer?", &origin)));
    state.finish_turn(&replied(), settings, 20);
    state
}

fn conclusion(id: &str, branch: &str, ts: i64) -> Envelope {
    Envelope::new(id, ts, format!("branch:{branch}"), "channel", MessageType::Done, Some(branch.into()), "42")
}

#[test]
fn a_branch_conclusion_retriggers_the_channel_once_and_is_shown_to_it() {
    let settings = settings();
    let mut state = thinking_on_branch_b1(&settings);
    assert!(state.begin_turn().is_none());
    assert_eq!(
        state.wake_at(&settings, 30),
        Some(settings.timeouts.branch_ms),
        "nothing to do while the branch thinks, but to give up on it if it stays silent"
    );

    assert!(state.receive_process_event(conclusion("e1", "b1", 1_000)));
    assert!(!state.receive_process_event(conclusion("e1", "b1", 1_000)), "a redelivered report is dropped");
    assert_eq!(state.wake_at(&settings, 1_000), Some(1_000 + RETRIGGER_DEBOUNCE_MS));
    let turn = state.begin_turn().expect("a retrigger turn");
    assert!(turn.messages.is_empty());
    assert_eq!(turn.process_events[0].task, "what is the answer?");
    assert_eq!(turn.answering().map(|event| event.delivery_id.as_str()), Some("1"));
    state.finish_turn(&replied(), &settings, 1_100);
    assert!(state.begin_turn().is_none());
    assert!(state.process_events.items().is_empty());
}

#[test]
fn branches_are_capped_and_retriggers_bounded_per_user_message() {
    let settings = settings();
    let mut state = busy_state();
    let origin = mention(1, "ada", "edgebot");
    state.receive(&origin, &settings, 0);
    for index in 0..MAX_CONCURRENT_BRANCHES {
        assert!(state.start_process(&format!("b{index}"), branch("q", &origin)));
    }
    assert!(!state.start_process("extra", branch("q", &origin)));
    assert_eq!(state.processes.get().capacity(ProcessKind::Branch), 0);
    state.begin_turn().unwrap();
    state.finish_turn(&replied(), &settings, 1);

    for index in 0..MAX_CONCURRENT_BRANCHES {
        state.receive_process_event(conclusion(&format!("e{index}"), &format!("b{index}"), 100));
    }
    let mut retrigger_turns = 0;
    for round in 0..5 {
        if round > 0 {
            // Each retrigger turn starts another branch that reports back.
            let id = format!("next{round}");
            assert!(state.start_process(&id, branch("q", &origin)));
            state.receive_process_event(conclusion(&format!("n{round}"), &id, 200 + round));
        }
        if state.begin_turn().is_some() {
            retrigger_turns += 1;
            state.finish_turn(&replied(), &settings, 300);
        }
    }
    assert_eq!(retrigger_turns, MAX_RETRIGGERS_PER_MESSAGE as usize);
    assert!(!state.process_events.items().is_empty(), "later results wait for the next user message");
    state.receive(&mention(9, "ada", "edgebot, and?"), &settings, 300);
    let turn = state.begin_turn().unwrap();
    assert!(!turn.process_events.is_empty(), "and are shown with it");
}

#[test]
fn wake_times_debounce_groups_and_not_dms() {
    let settings = settings();
    let mut state = busy_state();
    state.receive(&message(1, "bo", "x"), &settings, 0);
    state.receive(&message(2, "cy", "x"), &settings, 0);
    assert_eq!(state.receive(&mention(3, "bo", "a"), &settings, 1_000).wake_at_ms, Some(2_500));
    assert_eq!(state.receive(&mention(4, "bo", "b"), &settings, 2_000).wake_at_ms, Some(3_500));
    assert_eq!(
        state.receive(&mention(5, "bo", "c"), &settings, 5_500).wake_at_ms,
        Some(6_000),
        "at most 5 s after the first"
    );

    let mut direct = ChannelState::default();
    let dm = InboundEvent { is_dm: true, ..message(9, "ada", "hi") };
    assert_eq!(direct.receive(&dm, &settings, 700).wake_at_ms, Some(700));
}

#[test]
fn state_survives_a_checkpoint_round_trip_mid_turn() {
    let settings = settings();
    let mut state = busy_state();
    state.receive(&message(1, "bo", "watching"), &settings, 0);
    state.receive(&mention(2, "ada", "edgebot?"), &settings, 0);
    let turn = state.begin_turn().unwrap();
    let checkpoint = state.changed_slots(|_| None).unwrap();
    assert_eq!(checkpoint.len(), SLOTS.len(), "nothing saved: every slot is written");
    let restored = ChannelState::restore(checkpoint.iter().map(|(index, _, body)| (SLOTS[*index], body.as_str())));
    let saved = |index: usize| checkpoint.iter().find(|(at, ..)| *at == index).map(|(_, version, _)| *version);
    assert!(state.changed_slots(saved).unwrap().is_empty(), "nothing changed since the checkpoint");
    assert_eq!(restored, state);
    let mut restored = restored;
    assert_eq!(restored.begin_turn(), Some(turn), "a crashed turn resumes with the same input");
    assert_eq!(ChannelState::restore([("prompt_queue", "garbage"), ("unknown", "{}")]), ChannelState::default());
}

#[test]
fn a_silent_branch_is_given_up_and_the_person_is_told_once() {
    let settings = settings();
    let mut state = thinking_on_branch_b1(&settings);
    let deadline = settings.timeouts.branch_ms;
    assert!(state.expire_processes(deadline - 1, &settings).is_empty());
    let expired = state.expire_processes(deadline, &settings);
    assert_eq!(expired.len(), 1);
    assert_eq!((expired[0].0.as_str(), expired[0].1.kind), ("b1", ProcessKind::Branch));
    let turn = state.begin_turn().expect("a turn to tell the person");
    assert_eq!(turn.process_events[0].envelope.kind, MessageType::Error);
    assert_eq!(turn.answering().map(|event| event.delivery_id.as_str()), Some("1"));
    state.finish_turn(&replied(), &settings, deadline + 10);
    assert!(!state.receive_process_event(conclusion("late", "b1", deadline + 20)), "a late conclusion is dropped");
    assert_eq!(state.wake_at(&settings, deadline + 30), None);
}
