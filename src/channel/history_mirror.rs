//! The rules of the conversation's history copy in its channel object: what a
//! prompt takes from it, how much it keeps, how new rows travel to D1 (the
//! archive) and how long the memory bulletin is trusted. The object serves a
//! turn's history from its own SQLite; D1 is written after the turn, in one
//! batch, and read only once per conversation (to take over older history).

/// Rows the object keeps: the prompt's `history_limit` twice over (room for
/// compaction to flag the oldest and the prompt to reach further back), and
/// never fewer than this many.
pub const MIN_KEPT_ROWS: usize = 200;

/// Largest JSON array one mirror statement binds (D1 takes rows up to 2 MB).
pub const MIRROR_BYTES_PER_STATEMENT: usize = 256 * 1024;

/// Most unmirrored rows one flush sends; a longer backlog goes over several flushes.
pub const MIRROR_ROWS_PER_FLUSH: usize = 500;

/// How long the cached memory bulletin is used before it is read again, by
/// default (`BULLETIN_CACHE_MS`): the cron rebuilds it at most every 15 minutes.
pub const DEFAULT_BULLETIN_CACHE_MS: i64 = 15 * 60 * 1000;

/// How many history rows the object keeps for a prompt of `history_limit` rows.
pub fn kept_rows(history_limit: u32) -> usize {
    (history_limit as usize * 2).max(MIN_KEPT_ROWS)
}

/// Whether a bulletin read at `fetched_at_ms` may still be used at `now_ms`,
/// kept `cache_ms`. A clock that went backwards counts as stale.
pub fn bulletin_is_fresh(fetched_at_ms: i64, now_ms: i64, cache_ms: i64) -> bool {
    (0..cache_ms).contains(&(now_ms - fetched_at_ms))
}

/// The history before a turn's own messages: from the newest live rows
/// (newest first, `limit + current` of them read), drops the turn's own (a
/// resumed turn already stored them), keeps `limit`, oldest first.
pub fn earlier<T>(newest_first: Vec<T>, id: impl Fn(&T) -> &str, current: &[&str], limit: usize) -> Vec<T> {
    let mut earlier: Vec<T> = newest_first.into_iter().filter(|row| !current.contains(&id(row))).take(limit).collect();
    earlier.reverse();
    earlier
}

/// Packs rows (each already a JSON value) into JSON arrays of at most
/// `max_bytes`, in order; a row larger than that travels alone.
pub fn chunk_rows(rows: &[String], max_bytes: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut chunk: Vec<&str> = Vec::new();
    let mut bytes = 2;
    for row in rows {
        if !chunk.is_empty() && bytes + row.len() + 1 > max_bytes {
            chunks.push(format!("[{}]", chunk.join(",")));
            chunk.clear();
            bytes = 2;
        }
        bytes += row.len() + 1;
        chunk.push(row);
    }
    if !chunk.is_empty() {
        chunks.push(format!("[{}]", chunk.join(",")));
    }
    chunks
}

/// What an alarm's one D1 commit carries, besides the rows themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitPlan {
    /// The conversation index row goes too (it carries the commit mark).
    pub index: bool,
}

/// Whether the alarm commits, given what its object holds unsent: history
/// rows, spend rows, people's sightings, whether the outbox's unsent count
/// moved since it was last reported, and whether the index row moved since
/// it was last written. Nothing but a moved index: no commit (the
/// index has its own debounced write, which a burst still arriving shares).
/// Spend always takes the index row with it, since the row's `flush_seq`
/// is what makes the spend count once; else the row goes when it moved.
pub fn plan_commit(
    history_rows: usize,
    spend_rows: usize,
    sightings: usize,
    outbox_moved: bool,
    index_moved: bool,
) -> Option<CommitPlan> {
    if history_rows + spend_rows + sightings == 0 && !outbox_moved {
        return None;
    }
    Some(CommitPlan { index: index_moved || spend_rows > 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_twice_the_prompt_and_at_least_the_minimum() {
        assert_eq!(kept_rows(50), MIN_KEPT_ROWS);
        assert_eq!(kept_rows(100), MIN_KEPT_ROWS);
        assert_eq!(kept_rows(300), 600);
    }

    #[test]
    fn a_bulletin_is_fresh_for_its_cache_time_and_never_with_none() {
        let (read, cache) = (1_000_000, DEFAULT_BULLETIN_CACHE_MS);
        for (now, cache, fresh) in [
            (read, cache, true),
            (read + cache - 1, cache, true),
            (read + cache, cache, false),
            (read - 1, cache, false), // the clock went back: read again
            (read, 0, false),         // no caching: read every turn
        ] {
            assert_eq!(bulletin_is_fresh(read, now, cache), fresh, "at {now}, kept {cache}");
        }
    }

    #[test]
    fn earlier_leaves_out_the_turns_own_messages_and_keeps_the_newest_oldest_first() {
        let newest_first = vec!["current", "e", "d", "c", "b", "a"];
        let rows = earlier(newest_first, |row| row, &["current"], 3);
        assert_eq!(rows, vec!["c", "d", "e"]);
        assert_eq!(earlier(vec!["b", "a"], |row| row, &[], 5), vec!["a", "b"]);
        assert!(earlier(Vec::<&str>::new(), |row| row, &["x"], 5).is_empty());
    }

    #[test]
    fn chunks_stay_under_the_limit_in_order_and_an_oversized_row_goes_alone() {
        let rows: Vec<String> =
            ["\"aaaa\"", "\"bbbb\"", "\"cccc\"", "\"a much longer row\""].iter().map(|row| row.to_string()).collect();
        let chunks = chunk_rows(&rows, 16);
        assert_eq!(chunks, vec!["[\"aaaa\",\"bbbb\"]", "[\"cccc\"]", "[\"a much longer row\"]"]);
        for chunk in &chunks {
            let parsed: Vec<String> = serde_json::from_str(chunk).unwrap();
            assert!(!parsed.is_empty());
        }
        assert_eq!(chunk_rows(&rows, usize::MAX).len(), 1);
        assert!(chunk_rows(&[], 16).is_empty());
    }

    #[test]
    fn a_commit_goes_when_rows_wait_and_spend_always_takes_the_index_row() {
        let cases = [
            ("nothing waits", (0, 0, 0, false, false), None),
            ("only the index moved: its own write", (0, 0, 0, false, true), None),
            ("history, index unchanged", (3, 0, 0, false, false), Some(CommitPlan { index: false })),
            ("history and a moved index", (3, 0, 0, false, true), Some(CommitPlan { index: true })),
            ("spend: the mark must go", (0, 1, 0, false, false), Some(CommitPlan { index: true })),
            ("a sighting alone", (0, 0, 1, false, false), Some(CommitPlan { index: false })),
            ("the outbox count alone", (0, 0, 0, true, true), Some(CommitPlan { index: true })),
            ("a whole turn", (2, 1, 1, true, true), Some(CommitPlan { index: true })),
        ];
        for (case, (history, spend, sightings, outbox, moved), expected) in cases {
            assert_eq!(plan_commit(history, spend, sightings, outbox, moved), expected, "{case}");
        }
    }
}
