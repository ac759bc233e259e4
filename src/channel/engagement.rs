//! Whether an inbound wakes the channel (engage) or is only remembered
//! (observe): a priority ladder over plain data, first matching rung wins.
//!
//! The gate is content-blind: it decides whether the bot is in a conversation,
//! not whether a message deserves an answer. That call belongs to the model,
//! helped by the group-chat nudge.

use serde::{Deserialize, Serialize};

use super::participants::{effective_humans, MembershipCount, Participants};
use super::sticky::StickyLedger;
use crate::inbound::InboundEvent;

/// Which explicit triggers engage (ENGAGE_TRIGGERS, default all three).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triggers {
    pub dm: bool,
    pub mention: bool,
    pub reply: bool,
}

impl Default for Triggers {
    fn default() -> Self {
        Triggers { dm: true, mention: true, reply: true }
    }
}

impl Triggers {
    /// Parses a comma-separated list such as `dm,mention`.
    pub fn parse(list: &str) -> Self {
        let has = |name: &str| list.split(',').any(|item| item.trim().eq_ignore_ascii_case(name));
        Triggers { dm: has("dm"), mention: has("mention"), reply: has("reply") }
    }
}

/// Everything the ladder looks at, gathered by the channel before deciding.
#[derive(Debug, Clone)]
pub struct EngagementInput<'a> {
    pub event: &'a InboundEvent,
    /// Speakers of the last seven days, the current author included.
    pub participants: &'a Participants,
    pub membership: Option<&'a MembershipCount>,
    pub sticky: &'a StickyLedger,
    pub stickiness: bool,
    /// The bot's names: BOT_NAME and BOT_ALIASES.
    pub aliases: &'a [String],
    /// The bot has sent into this conversation (or a bot message of its own was seen).
    pub bot_in_thread: bool,
    pub triggers: Triggers,
    pub now_ms: i64,
}

/// The rung that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Command,
    Dm,
    Mention,
    ReplyToBot,
    AddressedElsewhereCreditKept,
    Sticky,
    Alias,
    MentionsOthers,
    ReplyToSomeoneElse,
    NamesPeerBot,
    ThreadWithoutBot,
    SoloHuman,
    NotAddressed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Dm => "dm",
            Reason::Mention => "mention",
            Reason::ReplyToBot => "reply to the bot",
            Reason::AddressedElsewhereCreditKept => "addressed to someone else (sticky credit kept)",
            Reason::Sticky => "sticky credit",
            Reason::Alias => "alias",
            Reason::MentionsOthers => "mentions others",
            Reason::ReplyToSomeoneElse => "reply to someone else's message",
            Reason::NamesPeerBot => "names a peer bot",
            Reason::ThreadWithoutBot => "thread the bot is not in",
            Reason::SoloHuman => "solo human",
            Reason::NotAddressed => "not addressed",
        }
    }
}

/// The decision for one inbound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub engages: bool,
    pub reason: Reason,
    /// The author's sticky credit is spent by this decision (and slides forward).
    pub spends_credit: bool,
    /// More than one human is in this group (drives the group-chat nudge).
    pub multi_human_group: bool,
}

impl Decision {
    pub fn label(&self) -> &'static str {
        if self.engages {
            "engage"
        } else {
            "observe"
        }
    }
}

/// Whether the text names the bot: case-insensitive substring, no word boundaries.
pub fn matches_alias(text: &str, aliases: &[String]) -> bool {
    let text = text.to_lowercase();
    aliases.iter().map(|alias| alias.trim().to_lowercase()).any(|alias| !alias.is_empty() && text.contains(&alias))
}

fn names_peer_bot(text: &str, participants: &Participants) -> bool {
    let text = text.to_lowercase();
    participants.peer_bot_names().map(str::to_lowercase).any(|name| name.chars().count() >= 2 && text.contains(&name))
}

/// The structural "aimed at someone else" test shared by the multi-human
/// pre-check and the suppressors.
fn targets_someone_else(input: &EngagementInput<'_>) -> Option<Reason> {
    let event = input.event;
    // Where the reply field names only the thread's first author (Slack), the
    // bot being in the thread means the reply may well be to the bot. Where it
    // names the exact message answered (Telegram, Discord), it is never that.
    let reply_may_be_to_bot = event.reply_is_thread_root && input.bot_in_thread;
    if event.mentions_others {
        Some(Reason::MentionsOthers)
    } else if event.reply_to_other_message_id.is_some() && !reply_may_be_to_bot {
        Some(Reason::ReplyToSomeoneElse)
    } else if names_peer_bot(&event.text, input.participants) {
        Some(Reason::NamesPeerBot)
    } else {
        None
    }
}

/// Decides engage or observe for one inbound.
pub fn decide(input: &EngagementInput<'_>) -> Decision {
    let event = input.event;
    let humans = effective_humans(input.participants, input.membership, input.now_ms);
    let multi_human_group = !event.is_dm && humans > 1;
    let decision = |engages, reason| Decision { engages, reason, spends_credit: false, multi_human_group };

    // 1. Explicit triggers. A command is addressed to the bot by construction.
    if event.is_command {
        return decision(true, Reason::Command);
    }
    if input.triggers.dm && event.is_dm {
        return decision(true, Reason::Dm);
    }
    if input.triggers.mention && event.is_bot_mention {
        return decision(true, Reason::Mention);
    }
    if input.triggers.reply && event.reply_to_bot_message_id.is_some() {
        return decision(true, Reason::ReplyToBot);
    }

    let aliased = matches_alias(&event.text, input.aliases);
    let has_credit = input.stickiness && input.sticky.has_credit(&event.author.id, input.now_ms);
    let elsewhere = targets_someone_else(input);

    // 2. In a busy group, a credited author talking to someone else keeps the credit.
    if has_credit && multi_human_group && elsewhere.is_some() && !aliased {
        return decision(false, Reason::AddressedElsewhereCreditKept);
    }
    // 3. Sticky credit: mid-conversation with this author.
    if has_credit {
        return Decision { spends_credit: true, ..decision(true, Reason::Sticky) };
    }
    // 4. The bot's name in the text.
    if aliased {
        return decision(true, Reason::Alias);
    }
    // 5. Suppressors: clearly aimed elsewhere.
    if let Some(reason) = elsewhere {
        return decision(false, reason);
    }
    // 6. Threads fail closed unless the bot is in them or only one human can see them.
    let solo_by_fresh_read = input
        .membership
        .is_some_and(|read| read.is_fresh_and_complete(input.now_ms) && read.humans(input.participants) <= 1);
    if event.thread.is_some() && !input.bot_in_thread && !solo_by_fresh_read {
        return decision(false, Reason::ThreadWithoutBot);
    }
    // 7. A one-human room needs no @mention on every line; peer bots never get this.
    if humans <= 1 && !event.author.is_bot {
        return decision(true, Reason::SoloHuman);
    }
    decision(false, Reason::NotAddressed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::Author;

    const NOW: i64 = 10_000_000;

    fn event(author: &str, text: &str) -> InboundEvent {
        let author = Author { id: author.into(), name: author.into(), is_bot: author.ends_with("bot") };
        InboundEvent::plain_text(-1, "1", author, text)
    }

    /// A room with these speakers (names ending in "bot" are bots).
    fn room(speakers: &[&str]) -> Participants {
        let mut participants = Participants::default();
        for speaker in speakers {
            participants.record(speaker, speaker, speaker.ends_with("bot"), NOW);
        }
        participants
    }

    fn credited(authors: &[&str]) -> StickyLedger {
        let mut ledger = StickyLedger::default();
        ledger.grant(authors.iter().copied(), NOW - 1_000, 15 * 60 * 1000);
        ledger
    }

    struct Case {
        name: &'static str,
        event: InboundEvent,
        speakers: &'static [&'static str],
        sticky: &'static [&'static str],
        membership: Option<MembershipCount>,
        bot_in_thread: bool,
        triggers: Triggers,
        expect: (bool, Reason),
        spends: bool,
    }

    fn case(
        name: &'static str,
        event: InboundEvent,
        speakers: &'static [&'static str],
        expect: (bool, Reason),
    ) -> Case {
        Case {
            name,
            event,
            speakers,
            sticky: &[],
            membership: None,
            bot_in_thread: false,
            triggers: Triggers::default(),
            expect,
            spends: false,
        }
    }

    fn with(mut event: InboundEvent, change: impl FnOnce(&mut InboundEvent)) -> InboundEvent {
        change(&mut event);
        event
    }

    fn run(case: &Case) -> Decision {
        let participants = room(case.speakers);
        let sticky = credited(case.sticky);
        let aliases = vec!["edgebot".to_string(), "에지봇".to_string()];
        decide(&EngagementInput {
            event: &case.event,
            participants: &participants,
            membership: case.membership.as_ref(),
            sticky: &sticky,
            stickiness: true,
            aliases: &aliases,
            bot_in_thread: case.bot_in_thread,
            triggers: case.triggers,
            now_ms: NOW,
        })
    }

    #[test]
    fn the_ladder() {
        let busy: &[&str] = &["ada", "bo", "cy"];
        let fresh_solo = MembershipCount { others: 1, truncated: false, fetched_at_ms: NOW - 1_000 };
        let cases = vec![
            case(
                "a slash command always engages",
                with(event("ada", "/ask x"), |e| e.is_command = true),
                busy,
                (true, Reason::Command),
            ),
            case("dm engages", with(event("ada", "hi"), |e| e.is_dm = true), &["ada"], (true, Reason::Dm)),
            Case {
                triggers: Triggers::parse("mention,reply"),
                ..case(
                    "dm trigger off: a lone human still gets the fallback",
                    with(event("ada", "hi"), |e| e.is_dm = true),
                    &["ada"],
                    (true, Reason::SoloHuman),
                )
            },
            case(
                "mention engages in a busy room",
                with(event("ada", "hey"), |e| e.is_bot_mention = true),
                busy,
                (true, Reason::Mention),
            ),
            case(
                "mention engages even when others are tagged too",
                with(event("ada", "hey"), |e| {
                    e.is_bot_mention = true;
                    e.mentions_others = true;
                }),
                busy,
                (true, Reason::Mention),
            ),
            case(
                "reply to the bot engages",
                with(event("ada", "yes"), |e| e.reply_to_bot_message_id = Some("9".into())),
                busy,
                (true, Reason::ReplyToBot),
            ),
            Case {
                triggers: Triggers::parse("dm"),
                ..case(
                    "mention trigger off falls through",
                    with(event("ada", "hey"), |e| e.is_bot_mention = true),
                    busy,
                    (false, Reason::NotAddressed),
                )
            },
            Case {
                sticky: &["ada"],
                spends: true,
                ..case("sticky credit engages in a busy room", event("ada", "and then?"), busy, (true, Reason::Sticky))
            },
            Case {
                sticky: &["ada"],
                ..case(
                    "credit survives a message aimed at someone else in a multi-human group",
                    with(event("ada", "what do you think?"), |e| e.mentions_others = true),
                    busy,
                    (false, Reason::AddressedElsewhereCreditKept),
                )
            },
            Case {
                sticky: &["ada"],
                ..case(
                    "credit kept when replying to another human",
                    with(event("ada", "agreed"), |e| e.reply_to_other_message_id = Some("4".into())),
                    busy,
                    (false, Reason::AddressedElsewhereCreditKept),
                )
            },
            Case {
                sticky: &["ada"],
                spends: true,
                ..case(
                    "an alias overrides the pre-check and the credit is spent",
                    with(event("ada", "@bo and edgebot, thoughts?"), |e| e.mentions_others = true),
                    busy,
                    (true, Reason::Sticky),
                )
            },
            Case {
                sticky: &["ada"],
                spends: true,
                ..case(
                    "in a solo room the credit beats mentions of others",
                    with(event("ada", "cc @bo"), |e| e.mentions_others = true),
                    &["ada"],
                    (true, Reason::Sticky),
                )
            },
            case(
                "alias engages, case-insensitive",
                event("bo", "EdgeBot, what time is it?"),
                busy,
                (true, Reason::Alias),
            ),
            case(
                "an alias inside a non-English sentence engages",
                event("bo", "토토아 에지봇 라라아 둘 다 봐"),
                busy,
                (true, Reason::Alias),
            ),
            case(
                "alias inside a word engages (no word boundaries)",
                event("bo", "ask the edgebots"),
                busy,
                (true, Reason::Alias),
            ),
            case(
                "alias is not suppressed by mentions of others",
                with(event("bo", "edgebot and @cy"), |e| e.mentions_others = true),
                busy,
                (true, Reason::Alias),
            ),
            case(
                "mentions of others suppress the fallback",
                with(event("ada", "@bo look"), |e| e.mentions_others = true),
                &["ada"],
                (false, Reason::MentionsOthers),
            ),
            case(
                "reply to someone else suppresses while the bot is not in the thread",
                with(event("ada", "true"), |e| e.reply_to_other_message_id = Some("3".into())),
                &["ada"],
                (false, Reason::ReplyToSomeoneElse),
            ),
            Case {
                bot_in_thread: true,
                ..case(
                    "a reply naming the exact message (Telegram, Discord) suppresses even with the bot in the chat",
                    with(event("ada", "true"), |e| e.reply_to_other_message_id = Some("3".into())),
                    &["ada"],
                    (false, Reason::ReplyToSomeoneElse),
                )
            },
            Case {
                bot_in_thread: true,
                ..case(
                    "a Slack thread reply does not suppress once the bot is in the thread",
                    with(event("ada", "true"), |e| {
                        e.reply_to_other_message_id = Some("3".into());
                        e.reply_is_thread_root = true;
                    }),
                    &["ada"],
                    (true, Reason::SoloHuman),
                )
            },
            Case {
                sticky: &["ada"],
                bot_in_thread: true,
                ..case(
                    "a credited person's reply to another human is theirs, though the bot has spoken in the group",
                    with(event("ada", "agreed"), |e| e.reply_to_other_message_id = Some("4".into())),
                    busy,
                    (false, Reason::AddressedElsewhereCreditKept),
                )
            },
            Case {
                sticky: &["ada"],
                bot_in_thread: true,
                spends: true,
                ..case(
                    "in a solo room a credited reply to someone else's message still rides the credit",
                    with(event("ada", "ha"), |e| e.reply_to_other_message_id = Some("4".into())),
                    &["ada"],
                    (true, Reason::Sticky),
                )
            },
            case(
                "naming a known peer bot suppresses",
                event("ada", "helperbot can you check?"),
                &["ada", "helperbot"],
                (false, Reason::NamesPeerBot),
            ),
            case(
                "a fresh thread in a busy channel observes",
                with(event("ada", "new topic"), |e| e.thread = Some("t1".into())),
                &["ada"],
                (false, Reason::ThreadWithoutBot),
            ),
            Case {
                membership: Some(fresh_solo),
                ..case(
                    "a thread seen by one human (fresh read) engages",
                    with(event("ada", "new topic"), |e| e.thread = Some("t1".into())),
                    &["ada"],
                    (true, Reason::SoloHuman),
                )
            },
            Case {
                bot_in_thread: true,
                ..case(
                    "a thread the bot is in gets the fallback",
                    with(event("ada", "more"), |e| e.thread = Some("t1".into())),
                    &["ada"],
                    (true, Reason::SoloHuman),
                )
            },
            case("solo human fallback", event("ada", "morning"), &["ada"], (true, Reason::SoloHuman)),
            case(
                "solo human fallback ignores peer bots in the count",
                event("ada", "morning"),
                &["ada", "helperbot"],
                (true, Reason::SoloHuman),
            ),
            case(
                "a peer bot never gets the solo-human fallback",
                event("helperbot", "hello"),
                &["ada", "helperbot"],
                (false, Reason::NotAddressed),
            ),
            case(
                "two humans: plain chatter observes",
                event("ada", "lunch?"),
                &["ada", "bo"],
                (false, Reason::NotAddressed),
            ),
            Case {
                membership: Some(MembershipCount { others: 3, truncated: false, fetched_at_ms: NOW - 1_000 }),
                ..case(
                    "a fresh member list sees lurkers",
                    event("ada", "anyone?"),
                    &["ada"],
                    (false, Reason::NotAddressed),
                )
            },
            Case {
                membership: Some(MembershipCount { others: 1, truncated: false, fetched_at_ms: NOW - 120_000 }),
                ..case(
                    "a stale member list cannot lower the count",
                    event("ada", "anyone?"),
                    &["ada", "bo"],
                    (false, Reason::NotAddressed),
                )
            },
            Case {
                // The platform counts Ada, HelperBot (and this bot): a known peer bot is no person.
                membership: Some(MembershipCount { others: 2, truncated: false, fetched_at_ms: NOW - 1_000 }),
                ..case(
                    "a member count with a known peer bot in it leaves one human",
                    event("ada", "morning"),
                    &["ada", "helperbot"],
                    (true, Reason::SoloHuman),
                )
            },
            Case {
                membership: Some(MembershipCount { others: 2, truncated: true, fetched_at_ms: NOW - 1_000 }),
                ..case(
                    "a hint that counted a peer bot does not make it a second human",
                    event("ada", "morning"),
                    &["ada", "helperbot"],
                    (true, Reason::SoloHuman),
                )
            },
            Case {
                membership: Some(MembershipCount { others: 2, truncated: false, fetched_at_ms: NOW - 1_000 }),
                ..case(
                    "a thread seen by one human and a known peer bot engages",
                    with(event("ada", "new topic"), |e| e.thread = Some("t1".into())),
                    &["ada", "helperbot"],
                    (true, Reason::SoloHuman),
                )
            },
        ];
        for case in &cases {
            let decision = run(case);
            assert_eq!((decision.engages, decision.reason), case.expect, "{}", case.name);
            assert_eq!(decision.spends_credit, case.spends, "{}: credit", case.name);
        }
    }

    #[test]
    fn multi_human_groups_are_flagged_for_the_nudge() {
        let base = case("", event("ada", "hi"), &["ada", "bo"], (false, Reason::NotAddressed));
        assert!(run(&base).multi_human_group);
        let solo = case("", event("ada", "hi"), &["ada"], (true, Reason::SoloHuman));
        assert!(!run(&solo).multi_human_group);
        let dm = case("", with(event("ada", "hi"), |e| e.is_dm = true), &["ada", "bo"], (true, Reason::Dm));
        assert!(!run(&dm).multi_human_group);
    }

    #[test]
    fn triggers_parse_from_a_list() {
        assert_eq!(Triggers::parse("dm, Mention"), Triggers { dm: true, mention: true, reply: false });
        assert_eq!(Triggers::parse(""), Triggers { dm: false, mention: false, reply: false });
    }
}
