//! People in D1 (migration 0014): a turn's people's profiles read, their
//! sightings recorded with the turn's commit (only when new, renamed or an
//! hour old), the branch tools `person_note` and `person_forget`, and
//! the admin API's People views (`/api/people`). The rules are [`crate::people::rules`]'s.
//!
//! Where: with `D1_SHARDS` over 1 people live on the shards, not the shared
//! database (docs/scale.md, "D1 shards"): a platform id's row (`person_ids`)
//! on the shard of the id, a person's record (`people`) on the shard of its
//! home key, the id that made it ([`crate::people::homes`]). An unlinked
//! person's two rows share a shard, so one statement reads a speaker; an id
//! an operator linked to a record made elsewhere names that record's home
//! key, and a second read there finds it. With one shard it is all `DB`.
//!
//! Who may use what: a branch writes only the profiles of the people writing
//! in the turn that started it (the channel passes them in the job); the admin
//! routes are operators' only. What it may cost: one read per turn (with
//! shards, one on each shard holding a speaker's id, and one more for a
//! linked id's record; the sightings' upserts join the turn's commit, with
//! shards a batch on each id's shard, at most once an hour per platform id), a few
//! statements per tool call, and notes capped per person. What it may read: a
//! turn, only the profiles of its own people.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Env, Result};

use crate::runtime::config::redactor;

use crate::people::arguments::PersonNoteArguments;
use crate::people::homes::{self, by_shard, IdRow};
use crate::people::rules::{self as people, Change, Note, Profile, Refusal};
use crate::runtime::d1::{batch, changes, number, text_or_null, Metered};
use crate::runtime::http::now_ms;
use crate::schedules::zones::IntlZones;

/// A sighting rewrites a platform id's `last_seen_at` at most this often.
const SEEN_REWRITE_MS: i64 = 3_600_000;
/// People a listing returns at most.
pub(super) const LISTING_LIMIT: f64 = 500.0;

/// A person record as D1 holds it.
#[derive(Debug, Clone, Deserialize)]
pub struct Row {
    pub(super) id: String,
    pub(super) display_name: String,
    pub(super) time_zone: Option<String>,
    pub(super) language: Option<String>,
    pub(super) is_bot: i64,
    pub(super) notes: String,
    #[serde(default)]
    pub(super) role: Option<String>,
    #[serde(default)]
    pub(super) bio: Option<String>,
    pub(super) version: i64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    /// JSON array of the platform ids (listing queries only).
    #[serde(default)]
    pub(super) ids: Option<String>,
    /// The platform id a turn's query matched.
    #[serde(default)]
    pub(super) platform_key: Option<String>,
    /// The platform id that made the record (None: from before migration 0036).
    #[serde(default)]
    pub(super) home_key: Option<String>,
    /// The shard the record was read on (its writes go there).
    #[serde(skip)]
    pub(super) shard: u32,
}

impl Row {
    pub(super) fn notes(&self) -> Vec<Note> {
        serde_json::from_str(&self.notes).unwrap_or_default()
    }
}

/// One platform id of a person, as the admin API shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlatformId {
    pub platform_key: String,
    pub display_name: String,
    pub last_seen_at: Option<i64>,
}

/// A person as the admin API shows them.
#[derive(Debug, Clone, Serialize)]
pub struct Person {
    pub id: String,
    pub display_name: String,
    pub time_zone: Option<String>,
    pub language: Option<String>,
    pub is_bot: bool,
    pub notes: Vec<Note>,
    /// The operator's: set only through the admin API.
    pub role: Option<String>,
    pub bio: Option<String>,
    pub platform_ids: Vec<PlatformId>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<Row> for Person {
    fn from(row: Row) -> Person {
        let notes = row.notes();
        let mut platform_ids: Vec<PlatformId> =
            row.ids.as_deref().and_then(|ids| serde_json::from_str(ids).ok()).unwrap_or_default();
        platform_ids.sort_by(|a, b| a.platform_key.cmp(&b.platform_key));
        Person {
            id: row.id,
            display_name: row.display_name,
            time_zone: row.time_zone,
            language: row.language,
            is_bot: row.is_bot != 0,
            notes,
            role: row.role,
            bio: row.bio,
            platform_ids,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

pub(super) const COLUMNS: &str =
    "p.id, p.display_name, p.time_zone, p.language, p.is_bot, p.notes, p.version, p.created_at, \
                       p.updated_at, p.role, p.bio, p.home_key";
pub(super) const IDS: &str = "(SELECT json_group_array(json_object('platform_key', i.platform_key, 'display_name', \
                   i.display_name, 'last_seen_at', i.last_seen_at)) FROM person_ids i WHERE i.person_id = p.id) AS ids";

/// The statements that record a sighting of the platform id `key` (seen as
/// `name`): their record made on first sight (unless the platform id is
/// already someone's: an operator linked it), the platform id's name and
/// last sighting kept current. A channel turn sends them with its commit,
/// only when the name changed or the last one is older than
/// [`crate::people::rules::SIGHTING_FRESH_MS`] (the object remembers what it
/// wrote: durable_objects/channel_object/commit.rs).
pub fn sighting(
    db: &D1Database,
    key: &str,
    name: &str,
    is_bot: bool,
    now: i64,
) -> Result<Vec<worker::D1PreparedStatement>> {
    let platform_key: JsValue = key.into();
    let name: JsValue = name.into();
    Ok(vec![
        db.prepare(
            "INSERT OR IGNORE INTO people (id, display_name, is_bot, created_at, updated_at, home_key) \
             SELECT ?1, ?2, ?3, ?4, ?4, ?5 WHERE NOT EXISTS (SELECT 1 FROM person_ids WHERE platform_key = ?5)",
        )
        .bind(&[
            people::person_id(key).into(),
            name.clone(),
            number(is_bot as i64),
            number(now),
            platform_key.clone(),
        ])?,
        db.prepare(
            "INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at, home_key) \
             VALUES (?1, ?2, ?3, ?4, ?4, ?1) ON CONFLICT (platform_key) DO UPDATE SET \
             display_name = excluded.display_name, last_seen_at = excluded.last_seen_at \
             WHERE person_ids.display_name != excluded.display_name OR person_ids.last_seen_at IS NULL \
             OR person_ids.last_seen_at < excluded.last_seen_at - ?5",
        )
        .bind(&[platform_key, people::person_id(key).into(), name, number(now), number(SEEN_REWRITE_MS)])?,
    ])
}

/// The name a speaker is seen under now.
pub fn seen_name(person: &Profile) -> &str {
    person.seen_as.as_deref().unwrap_or(&person.name)
}

/// The statement that reads the records of a turn's people (None: nobody speaks).
pub fn read_statement(db: &D1Database, speakers: &[Profile]) -> Result<Option<worker::D1PreparedStatement>> {
    if speakers.is_empty() {
        return Ok(None);
    }
    let placeholders: Vec<String> = (1..=speakers.len()).map(|index| format!("?{index}")).collect();
    let keys: Vec<JsValue> = speakers.iter().map(|person| person.key.as_str().into()).collect();
    let statement = db
        .prepare(format!(
            "SELECT {COLUMNS}, i.platform_key FROM person_ids i JOIN people p ON p.id = i.person_id \
             WHERE i.platform_key IN ({})",
            placeholders.join(", ")
        ))
        .bind(&keys)?;
    Ok(Some(statement))
}

/// The records of [`read_statement`]'s result (a channel object keeps them a while).
pub fn records_in(result: &worker::D1Result) -> Result<Vec<Row>> {
    result.results()
}

/// The platform id a record of [`records_in`] was read for.
pub fn record_key(row: &Row) -> Option<&str> {
    row.platform_key.as_deref()
}

/// The speakers with the profiles of `records` (one without stays as the turn saw them).
pub fn profiles_from(records: &[Row], speakers: Vec<Profile>) -> Vec<Profile> {
    speakers
        .into_iter()
        .map(|person| match records.iter().find(|row| row.platform_key.as_deref() == Some(person.key.as_str())) {
            Some(row) => profile_of(row, &person),
            None => person,
        })
        .collect()
}

/// A speaker's profile from their record.
fn profile_of(row: &Row, speaker: &Profile) -> Profile {
    let seen = speaker.seen_as.as_deref().unwrap_or(&speaker.name);
    Profile {
        key: speaker.key.clone(),
        id: row.id.clone(),
        name: row.display_name.clone(),
        seen_as: (seen != row.display_name).then(|| seen.to_string()),
        time_zone: row.time_zone.clone(),
        language: row.language.clone(),
        is_bot: speaker.is_bot,
        notes: row.notes(),
        role: row.role.clone(),
        bio: row.bio.clone(),
    }
}

/// How many shards people live on (`D1_SHARDS`; 1: the shared database).
pub(super) fn shard_count(env: &Env) -> u32 {
    crate::runtime::config::load(env).d1_shards
}

/// The database of shard `shard` (the shared one when there is one shard).
pub(super) fn database_of(env: &Env, shard: u32) -> Result<D1Database> {
    env.d1(&crate::shards::binding_of(shard, shard_count(env)))
}

/// The database a platform id's row lives on.
pub(super) fn database_for(env: &Env, platform_key: &str) -> Result<D1Database> {
    database_of(env, crate::shards::shard_of(platform_key, shard_count(env)))
}

/// A platform id's row as the read of [`records`] finds it: the record's
/// columns (NULL when the record lives on another shard) and the id's own.
#[derive(Deserialize)]
struct Found {
    platform_key: String,
    linked_id: String,
    linked_home: Option<String>,
}

/// The records of the platform ids `keys`, each with the id it was read for
/// (`platform_key`) and the shard it lives on: one read on each shard that
/// holds one of the ids, then, for ids linked to a record made elsewhere, one
/// on each shard that holds those. `fresh`: from the primary (a write
/// follows), else any replica may answer (a turn's read).
pub async fn records(env: &Env, keys: &[&str], fresh: bool) -> Result<Vec<Row>> {
    let shards = shard_count(env);
    let reads = by_shard(keys.iter().copied(), shards).into_iter().map(|(shard, keys)| async move {
        let database = database_of(env, shard)?;
        let list = serde_json::to_string(&keys)?;
        let sql = format!(
            "SELECT {COLUMNS}, i.platform_key, i.person_id AS linked_id, i.home_key AS linked_home \
             FROM person_ids i LEFT JOIN people p ON p.id = i.person_id \
             WHERE i.platform_key IN (SELECT value FROM json_each(?1))"
        );
        let rows = read(&database, database.prepare(sql).bind(&[list.into()])?, fresh).await?;
        Ok::<_, worker::Error>((shard, rows.results::<serde_json::Value>()?))
    });
    let mut found = Vec::new();
    let mut elsewhere: Vec<Found> = Vec::new();
    for answer in futures_util::future::join_all(reads).await {
        let (shard, rows) = answer?;
        for row in rows {
            match row["id"].is_null() {
                true => elsewhere.extend(serde_json::from_value::<Found>(row).ok()),
                false => found.extend(serde_json::from_value::<Row>(row).ok().map(|row| Row { shard, ..row })),
            }
        }
    }
    found.extend(linked_records(env, &elsewhere, fresh).await?);
    Ok(found)
}

/// The records of ids linked to a record on another shard (its home key's).
async fn linked_records(env: &Env, linked: &[Found], fresh: bool) -> Result<Vec<Row>> {
    let shards = shard_count(env);
    let homes = linked.iter().filter_map(|found| found.linked_home.as_deref());
    let reads = by_shard(homes, shards).into_iter().map(|(shard, _)| async move {
        let database = database_of(env, shard)?;
        let ids: Vec<&str> = linked
            .iter()
            .filter(|found| found.linked_home.as_deref().map(|home| homes::record_shard(home, shards)) == Some(shard))
            .map(|found| found.linked_id.as_str())
            .collect();
        let sql = format!("SELECT {COLUMNS} FROM people p WHERE p.id IN (SELECT value FROM json_each(?1))");
        let rows = read(&database, database.prepare(sql).bind(&[serde_json::to_string(&ids)?.into()])?, fresh).await?;
        Ok::<_, worker::Error>((shard, rows.results::<Row>()?))
    });
    let mut found = Vec::new();
    for answer in futures_util::future::join_all(reads).await {
        let (shard, rows) = answer?;
        for row in rows {
            let keys = linked.iter().filter(|found| found.linked_id == row.id);
            found.extend(keys.map(|found| Row {
                shard,
                platform_key: Some(found.platform_key.clone()),
                ..row.clone()
            }));
        }
    }
    Ok(found)
}

/// Runs one read, on the primary or any replica.
async fn read(database: &D1Database, statement: D1PreparedStatement, fresh: bool) -> Result<worker::D1Result> {
    let results = match fresh {
        true => batch(database, vec![statement]).await?,
        false => crate::runtime::d1::read_batch(database, vec![statement]).await?,
    };
    results.into_iter().next().ok_or_else(|| worker::Error::RustError("D1 answered no result".into()))
}

/// A turn's people's records with `D1_SHARDS` over 1 ([`records`], from
/// replicas); nothing with one shard, where [`read_statement`] joins the
/// turn's batch.
pub async fn records_on_shards(env: &Env, speakers: &[Profile]) -> Result<Vec<Row>> {
    if shard_count(env) <= 1 || speakers.is_empty() {
        return Ok(Vec::new());
    }
    let keys: Vec<&str> = speakers.iter().map(|person| person.key.as_str()).collect();
    records(env, &keys, false).await
}

/// Records a turn's sightings ([`sighting`]) on the shard of each platform
/// id, one batch per shard, all at once (the record a first sighting makes
/// is the id's own, so it sits on the same shard). Each entry: the platform
/// id, its name, whether a bot, when seen.
pub async fn sightings_on_shards(env: &Env, sightings: &[(&str, &str, bool, i64)]) -> Result<()> {
    let shards = shard_count(env);
    let groups = by_shard(sightings.iter().map(|sighting| sighting.0), shards);
    let writes = groups.into_iter().map(|(shard, keys)| async move {
        let database = database_of(env, shard)?;
        let mut statements = Vec::new();
        for (key, name, is_bot, seen_at) in sightings.iter().filter(|sighting| keys.contains(&sighting.0)) {
            statements.extend(sighting(&database, key, name, *is_bot, *seen_at)?);
        }
        batch(&database, statements).await.map(drop)
    });
    futures_util::future::join_all(writes).await.into_iter().collect()
}

/// The record a platform id belongs to (read from the primary: a write follows).
pub(super) async fn record_of(env: &Env, platform_key: &str) -> Result<Option<Row>> {
    Ok(records(env, &[platform_key], true).await?.into_iter().next())
}

/// The records `ids` with all their platform ids: every shard is asked for
/// the records it holds and the ids it holds of them.
pub(super) async fn people_by_ids(env: &Env, ids: &[String]) -> Result<Vec<Row>> {
    let list = serde_json::to_string(ids)?;
    let answers = crate::runtime::d1::on_every_shard(env, |database| {
        let list = list.clone();
        async move {
            let statements = vec![
                database
                    .prepare(format!(
                        "SELECT {COLUMNS}, {IDS} FROM people p WHERE p.id IN (SELECT value FROM json_each(?1))"
                    ))
                    .bind(&[list.as_str().into()])?,
                database
                    .prepare(
                        "SELECT platform_key, person_id, display_name, last_seen_at FROM person_ids \
                         WHERE person_id IN (SELECT value FROM json_each(?1))",
                    )
                    .bind(&[list.as_str().into()])?,
            ];
            let results = batch(&database, statements).await?;
            let rows = results.first().map(|result| result.results::<Row>()).transpose()?.unwrap_or_default();
            let ids = results.get(1).map(|result| result.results::<IdRow>()).transpose()?.unwrap_or_default();
            Ok::<_, worker::Error>((rows, ids))
        }
    })
    .await?;
    let (mut records, mut all_ids) = (Vec::new(), Vec::new());
    for (shard, answer) in answers.into_iter().enumerate() {
        let (rows, ids) = answer?;
        records.extend(rows.into_iter().map(|row| Row { shard: shard as u32, ..row }));
        all_ids.extend(ids);
    }
    let mut seen = std::collections::HashSet::new();
    records.retain(|row| seen.insert(row.id.clone()));
    for row in &mut records {
        row.ids = Some(homes::with_ids(row.ids.as_deref(), &row.id, &all_ids));
    }
    Ok(records)
}

/// One record with its platform ids (on whichever shard holds it).
pub(super) async fn one(env: &Env, id: &str) -> Result<Option<Row>> {
    Ok(people_by_ids(env, &[id.to_string()]).await?.into_iter().next())
}

/// Runs `statements`, each on its shard: one batch per shard, in the order
/// each shard first appears (with one shard, one batch as before).
pub(super) async fn batch_by_shard(env: &Env, statements: Vec<(u32, D1PreparedStatement)>) -> Result<()> {
    let mut groups: Vec<(u32, Vec<D1PreparedStatement>)> = Vec::new();
    for (shard, statement) in statements {
        match groups.iter_mut().find(|(known, _)| *known == shard) {
            Some((_, group)) => group.push(statement),
            None => groups.push((shard, vec![statement])),
        }
    }
    for (shard, group) in groups {
        batch(&database_of(env, shard)?, group).await?;
    }
    Ok(())
}

impl Change {
    pub(super) fn of(row: &Row) -> Change {
        Change {
            display_name: row.display_name.clone(),
            time_zone: row.time_zone.clone(),
            language: row.language.clone(),
            notes: row.notes(),
            role: row.role.clone(),
            bio: row.bio.clone(),
        }
    }
}

/// Writes `change` over the record if nobody changed it since `row` was read.
pub(super) async fn write(db: &D1Database, row: &Row, change: &Change, now: i64) -> Result<bool> {
    let notes = serde_json::to_string(&change.notes)?;
    let result = db
        .prepare(
            "UPDATE people SET display_name = ?1, time_zone = ?2, language = ?3, notes = ?4, \
             version = version + 1, updated_at = ?5, role = ?8, bio = ?9 WHERE id = ?6 AND version = ?7",
        )
        .bind(&[
            change.display_name.as_str().into(),
            text_or_null(change.time_zone.as_deref()),
            text_or_null(change.language.as_deref()),
            notes.into(),
            number(now),
            row.id.as_str().into(),
            number(row.version),
            text_or_null(change.role.as_deref()),
            text_or_null(change.bio.as_deref()),
        ])?
        .run_counted()
        .await?;
    Ok(changes(&result) == 1)
}

/// What a profile tool does to the profile it names.
pub enum ProfileChange {
    /// `person_note`.
    Note(PersonNoteArguments),
    /// `person_forget`.
    Forget,
}

/// `person_note` and `person_forget` on `person` (a name, or None when only
/// one person writes), for a branch whose turn's people are `speakers`.
/// Errors are the text the model reads.
pub async fn tool(
    env: &Env,
    speakers: &[Profile],
    person: Option<&str>,
    edit: &ProfileChange,
) -> std::result::Result<String, String> {
    let person = people::pick(speakers, person).map_err(|refusal| refusal.to_string())?;
    let failed = |error: worker::Error| format!("the profile could not be read or written: {error}");
    // The turn recorded them; a record lost to a D1 hiccup then is made now.
    let db = database_for(env, &person.key).map_err(failed)?;
    let sighted = sighting(&db, &person.key, seen_name(person), person.is_bot, now_ms()).map_err(failed)?;
    batch(&db, sighted).await.map_err(failed)?;
    // Two branches may write one profile at once: the loser reads again.
    for _ in 0..3 {
        let row = record_of(env, &person.key).await.map_err(failed)?.ok_or("the person's record is missing")?;
        let current = profile_of(&row, person);
        let mut change = Change::of(&row);
        let answer = match edit {
            ProfileChange::Note(arguments) => {
                note(&mut change, &current, arguments).map_err(|refusal| refusal.to_string())?
            }
            ProfileChange::Forget => {
                // What the bot learnt goes; the operator's role and bio stay (theirs to change).
                change.notes.clear();
                change.time_zone = None;
                change.language = None;
                people::forgotten(&current)
            }
        };
        let home = database_of(env, row.shard).map_err(failed)?;
        if write(&home, &row, &change, now_ms()).await.map_err(failed)? {
            return Ok(answer);
        }
    }
    Err("the profile kept changing while it was written: try again".into())
}

/// Applies `person_note`'s arguments to `change` ([`PersonNoteArguments::apply`]); says what it did.
fn note(
    change: &mut Change,
    person: &Profile,
    arguments: &PersonNoteArguments,
) -> std::result::Result<String, Refusal> {
    arguments.apply(change, person, &IntlZones, &redactor(), now_ms())
}

// ---- The admin API (operators only) ----
