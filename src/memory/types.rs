//! The memory record and its vocabularies: what kind of thing a memory is, how
//! two memories relate, and how a search picks and orders them.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A name that is not one of a vocabulary's words (a tool argument, a stored column).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown {vocabulary} '{value}'; expected one of: {expected}")]
pub struct ParseError {
    /// Which vocabulary was asked for, e.g. "memory type".
    pub vocabulary: &'static str,
    /// The name as given.
    pub value: String,
    /// The accepted names, comma-separated, for the model to correct itself.
    pub expected: String,
}

/// Finds `value` among `all` by `as_str`, ignoring ASCII case and surrounding spaces.
fn parse_word<T: Copy>(
    vocabulary: &'static str,
    value: &str,
    all: &[T],
    as_str: impl Fn(T) -> &'static str,
) -> Result<T, ParseError> {
    let wanted = value.trim();
    all.iter().copied().find(|item| as_str(*item).eq_ignore_ascii_case(wanted)).ok_or_else(|| ParseError {
        vocabulary,
        value: value.to_string(),
        expected: all.iter().map(|item| as_str(*item)).collect::<Vec<_>>().join(", "),
    })
}

/// What kind of thing a memory records; it sets the default importance and the
/// bulletin section the memory can appear in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryType {
    /// Something true, which a later memory may update or contradict.
    Fact,
    /// Something a user likes or dislikes.
    Preference,
    /// A choice that was made, with why.
    Decision,
    /// Who a user or the agent is: never decays, always surfaced.
    Identity,
    /// Something that happened; naturally fades.
    Event,
    /// A pattern the agent inferred.
    Observation,
    /// An outcome someone is working towards.
    Goal,
    /// An actionable task or reminder.
    Todo,
}

impl MemoryType {
    /// Every memory type, in declaration order.
    pub const ALL: [MemoryType; 8] = [
        MemoryType::Fact,
        MemoryType::Preference,
        MemoryType::Decision,
        MemoryType::Identity,
        MemoryType::Event,
        MemoryType::Observation,
        MemoryType::Goal,
        MemoryType::Todo,
    ];

    /// The stored and serialised name (snake_case).
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Fact => "fact",
            MemoryType::Preference => "preference",
            MemoryType::Decision => "decision",
            MemoryType::Identity => "identity",
            MemoryType::Event => "event",
            MemoryType::Observation => "observation",
            MemoryType::Goal => "goal",
            MemoryType::Todo => "todo",
        }
    }

    /// Parses a name case-insensitively.
    pub fn parse(value: &str) -> Result<MemoryType, ParseError> {
        parse_word("memory type", value, &MemoryType::ALL, MemoryType::as_str)
    }

    /// The importance a new memory of this type starts with when none is given.
    /// The values are spacebot's (`src/memory/types.rs`): goals and todos rank
    /// above plain facts because they are actionable.
    pub fn default_importance(self) -> f64 {
        match self {
            MemoryType::Identity => 1.0,
            MemoryType::Goal => 0.9,
            MemoryType::Decision | MemoryType::Todo => 0.8,
            MemoryType::Preference => 0.7,
            MemoryType::Fact => 0.6,
            MemoryType::Event => 0.4,
            MemoryType::Observation => 0.3,
        }
    }

    /// Identity memories keep their importance and are never pruned or merged.
    pub fn is_exempt_from_decay(self) -> bool {
        self == MemoryType::Identity
    }
}

/// How one memory relates to another (an edge of the association graph).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationType {
    /// A general semantic connection.
    RelatedTo,
    /// A newer version of the same information.
    Updates,
    /// Conflicting information.
    Contradicts,
    /// The source was caused by the target.
    CausedBy,
    /// The source is a result of the target.
    ResultOf,
    /// The source is a part of the target.
    PartOf,
}

impl RelationType {
    /// Every relation type, in declaration order.
    pub const ALL: [RelationType; 6] = [
        RelationType::RelatedTo,
        RelationType::Updates,
        RelationType::Contradicts,
        RelationType::CausedBy,
        RelationType::ResultOf,
        RelationType::PartOf,
    ];

    /// The stored and serialised name (snake_case).
    pub fn as_str(self) -> &'static str {
        match self {
            RelationType::RelatedTo => "related_to",
            RelationType::Updates => "updates",
            RelationType::Contradicts => "contradicts",
            RelationType::CausedBy => "caused_by",
            RelationType::ResultOf => "result_of",
            RelationType::PartOf => "part_of",
        }
    }

    /// Parses a name case-insensitively.
    pub fn parse(value: &str) -> Result<RelationType, ParseError> {
        parse_word("relation type", value, &RelationType::ALL, RelationType::as_str)
    }
}

/// One remembered thing, as stored in the `memories` table. Times are
/// milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Unique and stable; associations and vectors refer to it.
    pub id: String,
    /// What kind of thing this records.
    pub memory_type: MemoryType,
    /// The remembered text, one self-contained statement.
    pub content: String,
    /// 0.0 to 1.0; decays daily unless the memory is an Identity.
    pub importance: f64,
    /// When it was saved.
    pub created_at: i64,
    /// When the content or importance last changed by a save or a merge (not by decay).
    pub updated_at: i64,
    /// When a search last returned it; equals `created_at` until then.
    pub last_accessed_at: i64,
    /// How many times a search has returned it.
    pub access_count: u64,
    /// The conversation key the memory was saved from ('import' for an import).
    pub source: String,
    /// Who sees it (see [`super::scope`]): its conversation's scope, `shared`
    /// or `operators`.
    pub scope: String,
}

impl Memory {
    /// A new memory at its type's default importance, never accessed, private
    /// to the conversation of `source` (operators only if `source` names none).
    pub fn new(id: &str, memory_type: MemoryType, content: &str, source: &str, now_ms: i64) -> Memory {
        Memory {
            id: id.to_string(),
            memory_type,
            content: content.to_string(),
            importance: memory_type.default_importance(),
            created_at: now_ms,
            updated_at: now_ms,
            last_accessed_at: now_ms,
            access_count: 0,
            source: source.to_string(),
            scope: super::scope::private_scope(source),
        }
    }
}

/// How the memory search tool finds memories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Vector, full-text and graph results fused by reciprocal rank (needs a query).
    #[default]
    Hybrid,
    /// Newest first; no query needed.
    Recent,
    /// Most important first; no query needed.
    Important,
    /// Only memories of one type (needs a memory type).
    Typed,
}

impl SearchMode {
    /// Every search mode, in declaration order.
    pub const ALL: [SearchMode; 4] = [SearchMode::Hybrid, SearchMode::Recent, SearchMode::Important, SearchMode::Typed];

    /// The serialised name (snake_case).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Recent => "recent",
            SearchMode::Important => "important",
            SearchMode::Typed => "typed",
        }
    }

    /// Parses a name case-insensitively.
    pub fn parse(value: &str) -> Result<SearchMode, ParseError> {
        parse_word("search mode", value, &SearchMode::ALL, SearchMode::as_str)
    }
}

/// The order of a non-hybrid search's results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchSort {
    /// Newest `created_at` first.
    #[default]
    Recent,
    /// Highest importance first.
    Importance,
    /// Highest access count first.
    MostAccessed,
}

impl SearchSort {
    /// Every sort order, in declaration order.
    pub const ALL: [SearchSort; 3] = [SearchSort::Recent, SearchSort::Importance, SearchSort::MostAccessed];

    /// The serialised name (snake_case).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchSort::Recent => "recent",
            SearchSort::Importance => "importance",
            SearchSort::MostAccessed => "most_accessed",
        }
    }

    /// Parses a name case-insensitively.
    pub fn parse(value: &str) -> Result<SearchSort, ParseError> {
        parse_word("search sort", value, &SearchSort::ALL, SearchSort::as_str)
    }
}

/// Orders memories by `sort`; ties fall back to newest first, then to id, so the
/// order is the same on every call.
pub fn sort_memories(memories: &mut [Memory], sort: SearchSort) {
    let newest_then_id = |a: &Memory, b: &Memory| b.created_at.cmp(&a.created_at).then_with(|| a.id.cmp(&b.id));
    crate::sorting::sort_by(memories, |a, b| {
        let primary = match sort {
            SearchSort::Recent => Ordering::Equal,
            SearchSort::Importance => b.importance.total_cmp(&a.importance),
            SearchSort::MostAccessed => b.access_count.cmp(&a.access_count),
        };
        primary.then_with(|| newest_then_id(a, b))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(id: &str, created_at: i64, importance: f64, access_count: u64) -> Memory {
        Memory { importance, access_count, ..Memory::new(id, MemoryType::Fact, "c", "k", created_at) }
    }

    fn ids(memories: &[Memory]) -> Vec<&str> {
        memories.iter().map(|memory| memory.id.as_str()).collect()
    }

    #[test]
    fn memory_types_round_trip_through_names_and_serde() {
        for memory_type in MemoryType::ALL {
            assert_eq!(MemoryType::parse(memory_type.as_str()), Ok(memory_type));
            let json = serde_json::to_string(&memory_type).unwrap();
            assert_eq!(json, format!("\"{}\"", memory_type.as_str()));
        }
        for relation in RelationType::ALL {
            assert_eq!(RelationType::parse(relation.as_str()), Ok(relation));
            assert_eq!(serde_json::to_value(relation).unwrap(), relation.as_str());
        }
        for mode in SearchMode::ALL {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        }
        for sort in SearchSort::ALL {
            assert_eq!(serde_json::to_value(sort).unwrap(), sort.as_str());
        }
    }

    #[test]
    fn parsing_ignores_case_and_names_the_accepted_words_on_error() {
        assert_eq!(MemoryType::parse(" Identity "), Ok(MemoryType::Identity));
        assert_eq!(RelationType::parse("CAUSED_BY"), Ok(RelationType::CausedBy));
        assert_eq!(SearchMode::parse("Important"), Ok(SearchMode::Important));
        assert_eq!(SearchSort::parse("Most_Accessed"), Ok(SearchSort::MostAccessed));
        let error = MemoryType::parse("fcat").unwrap_err();
        assert_eq!(error.value, "fcat");
        assert!(error.to_string().contains("fact, preference, decision"), "{error}");
        assert!(SearchSort::parse("").is_err());
    }

    #[test]
    fn default_importance_ranks_identity_first_and_observations_last() {
        let cases = [
            (MemoryType::Identity, 1.0),
            (MemoryType::Goal, 0.9),
            (MemoryType::Decision, 0.8),
            (MemoryType::Todo, 0.8),
            (MemoryType::Preference, 0.7),
            (MemoryType::Fact, 0.6),
            (MemoryType::Event, 0.4),
            (MemoryType::Observation, 0.3),
        ];
        for (memory_type, importance) in cases {
            assert_eq!(memory_type.default_importance(), importance, "{memory_type:?}");
            assert_eq!(memory_type.is_exempt_from_decay(), memory_type == MemoryType::Identity);
        }
    }

    #[test]
    fn a_memory_serialises_with_snake_case_type_and_reads_back() {
        let memory = Memory::new("m1", MemoryType::Preference, "likes tea", "slack:T1:C1", 1_000);
        let value = serde_json::to_value(&memory).unwrap();
        assert_eq!(value["memory_type"], "preference");
        assert_eq!(value["importance"], 0.7);
        assert_eq!(value["last_accessed_at"], 1_000);
        let back: Memory = serde_json::from_value(value).unwrap();
        assert_eq!(back, memory);
    }

    #[test]
    fn sorting_orders_by_the_key_then_newest_then_id() {
        let mut memories =
            vec![memory("a", 1, 0.5, 3), memory("b", 3, 0.9, 1), memory("c", 2, 0.5, 3), memory("d", 2, 0.5, 0)];
        sort_memories(&mut memories, SearchSort::Recent);
        assert_eq!(ids(&memories), ["b", "c", "d", "a"]);
        sort_memories(&mut memories, SearchSort::Importance);
        assert_eq!(ids(&memories), ["b", "c", "d", "a"]);
        sort_memories(&mut memories, SearchSort::MostAccessed);
        assert_eq!(ids(&memories), ["c", "a", "b", "d"]);
    }
}
