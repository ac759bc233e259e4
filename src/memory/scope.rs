//! Who may see, write and delete a memory. Every memory has a scope: the place
//! it was learned in (a conversation, see [`conversation_scope`]), [`SHARED`]
//! (an operator shared it: visible everywhere) or [`OPERATORS`] (where it was
//! learned is unknown: only operators see it until one shares it). A
//! conversation sees its own memories and the shared ones, and writes and
//! deletes only its own; operators (the admin API and dashboard) see, share and
//! delete all of them. Pure rules; the edge turns them into SQL conditions and
//! vector-index filters.

use crate::agents;
use crate::inbound::ConversationKey;
use crate::platforms::Platform;

/// The scope of a memory an operator shared: every conversation sees it.
pub const SHARED: &str = "shared";
/// The scope of a memory whose origin is unknown (saved before scopes existed,
/// with no conversation recorded): operators only.
pub const OPERATORS: &str = "operators";

/// Who is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer<'a> {
    /// The admin API or dashboard: every memory.
    Operator,
    /// A conversation's tools (its branches), by the conversation's key.
    Conversation(&'a str),
}

/// The scope of what is learned in a conversation: the place whose readers
/// could already read it. A Slack thread (`slack:T:C:root`) belongs to its
/// channel and a Telegram forum topic (`telegram:chat:topic`) to its group,
/// because everyone in the channel or group can read every thread or topic;
/// anything else (a DM, a Discord channel or thread, a web-chat session) is its
/// own place. Member lists are not consulted: see docs/security.md ("What
/// stays private").
///
/// A non-default agent's conversation keeps its agent's prefix in its scope
/// (`agent:b:telegram:1`), so no other agent's conversation ever shares it.
pub fn conversation_scope(conversation_key: &str) -> String {
    match ConversationKey::parse(conversation_key) {
        Ok(key) => agents::within(agents::agent_of(conversation_key), &key.without_thread().to_string()),
        Err(_) => conversation_key.to_string(),
    }
}

/// Whether `source` (where a memory was saved) names a conversation.
pub fn is_conversation_key(source: &str) -> bool {
    agents::platform_part(source)
        .split_once(':')
        .is_some_and(|(platform, rest)| Platform::parse(platform).is_some() && !rest.is_empty())
}

/// The scope a memory returns to when an operator stops sharing it (and the
/// one an existing memory migrated to): its conversation's, or [`OPERATORS`]
/// when its source names none (an import, or nothing recorded).
pub fn private_scope(source: &str) -> String {
    if is_conversation_key(source) {
        conversation_scope(source)
    } else {
        OPERATORS.to_string()
    }
}

impl Viewer<'_> {
    /// The scopes this viewer sees; `None` for every scope (operators).
    pub fn visible_scopes(self) -> Option<Vec<String>> {
        match self {
            Viewer::Operator => None,
            Viewer::Conversation(key) => {
                Some(vec![conversation_scope(key), agents::rules::shared_scope(agents::agent_of(key))])
            }
        }
    }

    /// Whether this viewer may see a memory of `scope`.
    pub fn can_see(self, scope: &str) -> bool {
        self.visible_scopes().is_none_or(|scopes| scopes.iter().any(|visible| visible == scope))
    }

    /// The one scope this viewer may write or delete in; `None` for every scope
    /// (operators). A conversation never changes a shared memory, nor one of
    /// another conversation, nor an operators-only one.
    pub fn writable_scope(self) -> Option<String> {
        match self {
            Viewer::Operator => None,
            Viewer::Conversation(key) => Some(conversation_scope(key)),
        }
    }

    /// Whether this viewer may change or delete a memory of `scope`.
    pub fn can_change(self, scope: &str) -> bool {
        self.writable_scope().is_none_or(|own| own == scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_and_topics_belong_to_their_channel_and_everything_else_is_its_own_place() {
        let cases = [
            ("telegram:1111", "telegram:1111"),
            ("telegram:-100:11", "telegram:-100"),
            ("slack:T1:C1", "slack:T1:C1"),
            ("slack:T1:C1:1700000000.0001", "slack:T1:C1"),
            ("slack:T1:D1:1700000000.0001", "slack:T1:D1"),
            ("discord:dm:42", "discord:dm:42"),
            ("discord:G1:C1", "discord:G1:C1"),
            ("web:abc", "web:abc"),
        ];
        for (key, scope) in cases {
            assert_eq!(conversation_scope(key), scope, "{key}");
        }
    }

    #[test]
    fn a_conversation_sees_its_own_and_shared_memories_only() {
        let dm = Viewer::Conversation("telegram:1111");
        let cases = [
            ("telegram:1111", true),
            (SHARED, true),
            ("telegram:2222", false),
            ("web:abc", false),
            (OPERATORS, false),
            // A key that merely starts like another's is another place.
            ("telegram:11110", false),
            ("telegram:1111:5", false),
        ];
        for (scope, visible) in cases {
            assert_eq!(dm.can_see(scope), visible, "{scope}");
            assert!(Viewer::Operator.can_see(scope), "operators see {scope}");
        }
        let topic = Viewer::Conversation("telegram:-100:11");
        assert!(topic.can_see("telegram:-100"), "a topic sees its group's memories");
        assert_eq!(dm.visible_scopes(), Some(vec!["telegram:1111".to_string(), SHARED.to_string()]));
        assert_eq!(Viewer::Operator.visible_scopes(), None);
    }

    #[test]
    fn an_agents_conversation_sees_its_own_agents_memories_only() {
        let b = Viewer::Conversation("agent:b:telegram:-100:11");
        assert_eq!(conversation_scope("agent:b:telegram:-100:11"), "agent:b:telegram:-100");
        assert!(b.can_see("agent:b:telegram:-100"));
        assert!(b.can_see("agent:b:shared"));
        for other in ["telegram:-100", SHARED, "agent:c:shared", "agent:c:telegram:-100", OPERATORS] {
            assert!(!b.can_see(other), "{other}");
        }
        assert!(!Viewer::Conversation("telegram:-100").can_see("agent:b:shared"));
        assert_eq!(private_scope("agent:b:web:abc"), "agent:b:web:abc");
    }

    #[test]
    fn a_conversation_changes_only_its_own_memories_and_never_shared_ones() {
        let guest = Viewer::Conversation("web:guest");
        let cases = [("web:guest", true), (SHARED, false), (OPERATORS, false), ("telegram:1111", false)];
        for (scope, allowed) in cases {
            assert_eq!(guest.can_change(scope), allowed, "{scope}");
            assert!(Viewer::Operator.can_change(scope));
        }
        assert_eq!(guest.writable_scope().as_deref(), Some("web:guest"));
        let thread = Viewer::Conversation("slack:T1:C1:1700000000.0001");
        assert_eq!(thread.writable_scope().as_deref(), Some("slack:T1:C1"));
    }

    #[test]
    fn an_unknown_origin_is_private_to_operators() {
        let cases = [
            ("telegram:1111", "telegram:1111"),
            ("slack:T1:C1:1.2", "slack:T1:C1"),
            ("web:abc", "web:abc"),
            ("import", OPERATORS),
            ("", OPERATORS),
            ("cortex", OPERATORS),
            ("telegram:", OPERATORS),
            ("shared", OPERATORS),
            ("irc:x", OPERATORS),
        ];
        for (source, scope) in cases {
            assert_eq!(private_scope(source), scope, "{source}");
        }
    }
}
