//! Links' rules (pure): agent ids, what a link allows, the keys of link
//! conversations, the turn cap, and the envelope a message travels in.

use serde::{Deserialize, Serialize};

pub use crate::agents::rules::{agent_of, is_agent_id};
use crate::process::envelope::{Envelope, MessageType};

/// A link conversation closes after this many messages over it (both ways
/// counted): a loop between two agents ends here, never on the bill.
pub const TURN_CAP: u32 = 20;
/// Links an operator may configure.
pub const MAX_LINKS: usize = 100;
/// The prefix of a link conversation's key: `link:{self}:{peer}`.
pub const KEY_PREFIX: &str = "link";

/// The key of `agent`'s side of its link conversation with `peer`.
pub fn link_key(agent: &str, peer: &str) -> String {
    format!("{KEY_PREFIX}:{agent}:{peer}")
}

/// (self, peer) of a link conversation's key; None for any other key.
pub fn parse_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix(KEY_PREFIX)?.strip_prefix(':')?;
    let (agent, peer) = rest.split_once(':')?;
    (is_agent_id(agent) && is_agent_id(peer) && agent != peer).then_some((agent, peer))
}

/// The one name of a link exchange between two agents, whichever side
/// speaks (the cap and the opener are kept per exchange).
pub fn pair(a: &str, b: &str) -> String {
    match a <= b {
        true => format!("{a}|{b}"),
        false => format!("{b}|{a}"),
    }
}

crate::named! {
    /// A link's kind: a manager and its report, or two equals.
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum LinkKind {
        /// `from` is the manager: it hands tasks to `to` and gets the outcomes back.
        Hierarchical = "hierarchical",
        Peer = "peer",
    }
}

crate::named! {
    /// Which way messages may go over a link.
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Direction {
        /// Only `from` may start a message to `to` (`to` answers within the
        /// conversation `from` opened, never opens one of its own).
        OneWay = "one_way",
        TwoWay = "two_way",
    }
}

/// A link the operator configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub from: String,
    pub to: String,
    pub kind: LinkKind,
    pub direction: Direction,
}

impl Link {
    /// A link from the operator's words, or what is wrong with them.
    pub fn new(from: &str, to: &str, kind: &str, direction: &str) -> Result<Link, String> {
        for (name, id) in [("from", from), ("to", to)] {
            if !is_agent_id(id) {
                return Err(format!("`{name}` must be an agent id ([a-z][a-z0-9-]{{0,31}})"));
            }
        }
        if from == to {
            return Err("an agent is not linked to itself".into());
        }
        let kind = LinkKind::parse(kind).ok_or("`kind` is hierarchical or peer")?;
        let direction = Direction::parse(direction).ok_or("`direction` is one_way or two_way")?;
        Ok(Link { from: from.into(), to: to.into(), kind, direction })
    }
}

/// Why a message over a link is refused (the model reads it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("`{0}` is not an agent id")]
    NotAnAgent(String),
    #[error("an agent does not message itself")]
    ToItself,
    #[error("there is no link between {from} and {to}")]
    NotLinked { from: String, to: String },
    #[error("the link from {to} to {from} is one-way: {from} may only answer in a conversation {to} opened")]
    OneWay { from: String, to: String },
    #[error("the link conversation between {0} and {1} reached its cap of {TURN_CAP} messages and is closed")]
    AtCap(String, String),
    #[error("this is not a link conversation: conclude_link ends one")]
    NotALinkConversation,
}

/// The link that lets `from` open (or go on with) a conversation with `to`:
/// one from `from` to `to`, or one from `to` to `from` that is two-way.
pub fn may_send<'a>(links: &'a [Link], from: &str, to: &str) -> Result<&'a Link, Refusal> {
    if !is_agent_id(to) {
        return Err(Refusal::NotAnAgent(to.into()));
    }
    if from == to {
        return Err(Refusal::ToItself);
    }
    if let Some(link) = links.iter().find(|link| link.from == from && link.to == to) {
        return Ok(link);
    }
    match links.iter().find(|link| link.from == to && link.to == from) {
        Some(link) if link.direction == Direction::TwoWay => Ok(link),
        Some(_) => Err(Refusal::OneWay { from: from.into(), to: to.into() }),
        None => Err(Refusal::NotLinked { from: from.into(), to: to.into() }),
    }
}

/// Whether `agent` has any link (its channel is offered the link tools).
pub fn has_links(links: &[Link], agent: &str) -> bool {
    links.iter().any(|link| link.from == agent || link.to == agent)
}

/// What a message over the exchange finds: its number, or the cap reached.
pub fn next_turn(turns_so_far: u32) -> Result<u32, u32> {
    match turns_so_far < TURN_CAP {
        true => Ok(turns_so_far + 1),
        false => Err(TURN_CAP),
    }
}

/// The envelope type of a message from `from` over `link`: a manager's first
/// message to its report is a `task`; everything else is a `review` (a turn
/// of the conversation), and an outcome is `done`.
pub fn message_type(link: &Link, from: &str, opens: bool) -> MessageType {
    match (link.kind, opens && link.from == from) {
        (LinkKind::Hierarchical, true) => MessageType::Task,
        _ => MessageType::Review,
    }
}

/// A message over a link in the envelope format (one JSON line), as the
/// receiving side's model reads it.
pub fn envelope_text(envelope: &Envelope) -> String {
    serde_json::to_string(envelope).unwrap_or_default()
}

/// The envelope of a message over a link: `id` unique per exchange turn,
/// `ref` the exchange's pair.
pub fn envelope(from: &str, to: &str, kind: MessageType, turn: u32, ts: i64, body: &str) -> Envelope {
    let pair = pair(from, to);
    Envelope::new(format!("{from}-{}-{ts}-{turn}", kind_word(kind)), ts, from, to, kind, Some(pair), body)
}

fn kind_word(kind: MessageType) -> String {
    serde_json::to_value(kind).ok().and_then(|value| value.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(from: &str, to: &str, kind: &str, direction: &str) -> Link {
        Link::new(from, to, kind, direction).unwrap()
    }

    #[test]
    fn agent_ids_follow_the_shared_pattern() {
        for good in ["default", "ops", "a", "a-1", &"a".repeat(32)] {
            assert!(is_agent_id(good), "{good}");
        }
        for bad in ["", "Ops", "1ops", "-a", "a_b", "a:b", "a b", &"a".repeat(33), "óps"] {
            assert!(!is_agent_id(bad), "{bad}");
        }
    }

    #[test]
    fn a_link_key_names_its_side_and_its_peer_and_nothing_else_is_one() {
        assert_eq!(link_key("ops", "default"), "link:ops:default");
        assert_eq!(parse_key("link:ops:default"), Some(("ops", "default")));
        assert_eq!(agent_of("link:ops:default"), "ops");
        assert_eq!(agent_of("telegram:42"), "default");
        for bad in ["link:ops", "link:ops:ops", "link:Ops:default", "link:a:b:c", "telegram:1:2", "links:a:b"] {
            assert_eq!(parse_key(bad), None, "{bad}");
        }
        assert_eq!(pair("ops", "default"), pair("default", "ops"));
    }

    #[test]
    fn the_operator_s_words_make_a_link_or_say_what_is_wrong() {
        assert_eq!(link("default", "ops", "peer", "two_way").direction, Direction::TwoWay);
        assert!(Link::new("default", "default", "peer", "two_way").unwrap_err().contains("itself"));
        assert!(Link::new("Default", "ops", "peer", "two_way").unwrap_err().contains("`from`"));
        assert!(Link::new("default", "ops", "boss", "two_way").unwrap_err().contains("`kind`"));
        assert!(Link::new("default", "ops", "peer", "both").unwrap_err().contains("`direction`"));
        // The API shows a link in the words it was given.
        let shown = serde_json::to_value(link("default", "ops", "hierarchical", "one_way")).unwrap();
        assert_eq!(
            shown,
            serde_json::json!({"from": "default", "to": "ops", "kind": "hierarchical", "direction": "one_way"})
        );
        for kind in LinkKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for direction in Direction::ALL {
            assert_eq!(serde_json::to_value(direction).unwrap(), direction.as_str());
        }
    }

    #[test]
    fn a_one_way_link_refuses_the_reverse_and_a_two_way_link_allows_both() {
        let one_way = [link("default", "ops", "hierarchical", "one_way")];
        assert!(may_send(&one_way, "default", "ops").is_ok());
        assert!(matches!(may_send(&one_way, "ops", "default"), Err(Refusal::OneWay { .. })));
        let two_way = [link("default", "ops", "peer", "two_way")];
        assert!(may_send(&two_way, "default", "ops").is_ok());
        assert!(may_send(&two_way, "ops", "default").is_ok());
        assert!(matches!(may_send(&two_way, "default", "qa"), Err(Refusal::NotLinked { .. })));
        assert_eq!(may_send(&two_way, "ops", "ops"), Err(Refusal::ToItself));
        assert!(matches!(may_send(&two_way, "ops", "Bad"), Err(Refusal::NotAnAgent(_))));
        assert!(has_links(&two_way, "ops") && !has_links(&two_way, "qa"));
    }

    #[test]
    fn the_cap_allows_twenty_messages_and_no_more() {
        let mut turns = 0;
        while let Ok(next) = next_turn(turns) {
            turns = next;
        }
        assert_eq!(turns, TURN_CAP);
        assert_eq!(next_turn(TURN_CAP), Err(TURN_CAP));
    }

    #[test]
    fn a_manager_s_first_message_is_a_task_in_the_envelope_format() {
        let managed = link("default", "ops", "hierarchical", "one_way");
        assert_eq!(message_type(&managed, "default", true), MessageType::Task);
        assert_eq!(message_type(&managed, "default", false), MessageType::Review);
        assert_eq!(message_type(&link("default", "ops", "peer", "two_way"), "default", true), MessageType::Review);
        let text = envelope_text(&envelope("default", "ops", MessageType::Task, 1, 7, "count the boxes"));
        let read: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((read["v"].as_u64(), read["type"].as_str()), (Some(1), Some("task")));
        assert_eq!((read["from"].as_str(), read["to"].as_str()), (Some("default"), Some("ops")));
        assert_eq!(read["ref"], "default|ops");
        assert_eq!(read["id"], "default-task-7-1");
        assert_eq!(read["body"], "count the boxes");
    }
}
