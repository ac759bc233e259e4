//! The full-text side of hybrid search: a query's words as an FTS5 expression.

/// Words too common to rank by: every memory has them, so matching them
/// makes the index score nearly the whole store for no signal.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "is", "it", "its", "me",
    "my", "no", "not", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them", "then", "there", "they",
    "this", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "you",
    "your",
];
/// Words a query contributes at most.
const MAX_QUERY_WORDS: usize = 16;

/// An FTS5 expression matching any of the query's words (each quoted, so
/// punctuation and operators in user text cannot break the syntax), without
/// stopwords unless the query has nothing else.
pub fn fts_query(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|character: char| !character.is_alphanumeric())
        .filter(|word| word.chars().count() > 1)
        .map(str::to_lowercase)
        .collect();
    let telling: Vec<&String> = words.iter().filter(|word| !STOPWORDS.contains(&word.as_str())).collect();
    let chosen: Vec<&String> = if telling.is_empty() { words.iter().collect() } else { telling };
    let quoted: Vec<String> = chosen.into_iter().take(MAX_QUERY_WORDS).map(|word| format!("\"{word}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_quoted_words_without_stopwords() {
        let cases = [
            ("which database did the team choose", Some(r#""database" OR "team" OR "choose""#)),
            ("Ada's favourite tea", Some(r#""ada" OR "favourite" OR "tea""#)),
            ("what is it", Some(r#""what" OR "is" OR "it""#)),
            ("\"drop\" OR NEAR(x)", Some(r#""drop" OR "near""#)),
            ("a", None),
            ("", None),
        ];
        for (query, expected) in cases {
            assert_eq!(fts_query(query).as_deref(), expected, "{query}");
        }
        let long = (0..40).map(|index| format!("word{index}")).collect::<Vec<_>>().join(" ");
        assert_eq!(fts_query(&long).unwrap().matches(" OR ").count(), MAX_QUERY_WORDS - 1);
    }
}
