//! What a reaction may be: one emoji, or an emoji's short name (`:tada:`,
//! `+1`). Anything else, in particular text that could carry a secret out one
//! reaction at a time, is refused before it reaches a platform.

/// Common emoji and their short names (Slack reacts by name, the other
/// platforms by the emoji itself).
pub const NAMES: &[(&str, &str)] = &[
    ("👍", "+1"),
    ("👍", "thumbsup"),
    ("👎", "-1"),
    ("👎", "thumbsdown"),
    ("👀", "eyes"),
    ("✅", "white_check_mark"),
    ("❤️", "heart"),
    ("❤", "heart"),
    ("🎉", "tada"),
    ("😂", "joy"),
    ("🙏", "pray"),
    ("🔥", "fire"),
    ("🤔", "thinking_face"),
    ("👋", "wave"),
    ("😀", "grinning"),
    ("😊", "blush"),
    ("🙂", "slightly_smiling_face"),
    ("😢", "cry"),
    ("😮", "open_mouth"),
    ("👏", "clap"),
    ("🚀", "rocket"),
    ("💯", "100"),
    ("⭐", "star"),
    ("👌", "ok_hand"),
    ("💡", "bulb"),
    ("❌", "x"),
    ("⚠️", "warning"),
];

/// The longest emoji accepted, in code points (a family with skin tones is 7).
const MAX_EMOJI_CODE_POINTS: usize = 10;
/// The longest short name accepted.
const MAX_NAME_CHARS: usize = 40;

/// A reaction the model may send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaction {
    /// An emoji, as its characters.
    Emoji(String),
    /// A short name, without colons.
    Name(String),
}

impl Reaction {
    /// The emoji itself, for platforms that react by emoji: a known short
    /// name is turned into its emoji; None for an unknown name.
    pub fn emoji(&self) -> Option<&str> {
        match self {
            Reaction::Emoji(emoji) => Some(emoji),
            Reaction::Name(name) => NAMES.iter().find(|(_, known)| known == name).map(|(emoji, _)| *emoji),
        }
    }

    /// The short name, for Slack: a known emoji is turned into its name; an
    /// unknown one is sent as it is (Slack refuses it).
    pub fn name(&self) -> &str {
        match self {
            Reaction::Name(name) => name,
            Reaction::Emoji(emoji) => NAMES.iter().find(|(known, _)| known == emoji).map_or(emoji, |(_, name)| name),
        }
    }
}

/// Reads the `react` tool's argument; the error says why it is refused.
pub fn parse(text: &str) -> Result<Reaction, &'static str> {
    let text = text.trim();
    let name = text.strip_prefix(':').and_then(|rest| rest.strip_suffix(':')).unwrap_or(text);
    if is_short_name(name) {
        return Ok(Reaction::Name(name.to_string()));
    }
    if is_emoji(text) {
        return Ok(Reaction::Emoji(text.to_string()));
    }
    Err("a reaction must be one emoji (e.g. 👍) or an emoji's short name (e.g. :tada:)")
}

fn is_short_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"_+-".contains(&byte))
        && name.bytes().any(|byte| byte.is_ascii_alphanumeric())
}

/// One emoji: pictographs, with joiners, variation selectors, skin tones,
/// a keycap, or a pair of regional indicators (a flag). Tag characters
/// (which can spell any ASCII text invisibly) and more than one flag's worth
/// of regional indicators (which spell letters) are refused.
fn is_emoji(text: &str) -> bool {
    let code_points = text.chars().count();
    let regional = text.chars().filter(|c| ('\u{1F1E6}'..='\u{1F1FF}').contains(c)).count();
    let keycap = text.ends_with('\u{20E3}');
    let pictographs = text.chars().filter(|&c| is_pictograph(c)).count();
    let allowed = |c: char| {
        is_pictograph(c)
            || matches!(c, '\u{200D}' | '\u{FE0F}' | '\u{20E3}' | '\u{1F3FB}'..='\u{1F3FF}' | '\u{1F1E6}'..='\u{1F1FF}')
            || (keycap && (c.is_ascii_digit() || c == '#' || c == '*'))
    };
    (1..=MAX_EMOJI_CODE_POINTS).contains(&code_points)
        && text.chars().all(allowed)
        && (regional == 0 || (regional == 2 && code_points == 2))
        && (pictographs > 0 || regional == 2 || keycap)
}

/// Emoji pictographs (Unicode's emoji blocks and the older symbols used as emoji).
fn is_pictograph(c: char) -> bool {
    matches!(c,
        '\u{1F000}'..='\u{1F1E5}'
            | '\u{1F200}'..='\u{1F3FA}'
            | '\u{1F400}'..='\u{1FAFF}'
            | '\u{2300}'..='\u{23FF}'
            | '\u{2600}'..='\u{27BF}'
            | '\u{2B00}'..='\u{2BFF}'
            | '\u{2190}'..='\u{21FF}'
            | '\u{25A0}'..='\u{25FF}'
            | '\u{2934}'..='\u{2935}'
            | '\u{3030}' | '\u{303D}' | '\u{3297}' | '\u{3299}'
            | '\u{00A9}' | '\u{00AE}' | '\u{203C}' | '\u{2049}' | '\u{2122}' | '\u{2139}' | '\u{24C2}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_and_short_names_are_reactions() {
        let accepted = [
            ("👍", Reaction::Emoji("👍".into())),
            (" 🎉 ", Reaction::Emoji("🎉".into())),
            ("❤️", Reaction::Emoji("❤️".into())),
            ("👍🏽", Reaction::Emoji("👍🏽".into())),
            ("👨‍👩‍👧‍👦", Reaction::Emoji("👨‍👩‍👧‍👦".into())),
            ("🇫🇷", Reaction::Emoji("🇫🇷".into())),
            ("#️⃣", Reaction::Emoji("#️⃣".into())),
            (":tada:", Reaction::Name("tada".into())),
            ("+1", Reaction::Name("+1".into())),
            ("white_check_mark", Reaction::Name("white_check_mark".into())),
        ];
        for (text, expected) in accepted {
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
        assert_eq!(parse(":tada:").unwrap().emoji(), Some("🎉"));
        assert_eq!(parse("👍").unwrap().name(), "+1");
        assert_eq!(parse("unknown_name").unwrap().emoji(), None);
    }

    #[test]
    fn text_dressed_as_a_reaction_is_refused() {
        let refused = [
            ("a sentence", "my key is sk-abc"),
            ("a secret with colons", ":test-openai-key-1:XYZ:"),
            ("upper case", "SK-PROJ"),
            ("a url", "https://evil.example"),
            ("emoji then text", "👍 sk-abcdefghijklmnop"),
            ("regional indicators spelling a word", "🇸🇰🇦🇧🇨🇩"),
            ("tag characters spelling text", "🏴\u{E0073}\u{E006B}\u{E002D}\u{E0061}\u{E007F}"),
            ("a zero-width space alone", "\u{200B}"),
            ("too many emoji", "👍👍👍👍👍👍👍👍👍👍👍"),
            ("empty", ""),
            ("colons only", "::"),
        ];
        for (what, text) in refused {
            assert!(parse(text).is_err(), "{what}: {text:?}");
        }
    }
}
