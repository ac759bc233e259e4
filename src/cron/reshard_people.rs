//! Moves people's rows to the D1 shard that now holds them (docs/scale.md,
//! "D1 shards"; src/people/homes.rs says where): after `D1_SHARDS` goes from
//! 1 to N, every person's records and platform ids move out of the shared
//! database; after N doubles, those of the buckets that now belong to a new
//! shard. A page is [`IDS_PER_PAGE`] platform ids, in order; each source's
//! scan is remembered, and a source that holds nothing stray is skipped.
//!
//! As the conversations' mover (reshard.rs), a move copies, then deletes, and
//! a copy made again changes nothing: a record already on its shard keeps the
//! copy with more writes (`version`), an id's row keeps an operator's link
//! over the record a sighting made meanwhile (whose empty record goes). A row
//! from before migration 0036 gets its home key here ([`home_key_of`]).

use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Result};

use super::scan;
use crate::people::homes::home_key_of;
use crate::people::rules::person_id;
use crate::runtime::d1::batch;
use crate::shards::{binding_of, shard_of};

/// Platform ids a page moves at most.
const IDS_PER_PAGE: usize = 100;

/// Moves the next pages' stray people; returns how many platform ids moved.
pub async fn run(env: &Env) -> Result<usize> {
    scan::run(env, &People).await
}

/// People's platform ids (and the records they hold), as the shared scan moves them.
struct People;

impl scan::Mover for People {
    const NAME: &'static str = "reshard_people";
    const PAGE: usize = IDS_PER_PAGE;

    /// The next platform ids after `cursor` on `source`, in order.
    async fn page(&self, source: &D1Database, cursor: &str) -> Result<Vec<String>> {
        use crate::runtime::d1::Metered;
        let rows = source
            .prepare("SELECT platform_key FROM person_ids WHERE platform_key > ?1 ORDER BY platform_key LIMIT ?2")
            .bind(&[cursor.into(), JsValue::from_f64(IDS_PER_PAGE as f64)])?
            .all_counted()
            .await?
            .results::<Value>()?;
        Ok(rows.iter().filter_map(|row| row["platform_key"].as_str().map(str::to_string)).collect())
    }

    async fn move_stray(
        &self,
        env: &Env,
        source: &D1Database,
        here: Option<u32>,
        stray: &[&str],
        shards: u32,
    ) -> Result<usize> {
        move_ids(env, source, here, stray, shards).await
    }
}

/// Copies the platform ids `keys` (stray on `source`, shard `here`; None: the
/// shared database) and the records they hold there whose home is elsewhere
/// to their shards, then deletes them from `source`.
async fn move_ids(env: &Env, source: &D1Database, here: Option<u32>, keys: &[&str], shards: u32) -> Result<usize> {
    if keys.is_empty() {
        return Ok(0);
    }
    let list = serde_json::to_string(keys)?;
    let reads = vec![
        source.prepare("SELECT * FROM person_ids WHERE platform_key IN (SELECT value FROM json_each(?1))"),
        source.prepare(
            "SELECT p.*, (SELECT json_group_array(i.platform_key) FROM person_ids i WHERE i.person_id = p.id) AS keys \
             FROM people p WHERE p.id IN (SELECT person_id FROM person_ids WHERE platform_key IN \
             (SELECT value FROM json_each(?1)))",
        ),
    ];
    let reads = reads.into_iter().map(|read| read.bind(&[list.as_str().into()])).collect::<Result<Vec<_>>>()?;
    let results = batch(source, reads).await?;
    let read = |at: usize| results.get(at).map(|result| result.results::<Value>()).transpose();
    let (ids, records) = (read(0)?.unwrap_or_default(), read(1)?.unwrap_or_default());
    let mut to: std::collections::BTreeMap<u32, (Vec<Value>, Vec<Value>)> = Default::default();
    let mut homes: std::collections::HashMap<String, String> = Default::default();
    let mut moved_records = Vec::new();
    for mut record in records {
        let id = record["id"].as_str().unwrap_or_default().to_string();
        let keys: Vec<String> =
            record["keys"].as_str().and_then(|keys| serde_json::from_str(keys).ok()).unwrap_or_default();
        let home = record["home_key"].as_str().map(str::to_string);
        let Some(home) = home.or_else(|| home_key_of(&id, keys.iter().map(String::as_str))) else { continue };
        homes.insert(id.clone(), home.clone());
        let target = shard_of(&home, shards);
        if here == Some(target) {
            continue;
        }
        record["home_key"] = home.into();
        moved_records.push(id);
        to.entry(target).or_default().0.push(record);
    }
    for mut row in ids {
        let key = row["platform_key"].as_str().unwrap_or_default().to_string();
        let person = row["person_id"].as_str().unwrap_or_default();
        if row["home_key"].is_null() {
            row["home_key"] = homes.get(person).cloned().map_or(Value::Null, Value::from);
        }
        row["own"] = person_id(&key).into();
        to.entry(shard_of(&key, shards)).or_default().1.push(row);
    }
    for (target, (records, ids)) in to {
        let target = env.d1(&binding_of(target, shards))?;
        let (records, ids) = (serde_json::to_string(&records)?, serde_json::to_string(&ids)?);
        let copies = vec![
            target.prepare(RECORDS).bind(&[records.into()])?,
            target.prepare(IDS).bind(&[ids.as_str().into()])?,
            target.prepare(ORPHANS).bind(&[ids.into()])?,
        ];
        batch(&target, copies).await?;
    }
    let moved = serde_json::to_string(&moved_records)?;
    let deletes = vec![
        source
            .prepare("DELETE FROM person_ids WHERE platform_key IN (SELECT value FROM json_each(?1))")
            .bind(&[list.into()])?,
        source.prepare("DELETE FROM people WHERE id IN (SELECT value FROM json_each(?1))").bind(&[moved.into()])?,
    ];
    batch(source, deletes).await?;
    Ok(keys.len())
}

/// Adds moved records; one already there keeps the copy written more often.
const RECORDS: &str = "INSERT INTO people (id, display_name, time_zone, language, is_bot, notes, version, \
     created_at, updated_at, role, bio, home_key) SELECT value ->> '$.id', value ->> '$.display_name', \
     value ->> '$.time_zone', value ->> '$.language', value ->> '$.is_bot', value ->> '$.notes', \
     value ->> '$.version', value ->> '$.created_at', value ->> '$.updated_at', value ->> '$.role', \
     value ->> '$.bio', value ->> '$.home_key' FROM json_each(?1) WHERE true ON CONFLICT (id) DO UPDATE SET \
     display_name = excluded.display_name, time_zone = excluded.time_zone, language = excluded.language, \
     is_bot = excluded.is_bot, notes = excluded.notes, version = excluded.version, \
     created_at = min(created_at, excluded.created_at), updated_at = excluded.updated_at, role = excluded.role, \
     bio = excluded.bio, home_key = excluded.home_key WHERE excluded.version > people.version";
/// Adds moved platform ids; one already there (a sighting since the shards
/// changed) takes the moved one's person unless an operator linked it since,
/// and keeps the latest sighting.
const IDS: &str = "INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at, \
     home_key) SELECT value ->> '$.platform_key', value ->> '$.person_id', value ->> '$.display_name', \
     value ->> '$.first_seen_at', value ->> '$.last_seen_at', value ->> '$.home_key' FROM json_each(?1) WHERE true \
     ON CONFLICT (platform_key) DO UPDATE SET \
     person_id = CASE WHEN person_ids.person_id = \
     (SELECT value ->> '$.own' FROM json_each(?1) WHERE value ->> '$.platform_key' = excluded.platform_key) \
     THEN excluded.person_id ELSE person_ids.person_id END, \
     home_key = CASE WHEN person_ids.person_id = excluded.person_id OR person_ids.person_id = \
     (SELECT value ->> '$.own' FROM json_each(?1) WHERE value ->> '$.platform_key' = excluded.platform_key) \
     THEN coalesce(excluded.home_key, person_ids.home_key) ELSE person_ids.home_key END, \
     first_seen_at = coalesce(min(person_ids.first_seen_at, excluded.first_seen_at), person_ids.first_seen_at, \
     excluded.first_seen_at), \
     display_name = CASE WHEN coalesce(excluded.last_seen_at, 0) > coalesce(person_ids.last_seen_at, 0) \
     THEN excluded.display_name ELSE person_ids.display_name END, \
     last_seen_at = max(coalesce(person_ids.last_seen_at, 0), coalesce(excluded.last_seen_at, 0))";
/// Deletes the records a sighting made for a moved id that now names another
/// person's (never written since, none of its platform ids left here).
const ORPHANS: &str = "DELETE FROM people WHERE id IN (SELECT value ->> '$.own' FROM json_each(?1) \
     WHERE value ->> '$.own' != value ->> '$.person_id') \
     AND version = 0 AND NOT EXISTS (SELECT 1 FROM person_ids WHERE person_id = people.id)";
