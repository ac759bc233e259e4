//! Where people's rows live with the D1 shards (docs/scale.md, "D1 shards"):
//! a platform id's row on the shard of the id, a person's record on the
//! shard of its home key (the platform id that made it), so an unlinked
//! person's two rows share a shard and one statement reads them. Pure: the
//! store (store.rs, api.rs) and the mover (src/cron/reshard_people.rs) ask
//! these rules where to read and write.

use std::cmp::Reverse;

use crate::people::rules::person_id;
use crate::shards::shard_of;

/// The home key of the record `id` whose platform ids are `keys`: the one
/// whose hash is the id (the id that made the record), else the first in
/// order (a record an operator made or whose first id went elsewhere), None
/// for a record with no ids.
pub fn home_key_of<'a>(id: &str, keys: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut keys: Vec<&str> = keys.into_iter().collect();
    keys.sort_unstable();
    keys.iter().find(|key| person_id(key) == id).or(keys.first()).map(|key| key.to_string())
}

/// The shard of a record whose home key is `home`, among `shards`.
pub fn record_shard(home: &str, shards: u32) -> u32 {
    shard_of(home, shards)
}

/// Groups `keys` by the shard each lives on, in shard order (each shard read once).
pub fn by_shard<'a>(keys: impl IntoIterator<Item = &'a str>, shards: u32) -> Vec<(u32, Vec<&'a str>)> {
    let mut grouped: std::collections::BTreeMap<u32, Vec<&str>> = Default::default();
    for key in keys {
        let keys = grouped.entry(shard_of(key, shards)).or_default();
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    grouped.into_iter().collect()
}

/// One platform id of a person as a shard holds it (listings merge them).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IdRow {
    pub platform_key: String,
    pub person_id: String,
    pub display_name: String,
    pub last_seen_at: Option<i64>,
}

/// A person of a listing: their id, when the record was made, and when any
/// of their ids was last seen (None: never).
pub trait Listed {
    fn person(&self) -> &str;
    fn created_at(&self) -> i64;
    fn last_seen_at(&self) -> Option<i64>;
}

/// Merges the shards' listings: each person once (the first shard's copy),
/// most recently seen first (then the newest made), at most `limit`, as one
/// database's `ORDER BY … LIMIT` would.
pub fn merge_listings<T: Listed>(shards: Vec<Vec<T>>, limit: usize) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    let mut all: Vec<T> = shards.into_iter().flatten().filter(|row| seen.insert(row.person().to_string())).collect();
    all.sort_by_key(|row| (Reverse(row.last_seen_at()), Reverse(row.created_at())));
    all.truncate(limit);
    all
}

/// Adds the ids `others` (read on other shards) to the ids `json` (a record's
/// `IDS` array from its own shard) of person `id`: the record's whole list of
/// platform ids, each once.
pub fn with_ids(json: Option<&str>, id: &str, others: &[IdRow]) -> String {
    let mut ids: Vec<serde_json::Value> = json.and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default();
    for other in others.iter().filter(|other| other.person_id == id) {
        if !ids.iter().any(|known| known["platform_key"] == other.platform_key.as_str()) {
            ids.push(serde_json::json!({
                "platform_key": other.platform_key,
                "display_name": other.display_name,
                "last_seen_at": other.last_seen_at,
            }));
        }
    }
    serde_json::Value::Array(ids).to_string()
}

/// The latest sighting in an `IDS` array (None: none seen).
pub fn last_seen_in(json: Option<&str>) -> Option<i64> {
    let ids: Vec<serde_json::Value> = json.and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default();
    ids.iter().filter_map(|id| id["last_seen_at"].as_i64()).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_home_is_the_id_that_made_it_else_its_first() {
        let maker = "telegram:42";
        let id = person_id(maker);
        assert_eq!(home_key_of(&id, ["slack:T1:U9", maker]).as_deref(), Some(maker));
        assert_eq!(home_key_of(&id, ["slack:T1:U9", "discord:7"]).as_deref(), Some("discord:7"));
        assert_eq!(home_key_of(&id, []), None);
    }

    #[test]
    fn an_unlinked_persons_rows_share_a_shard() {
        for n in 0..200 {
            let key = format!("telegram:{n}");
            let home = home_key_of(&person_id(&key), [key.as_str()]).unwrap();
            assert_eq!(record_shard(&home, 8), shard_of(&key, 8));
        }
    }

    #[test]
    fn keys_are_grouped_by_shard_each_once() {
        let keys = ["telegram:1", "telegram:2", "telegram:1", "slack:T1:U1"];
        let grouped = by_shard(keys, 4);
        let total: usize = grouped.iter().map(|(_, keys)| keys.len()).sum();
        assert_eq!(total, 3);
        for (shard, keys) in &grouped {
            assert!(keys.iter().all(|key| shard_of(key, 4) == *shard));
        }
        assert!(grouped.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert_eq!(by_shard(keys, 1), vec![(0, vec!["telegram:1", "telegram:2", "slack:T1:U1"])]);
    }

    struct Person(&'static str, i64, Option<i64>);
    impl Listed for Person {
        fn person(&self) -> &str {
            self.0
        }
        fn created_at(&self) -> i64 {
            self.1
        }
        fn last_seen_at(&self) -> Option<i64> {
            self.2
        }
    }

    #[test]
    fn listings_merge_most_recently_seen_first_each_once_within_the_limit() {
        let merged = merge_listings(
            vec![
                vec![Person("a", 1, Some(10)), Person("b", 5, None)],
                vec![Person("c", 2, Some(30)), Person("a", 1, Some(10)), Person("d", 9, None)],
            ],
            4,
        );
        let order: Vec<&str> = merged.iter().map(|row| row.0).collect();
        assert_eq!(order, ["c", "a", "d", "b"]);
        assert_eq!(merge_listings(vec![vec![Person("a", 1, None), Person("b", 2, None)]], 1).len(), 1);
    }

    #[test]
    fn a_persons_ids_from_other_shards_join_their_list_once() {
        let local = r#"[{"platform_key":"telegram:1","display_name":"Ann","last_seen_at":5}]"#;
        let others = vec![
            IdRow {
                platform_key: "slack:T1:U1".into(),
                person_id: "p1".into(),
                display_name: "ann".into(),
                last_seen_at: Some(9),
            },
            IdRow {
                platform_key: "telegram:1".into(),
                person_id: "p1".into(),
                display_name: "Ann".into(),
                last_seen_at: Some(5),
            },
            IdRow {
                platform_key: "discord:3".into(),
                person_id: "p2".into(),
                display_name: "Bo".into(),
                last_seen_at: None,
            },
        ];
        let ids = with_ids(Some(local), "p1", &others);
        let parsed: Vec<serde_json::Value> = serde_json::from_str(&ids).unwrap();
        assert_eq!(parsed.len(), 2, "{ids}");
        assert_eq!(last_seen_in(Some(&ids)), Some(9));
        assert_eq!(with_ids(None, "p3", &others), "[]");
        assert_eq!(last_seen_in(None), None);
    }
}
