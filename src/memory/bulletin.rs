//! The memory bulletin's programmatic half: memories picked into titled
//! sections by fixed rules, which one LLM pass then condenses into at most
//! [`BULLETIN_MAX_WORDS`] words for every channel's system prompt. It is rebuilt
//! only when the memory store changed (an idle agent spends no tokens on it).
//! Since it reaches every conversation, it is made of shared memories only: a
//! conversation's private memories never enter it (see [`super::scope`]).

use std::collections::HashSet;

use serde::Serialize;

use super::scope::SHARED;
use super::types::{Memory, MemoryType};

/// The synthesised bulletin's length limit.
pub const BULLETIN_MAX_WORDS: usize = 500;
/// At most this many memories per section.
pub const SECTION_MAX_LINES: usize = 10;
/// The "Recent" section covers memories saved within this many days.
pub const RECENT_WINDOW_DAYS: i64 = 7;
/// The "High importance" section's minimum importance.
pub const HIGH_IMPORTANCE: f64 = 0.8;
const DAY_MS: i64 = 86_400_000;

/// Which memories a section takes, and in what order.
struct SectionRule {
    title: &'static str,
    selects: fn(&Memory, i64) -> bool,
    order: Order,
}

#[derive(Clone, Copy)]
enum Order {
    /// Newest `created_at` first.
    Newest,
    /// Highest importance first, then newest.
    MostImportant,
}

/// The sections in bulletin order; a memory goes to the first section that takes it.
const RULES: [SectionRule; 8] = [
    SectionRule { title: "Identity", selects: is_identity, order: Order::MostImportant },
    SectionRule { title: "Recent", selects: is_recent, order: Order::Newest },
    SectionRule { title: "Decisions", selects: is_decision, order: Order::Newest },
    SectionRule { title: "High importance", selects: is_high_importance, order: Order::MostImportant },
    SectionRule { title: "Preferences", selects: is_preference, order: Order::Newest },
    SectionRule { title: "Goals", selects: is_goal, order: Order::Newest },
    SectionRule { title: "Events", selects: is_event, order: Order::Newest },
    SectionRule { title: "Observations", selects: is_observation, order: Order::Newest },
];

/// The section titles, in bulletin order.
pub const BULLETIN_SECTIONS: [&str; 8] = [
    RULES[0].title,
    RULES[1].title,
    RULES[2].title,
    RULES[3].title,
    RULES[4].title,
    RULES[5].title,
    RULES[6].title,
    RULES[7].title,
];

fn is_identity(memory: &Memory, _now_ms: i64) -> bool {
    memory.memory_type == MemoryType::Identity
}

fn is_recent(memory: &Memory, now_ms: i64) -> bool {
    memory.created_at >= now_ms.saturating_sub(RECENT_WINDOW_DAYS * DAY_MS)
}

fn is_decision(memory: &Memory, _now_ms: i64) -> bool {
    memory.memory_type == MemoryType::Decision
}

fn is_high_importance(memory: &Memory, _now_ms: i64) -> bool {
    memory.importance >= HIGH_IMPORTANCE
}

fn is_preference(memory: &Memory, _now_ms: i64) -> bool {
    memory.memory_type == MemoryType::Preference
}

fn is_goal(memory: &Memory, _now_ms: i64) -> bool {
    memory.memory_type == MemoryType::Goal
}

fn is_event(memory: &Memory, _now_ms: i64) -> bool {
    memory.memory_type == MemoryType::Event
}

fn is_observation(memory: &Memory, _now_ms: i64) -> bool {
    memory.memory_type == MemoryType::Observation
}

/// One titled group of memory lines for the bulletin template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section {
    /// One of [`BULLETIN_SECTIONS`].
    pub title: &'static str,
    /// The memories' contents, one line each (inner line breaks become spaces).
    pub memories: Vec<String>,
}

/// The bulletin's sections at `now_ms`, in [`BULLETIN_SECTIONS`] order:
/// Identity (all identities, most important first), Recent (saved within
/// [`RECENT_WINDOW_DAYS`], newest first), Decisions (newest), High importance (at
/// least [`HIGH_IMPORTANCE`], most important first), then Preferences, Goals,
/// Events and Observations (newest first). Each holds at most
/// [`SECTION_MAX_LINES`]; a memory appears only in the first section that takes
/// it; empty sections, blank memories and memories that are not shared
/// (whoever passes them) are left out.
pub fn sections(memories: &[Memory], now_ms: i64) -> Vec<Section> {
    let mut shown: HashSet<&str> = HashSet::new();
    let mut result = Vec::new();
    for rule in &RULES {
        let mut picked: Vec<&Memory> = memories
            .iter()
            .filter(|memory| memory.scope == SHARED)
            .filter(|memory| !shown.contains(memory.id.as_str()) && !memory.content.trim().is_empty())
            .filter(|memory| (rule.selects)(memory, now_ms))
            .collect();
        crate::sorting::sort_by(&mut picked, |a, b| {
            let newest = b.created_at.cmp(&a.created_at).then_with(|| a.id.cmp(&b.id));
            match rule.order {
                Order::Newest => newest,
                Order::MostImportant => b.importance.total_cmp(&a.importance).then(newest),
            }
        });
        picked.truncate(SECTION_MAX_LINES);
        if picked.is_empty() {
            continue;
        }
        shown.extend(picked.iter().map(|memory| memory.id.as_str()));
        let lines = picked.iter().map(|memory| memory.content.split_whitespace().collect::<Vec<_>>().join(" "));
        result.push(Section { title: rule.title, memories: lines.collect() });
    }
    result
}

/// `text` cut to its first `max_words` words (runs of non-whitespace), with "…"
/// appended when anything was cut; the kept part's own spacing and line breaks
/// are left as they were.
pub fn cap_words(text: &str, max_words: usize) -> String {
    let mut words = 0;
    let mut in_word = false;
    for (index, character) in text.char_indices() {
        if character.is_whitespace() {
            in_word = false;
        } else if !in_word {
            in_word = true;
            words += 1;
            if words > max_words {
                return format!("{}…", text[..index].trim_end());
            }
        }
    }
    text.to_string()
}

/// Whether the bulletin must be rebuilt: never built, or built from another
/// version of the memory store (every memory write bumps the version).
pub fn needs_rebuild(store_version: u64, bulletin_version: Option<u64>) -> bool {
    bulletin_version != Some(store_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 100 * DAY_MS;

    fn memory(id: &str, memory_type: MemoryType, importance: f64, created_day: i64) -> Memory {
        let memory = Memory::new(id, memory_type, &format!("about {id}"), "k", created_day * DAY_MS);
        Memory { importance, scope: SHARED.into(), ..memory }
    }

    #[test]
    fn only_shared_memories_enter_the_bulletin() {
        let private =
            |id: &str, scope: &str| Memory { scope: scope.into(), ..memory(id, MemoryType::Identity, 1.0, 99) };
        let memories = [
            private("planted", "web:guest"),
            private("dm", "telegram:1111"),
            private("unknown", crate::memory::scope::OPERATORS),
            memory("shared", MemoryType::Identity, 1.0, 99),
        ];
        let shown: Vec<String> = sections(&memories, NOW).into_iter().flat_map(|section| section.memories).collect();
        assert_eq!(shown, ["about shared"]);
    }

    fn titles(sections: &[Section]) -> Vec<&str> {
        sections.iter().map(|section| section.title).collect()
    }

    #[test]
    fn each_memory_lands_in_the_first_section_that_takes_it() {
        let memories = [
            memory("name", MemoryType::Identity, 1.0, 1),
            memory("fresh-fact", MemoryType::Fact, 0.6, 99),
            memory("fresh-decision", MemoryType::Decision, 0.8, 98),
            memory("old-decision", MemoryType::Decision, 0.8, 10),
            memory("big-fact", MemoryType::Fact, 0.85, 20),
            memory("tea", MemoryType::Preference, 0.7, 30),
            memory("ship", MemoryType::Goal, 0.5, 40),
            memory("launch", MemoryType::Event, 0.4, 50),
            memory("pattern", MemoryType::Observation, 0.3, 60),
            memory("plain-fact", MemoryType::Fact, 0.6, 10),
            memory("chore", MemoryType::Todo, 0.2, 10),
        ];
        let built = sections(&memories, NOW);
        assert_eq!(titles(&built), BULLETIN_SECTIONS);
        let lines: Vec<Vec<&str>> =
            built.iter().map(|section| section.memories.iter().map(String::as_str).collect()).collect();
        assert_eq!(
            lines,
            [
                vec!["about name"],
                vec!["about fresh-fact", "about fresh-decision"],
                vec!["about old-decision"],
                vec!["about big-fact"],
                vec!["about tea"],
                vec!["about ship"],
                vec!["about launch"],
                vec!["about pattern"],
            ]
        );
    }

    #[test]
    fn sections_hold_at_most_ten_in_their_order_and_empty_ones_are_left_out() {
        let mut memories: Vec<Memory> =
            (0..15).map(|day| memory(&format!("g{day:02}"), MemoryType::Goal, 0.5, day)).collect();
        memories
            .extend((0..12).map(|index| memory(&format!("i{index:02}"), MemoryType::Identity, index as f64 / 20.0, 1)));
        let built = sections(&memories, NOW);
        assert_eq!(titles(&built), ["Identity", "Goals"]);
        assert_eq!(built[0].memories.len(), 10);
        assert_eq!(built[0].memories[0], "about i11");
        assert_eq!(built[1].memories.first().map(String::as_str), Some("about g14"));
        assert_eq!(built[1].memories.last().map(String::as_str), Some("about g05"));
        assert!(sections(&[], NOW).is_empty());
    }

    #[test]
    fn lines_are_single_line_and_blank_memories_are_skipped() {
        let mut multi = memory("m", MemoryType::Preference, 0.7, 1);
        multi.content = "likes\n  green\ttea ".into();
        let mut blank = memory("b", MemoryType::Preference, 0.7, 2);
        blank.content = " \n ".into();
        let built = sections(&[multi, blank], NOW);
        assert_eq!(built, vec![Section { title: "Preferences", memories: vec!["likes green tea".into()] }]);
    }

    #[test]
    fn cap_words_cuts_at_the_limit_and_marks_the_cut() {
        let cases = [
            ("one two three", 3, "one two three"),
            ("one two three", 5, "one two three"),
            ("one two three four", 2, "one two…"),
            ("a\n\nb  c\nd", 3, "a\n\nb  c…"),
            ("  lead in  ", 2, "  lead in  "),
            ("word", 0, "…"),
            ("", 0, ""),
            ("é è ê", 2, "é è…"),
        ];
        for (text, max, expected) in cases {
            assert_eq!(cap_words(text, max), expected, "{text:?} {max}");
        }
        let long = "word ".repeat(BULLETIN_MAX_WORDS + 20);
        assert_eq!(cap_words(&long, BULLETIN_MAX_WORDS).split_whitespace().count(), BULLETIN_MAX_WORDS);
    }

    #[test]
    fn the_bulletin_is_rebuilt_only_when_the_store_moved() {
        let cases = [(0, None, true), (3, Some(3), false), (4, Some(3), true), (2, Some(3), true)];
        for (store, bulletin, expected) in cases {
            assert_eq!(needs_rebuild(store, bulletin), expected, "{store} {bulletin:?}");
        }
    }
}
