//! Platform adapters: each platform lives in its own module and turns the
//! platform's payloads into [`crate::inbound::InboundEvent`]s and replies into
//! the platform's API calls.

pub mod discord;
pub mod slack;
pub mod telegram;

/// Splits a reply into pieces of at most `limit` characters, preferring to break
/// at a paragraph, then a line, then a space, so no word is cut unless it alone
/// is longer than the limit.
pub fn split_message(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut pieces = Vec::new();
    let mut rest = text.trim();
    while rest.chars().count() > limit {
        let hard_end = rest.char_indices().nth(limit).map_or(rest.len(), |(index, _)| index);
        let window = &rest[..hard_end];
        let cut = ["\n\n", "\n", " "]
            .iter()
            .find_map(|separator| window.rfind(separator).filter(|&at| at > 0))
            .unwrap_or(hard_end);
        pieces.push(rest[..cut].trim_end().to_string());
        rest = rest[cut..].trim_start();
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(rest.to_string());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::split_message;

    #[test]
    fn short_text_is_one_piece() {
        assert_eq!(split_message("hello", 10), vec!["hello"]);
    }

    #[test]
    fn long_text_breaks_at_spaces_within_the_limit() {
        let pieces = split_message("aaaa bbbb cccc dddd", 10);
        assert_eq!(pieces, vec!["aaaa bbbb", "cccc dddd"]);
        assert!(pieces.iter().all(|piece| piece.chars().count() <= 10));
    }

    #[test]
    fn paragraphs_are_preferred_over_spaces() {
        let pieces = split_message("one two\n\nthree four", 15);
        assert_eq!(pieces, vec!["one two", "three four"]);
    }

    #[test]
    fn a_word_longer_than_the_limit_is_cut_hard_on_char_boundaries() {
        let pieces = split_message("ééééééé", 3);
        assert_eq!(pieces, vec!["ééé", "ééé", "é"]);
    }

    #[test]
    fn nothing_is_lost_when_splitting() {
        let text = "word ".repeat(2000);
        let pieces = split_message(&text, 4096);
        assert_eq!(pieces.join(" "), text.trim());
        assert!(pieces.iter().all(|piece| piece.chars().count() <= 4096));
    }
}
