//! People in D1 (migration 0014): a turn's people's profiles read, their
//! sightings recorded with the turn's commit (only when new, renamed or an
//! hour old), the branch tools `person_note` and `person_forget`, and
//! the admin API's People views (`/api/people`). The rules are [`crate::people::rules`]'s.
//!
//! Who may use what: a branch writes only the profiles of the people writing
//! in the turn that started it (the channel passes them in the job); the admin
//! routes are operators' only. What it may cost: one read per turn (the
//! sightings' upserts join the turn's commit at most once an hour per platform id), a few
//! statements per tool call, and notes capped per person. What it may read: a
//! turn, only the profiles of its own people.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, Result};

use crate::runtime::config::redactor;

use crate::people::arguments::PersonNoteArguments;
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
                       p.updated_at, p.role, p.bio";
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
            "INSERT OR IGNORE INTO people (id, display_name, is_bot, created_at, updated_at) \
             SELECT ?1, ?2, ?3, ?4, ?4 WHERE NOT EXISTS (SELECT 1 FROM person_ids WHERE platform_key = ?5)",
        )
        .bind(&[
            people::person_id(key).into(),
            name.clone(),
            number(is_bot as i64),
            number(now),
            platform_key.clone(),
        ])?,
        db.prepare(
            "INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at) \
             VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (platform_key) DO UPDATE SET \
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

/// The turn's people with their profiles, from [`read_statement`]'s result.
/// A person whose record is not there (first seen: the turn's commit makes
/// it) stays as the turn saw them (no notes).
pub fn profiles_in(result: &worker::D1Result, speakers: Vec<Profile>) -> Result<Vec<Profile>> {
    Ok(profiles_from(&records_in(result)?, speakers))
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

/// Reads a turn's people's profiles (one query; the sightings are the
/// commit's, see [`sighting`]).
pub async fn for_turn(db: &D1Database, speakers: Vec<Profile>) -> Result<Vec<Profile>> {
    match read_statement(db, &speakers)? {
        Some(statement) => profiles_in(&statement.all_counted().await?, speakers),
        None => Ok(speakers),
    }
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

/// The record a platform id belongs to.
pub(super) async fn record_of(db: &D1Database, platform_key: &str) -> Result<Option<Row>> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM person_ids i JOIN people p ON p.id = i.person_id WHERE i.platform_key = ?1"
    ))
    .bind(&[platform_key.into()])?
    .first_counted()
    .await
}

/// One record with its platform ids.
pub(super) async fn one(db: &D1Database, id: &str) -> Result<Option<Row>> {
    db.prepare(format!("SELECT {COLUMNS}, {IDS} FROM people p WHERE p.id = ?1"))
        .bind(&[id.into()])?
        .first_counted()
        .await
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
    db: &D1Database,
    speakers: &[Profile],
    person: Option<&str>,
    edit: &ProfileChange,
) -> std::result::Result<String, String> {
    let person = people::pick(speakers, person).map_err(|refusal| refusal.to_string())?;
    let failed = |error: worker::Error| format!("the profile could not be read or written: {error}");
    // The turn recorded them; a record lost to a D1 hiccup then is made now.
    let sighted = sighting(db, &person.key, seen_name(person), person.is_bot, now_ms()).map_err(failed)?;
    batch(db, sighted).await.map_err(failed)?;
    // Two branches may write one profile at once: the loser reads again.
    for _ in 0..3 {
        let row = record_of(db, &person.key).await.map_err(failed)?.ok_or("the person's record is missing")?;
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
        if write(db, &row, &change, now_ms()).await.map_err(failed)? {
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
