//! Which D1 database holds a conversation's rows. Its history (`messages`),
//! its index row (`conversations`), the spend its turns made (`spend_daily`)
//! and its unsent count (`pending_sends`) live in one shard, chosen by a
//! stable hash of the conversation's key through virtual buckets; everything
//! else (people, memories, schedules, agents, settings) stays in the shared
//! database, `DB`.
//!
//! A key's bucket never changes ([`BUCKETS`] of them); a bucket's shard is
//! `bucket % shards`. With `D1_SHARDS = 1` (the default) the one shard is the
//! shared database itself. Shard counts are powers of two, so growing from N
//! to 2N moves half of each shard's buckets, each to exactly one new shard
//! (`bucket % 2N` is `bucket % N` or `bucket % N + N`): docs/scale.md says how.

/// Virtual buckets a key hashes into: enough for 4,096 shards.
pub const BUCKETS: u32 = 4096;
/// The most shards a deployment may name (`D1_SHARDS`).
pub const MAX_SHARDS: u32 = 64;
/// The shared database's binding (and the only shard when there is one).
pub const SHARED: &str = "DB";
/// How long an isolate reuses what another shard says a turn's spender spent
/// today (docs/scale.md, "D1 shards"): the conversation's own shard is read
/// on every turn, each other shard at most this often per isolate and
/// subject, so a turn's reads do not grow with the number of shards.
pub const OTHER_SHARDS_FRESH_MS: i64 = 10_000;

/// The tables whose rows live on a shard: a conversation's rows, and people's
/// (on the shard of their platform id, or of their record's home key).
pub const SHARDED_TABLES: [&str; 9] = [
    "messages",
    "summaries",
    "conversations",
    "spend_daily",
    "usage",
    "pending_sends",
    "moved_rows",
    "people",
    "person_ids",
];

/// Whether a statement reads or writes a sharded table and no shared one
/// (so that, with shards, it goes to a shard: a conversation's or a person's): what `/api/ops`
/// counts as a shard query, for `make bench` and `make simulate`. A table is
/// a name after FROM, INTO, UPDATE or JOIN (not an upsert's `DO UPDATE SET`,
/// a subquery's SELECT or `json_each`).
pub fn is_shard_statement(sql: &str) -> bool {
    let mut words = sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|word| !word.is_empty());
    let (mut sharded, mut shared) = (false, false);
    let mut previous = "";
    for word in words.by_ref() {
        if ["from", "into", "update", "join"].iter().any(|keyword| previous.eq_ignore_ascii_case(keyword)) {
            let table = word.to_ascii_lowercase();
            match SHARDED_TABLES.contains(&table.as_str()) {
                true => sharded = true,
                false if !["json_each", "select", "set"].contains(&table.as_str()) => shared = true,
                false => {}
            }
        }
        previous = word;
    }
    sharded && !shared
}

/// The bucket a key belongs to, for ever: the first four bytes of its SHA-256.
pub fn bucket_of(key: &str) -> u32 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) % BUCKETS
}

/// The shard of a key among `shards`.
pub fn shard_of(key: &str, shards: u32) -> u32 {
    bucket_of(key) % shards.max(1)
}

/// The binding of shard `shard` among `shards`: the shared database when there
/// is one shard, else `DB_SHARD_<i>`.
pub fn binding_of(shard: u32, shards: u32) -> String {
    match shards {
        0 | 1 => SHARED.to_string(),
        _ => format!("DB_SHARD_{shard}"),
    }
}

/// Every shard's binding, in shard order.
pub fn bindings(shards: u32) -> Vec<String> {
    (0..shards.max(1)).map(|shard| binding_of(shard, shards)).collect()
}

/// Whether `shards` is a count a deployment may use: a power of two from 1 to [`MAX_SHARDS`].
pub fn is_valid_count(shards: u32) -> bool {
    shards.is_power_of_two() && shards <= MAX_SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_keeps_its_bucket_and_spreads_evenly() {
        assert_eq!(bucket_of("telegram:1"), bucket_of("telegram:1"));
        let mut per_shard = [0u32; 4];
        for n in 0..4000 {
            per_shard[shard_of(&format!("slack:T1:C{n}"), 4) as usize] += 1;
        }
        for count in per_shard {
            assert!((850..1150).contains(&count), "uneven shards: {per_shard:?}");
        }
    }

    #[test]
    fn doubling_moves_a_key_only_to_its_new_twin() {
        for n in 0..500 {
            let key = format!("discord:{n}");
            let (before, after) = (shard_of(&key, 4), shard_of(&key, 8));
            assert!(after == before || after == before + 4, "{key}: {before} -> {after}");
        }
    }

    #[test]
    fn a_statement_is_a_shards_when_it_names_only_sharded_tables() {
        assert!(is_shard_statement("INSERT INTO messages (id) VALUES (?1)"));
        assert!(is_shard_statement("SELECT * FROM spend_daily WHERE day = ?1 GROUP BY scope"));
        assert!(is_shard_statement(
            "INSERT INTO conversations SELECT value ->> '$.usage' FROM json_each(?1) WHERE true"
        ));
        assert!(is_shard_statement("update pending_sends set pending = 1"));
        assert!(is_shard_statement(
            "INSERT INTO conversations (conversation_key) VALUES (?1) ON CONFLICT (conversation_key) DO UPDATE SET \
             title = coalesce(excluded.title, title)"
        ));
        assert!(!is_shard_statement("SELECT * FROM spend_limits WHERE scope = 'person'"));
        assert!(!is_shard_statement("SELECT 'spent' FROM spend_daily UNION ALL SELECT 'limit' FROM spend_limits"));
        assert!(!is_shard_statement("SELECT json_extract(settings, '$.usage') FROM agents"));
        assert!(!is_shard_statement("SELECT * FROM conversation_identity"));
        assert!(is_shard_statement("SELECT p.id FROM person_ids i JOIN people p ON p.id = i.person_id"));
    }

    #[test]
    fn one_shard_is_the_shared_database() {
        assert_eq!(bindings(1), vec!["DB"]);
        assert_eq!(bindings(4), vec!["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"]);
        assert_eq!(shard_of("anything", 1), 0);
        assert!(is_valid_count(1) && is_valid_count(4) && is_valid_count(64));
        assert!(!is_valid_count(0) && !is_valid_count(3) && !is_valid_count(128));
    }
}
