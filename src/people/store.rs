//! People in D1 (migration 0014): a turn's people recorded and their profiles
//! read in one batch, the branch tools `person_note` and `person_forget`, and
//! the admin API's People views (`/api/people`). The rules are [`crate::people::rules`]'s.
//!
//! Who may use what: a branch writes only the profiles of the people writing
//! in the turn that started it (the channel passes them in the job); the admin
//! routes are operators' only. What it may cost: one D1 batch per turn (the
//! sightings' upserts write at most once an hour per platform id), a few
//! statements per tool call, and notes capped per person. What it may read: a
//! turn, only the profiles of its own people.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Request, Response, Result};

use crate::runtime::config::redactor;

use crate::api_error::ApiError;
use crate::people::arguments::PersonNoteArguments;
use crate::people::rules::{self as people, Change, Note, Profile, Refusal};
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::{batch, changes, number, text_or_null, Metered};
use crate::runtime::failure::internal;
use crate::runtime::http::json_object;
use crate::runtime::http::now_ms;
use crate::schedules::zones::IntlZones;
use crate::security::percent_decode;
use crate::sessions::api::Operator;

/// A sighting rewrites a platform id's `last_seen_at` at most this often.
const SEEN_REWRITE_MS: i64 = 3_600_000;
/// People a listing returns at most.
const LISTING_LIMIT: f64 = 500.0;

/// A person record as D1 holds it.
#[derive(Debug, Clone, Deserialize)]
struct Row {
    id: String,
    display_name: String,
    time_zone: Option<String>,
    language: Option<String>,
    is_bot: i64,
    notes: String,
    version: i64,
    created_at: i64,
    updated_at: i64,
    /// JSON array of the platform ids (listing queries only).
    #[serde(default)]
    ids: Option<String>,
    /// The platform id a turn's query matched.
    #[serde(default)]
    platform_key: Option<String>,
}

impl Row {
    fn notes(&self) -> Vec<Note> {
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
            platform_ids,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

const COLUMNS: &str = "p.id, p.display_name, p.time_zone, p.language, p.is_bot, p.notes, p.version, p.created_at, \
                       p.updated_at";
const IDS: &str = "(SELECT json_group_array(json_object('platform_key', i.platform_key, 'display_name', \
                   i.display_name, 'last_seen_at', i.last_seen_at)) FROM person_ids i WHERE i.person_id = p.id) AS ids";

/// The statements that record a sighting of `person`: their record made on
/// first sight (unless the platform id is already someone's: an operator
/// linked it), the platform id's name and last sighting kept current.
fn sighting(db: &D1Database, person: &Profile, now: i64) -> Result<Vec<worker::D1PreparedStatement>> {
    let key: JsValue = person.key.as_str().into();
    let name: JsValue = person.seen_as.as_deref().unwrap_or(&person.name).into();
    Ok(vec![
        db.prepare(
            "INSERT OR IGNORE INTO people (id, display_name, is_bot, created_at, updated_at) \
             SELECT ?1, ?2, ?3, ?4, ?4 WHERE NOT EXISTS (SELECT 1 FROM person_ids WHERE platform_key = ?5)",
        )
        .bind(&[
            people::person_id(&person.key).into(),
            name.clone(),
            number(person.is_bot as i64),
            number(now),
            key.clone(),
        ])?,
        db.prepare(
            "INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at) \
             VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (platform_key) DO UPDATE SET \
             display_name = excluded.display_name, last_seen_at = excluded.last_seen_at \
             WHERE person_ids.display_name != excluded.display_name OR person_ids.last_seen_at IS NULL \
             OR person_ids.last_seen_at < excluded.last_seen_at - ?5",
        )
        .bind(&[key, people::person_id(&person.key).into(), name, number(now), number(SEEN_REWRITE_MS)])?,
    ])
}

/// Records a turn's people and reads their profiles, in one D1 batch. A
/// person whose record cannot be read stays as the turn saw them (no notes).
pub async fn for_turn(db: &D1Database, speakers: Vec<Profile>, now: i64) -> Result<Vec<Profile>> {
    if speakers.is_empty() {
        return Ok(speakers);
    }
    let mut statements = Vec::new();
    for person in &speakers {
        statements.extend(sighting(db, person, now)?);
    }
    let placeholders: Vec<String> = (1..=speakers.len()).map(|index| format!("?{index}")).collect();
    let keys: Vec<JsValue> = speakers.iter().map(|person| person.key.as_str().into()).collect();
    statements.push(
        db.prepare(format!(
            "SELECT {COLUMNS}, i.platform_key FROM person_ids i JOIN people p ON p.id = i.person_id \
             WHERE i.platform_key IN ({})",
            placeholders.join(", ")
        ))
        .bind(&keys)?,
    );
    let results = batch(db, statements).await?;
    let rows: Vec<Row> = match results.last() {
        Some(result) => result.results()?,
        None => Vec::new(),
    };
    Ok(speakers
        .into_iter()
        .map(|person| match rows.iter().find(|row| row.platform_key.as_deref() == Some(person.key.as_str())) {
            Some(row) => profile_of(row, &person),
            None => person,
        })
        .collect())
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
    }
}

/// The record a platform id belongs to.
async fn record_of(db: &D1Database, platform_key: &str) -> Result<Option<Row>> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM person_ids i JOIN people p ON p.id = i.person_id WHERE i.platform_key = ?1"
    ))
    .bind(&[platform_key.into()])?
    .first_counted()
    .await
}

/// One record with its platform ids.
async fn one(db: &D1Database, id: &str) -> Result<Option<Row>> {
    db.prepare(format!("SELECT {COLUMNS}, {IDS} FROM people p WHERE p.id = ?1"))
        .bind(&[id.into()])?
        .first_counted()
        .await
}

impl Change {
    fn of(row: &Row) -> Change {
        Change {
            display_name: row.display_name.clone(),
            time_zone: row.time_zone.clone(),
            language: row.language.clone(),
            notes: row.notes(),
        }
    }
}

/// Writes `change` over the record if nobody changed it since `row` was read.
async fn write(db: &D1Database, row: &Row, change: &Change, now: i64) -> Result<bool> {
    let notes = serde_json::to_string(&change.notes)?;
    let result = db
        .prepare(
            "UPDATE people SET display_name = ?1, time_zone = ?2, language = ?3, notes = ?4, \
             version = version + 1, updated_at = ?5 WHERE id = ?6 AND version = ?7",
        )
        .bind(&[
            change.display_name.as_str().into(),
            text_or_null(change.time_zone.as_deref()),
            text_or_null(change.language.as_deref()),
            notes.into(),
            number(now),
            row.id.as_str().into(),
            number(row.version),
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
    batch(db, sighting(db, person, now_ms()).map_err(failed)?).await.map_err(failed)?;
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

/// `GET /api/people[?q=…]`: people, most recently seen first, with their
/// platform ids; `q` searches names and platform ids.
pub async fn list(request: &Request, env: &Env, _operator: &Operator) -> std::result::Result<Response, ApiError> {
    let url = request.url()?;
    let search = url.query_pairs().find(|(key, _)| key == "q").map(|(_, value)| value.trim().to_lowercase());
    let pattern = search.filter(|search| !search.is_empty()).map(|search| format!("%{search}%"));
    let database = env.d1(DATABASE_BINDING)?;
    let rows: Vec<Row> = database
        .prepare(format!(
            "SELECT {COLUMNS}, {IDS} FROM people p WHERE ?1 IS NULL OR lower(p.display_name) LIKE ?1 \
             OR EXISTS (SELECT 1 FROM person_ids i WHERE i.person_id = p.id AND (lower(i.platform_key) LIKE ?1 \
             OR lower(i.display_name) LIKE ?1)) \
             ORDER BY (SELECT MAX(i.last_seen_at) FROM person_ids i WHERE i.person_id = p.id) DESC, p.created_at DESC \
             LIMIT ?2"
        ))
        .bind(&[text_or_null(pattern.as_deref()), JsValue::from_f64(LISTING_LIMIT)])?
        .all_counted()
        .await?
        .results()?;
    Response::from_json(&rows.into_iter().map(Person::from).collect::<Vec<_>>()).map_err(internal)
}

/// `GET /api/people/{id}`.
pub async fn show(env: &Env, id: &str, _operator: &Operator) -> std::result::Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    answer(&database, &percent_decode(id)).await
}

async fn answer(database: &D1Database, id: &str) -> std::result::Result<Response, ApiError> {
    let row = one(database, id).await?.ok_or(ApiError::NotFound)?;
    Response::from_json(&Person::from(row)).map_err(internal)
}

/// `PUT /api/people/{id}` with any of `{"display_name", "time_zone",
/// "language", "notes": [text]}`: a field left out stays; `notes` replaces
/// the list (within the caps); an empty time zone or language clears it.
pub async fn update(
    mut request: Request,
    env: &Env,
    id: &str,
    _operator: &Operator,
) -> std::result::Result<Response, ApiError> {
    let body = json_object(&mut request).await?;
    let database = env.d1(DATABASE_BINDING)?;
    let id = percent_decode(id);
    let row = one(&database, &id).await?.ok_or(ApiError::NotFound)?;
    let refused = |refusal: Refusal| ApiError::BadRequest(refusal.to_string());
    let field = |key: &str| match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(ApiError::BadRequest(format!("`{key}` must be text"))),
    };
    let mut change = Change::of(&row);
    if let Some(name) = field("display_name")? {
        change.display_name = people::display_name(&name).map_err(refused)?;
    }
    if let Some(zone) = field("time_zone")? {
        change.time_zone = people::time_zone(&IntlZones, &zone).map_err(refused)?;
    }
    if let Some(language) = field("language")? {
        change.language = people::language(&language).map_err(refused)?;
    }
    match body.get("notes") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let texts = items
                .iter()
                .map(|item| item.as_str().map(|text| redactor().redact(text).into_owned()))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| ApiError::BadRequest("`notes` must be a list of texts".into()))?;
            change.notes = people::replace_all(&change.notes, &texts, now_ms()).map_err(refused)?;
        }
        Some(_) => return Err(ApiError::BadRequest("`notes` must be a list of texts".into())),
    }
    if !write(&database, &row, &change, now_ms()).await? {
        return Err(ApiError::BadRequest("the person changed meanwhile: reload and try again".into()));
    }
    answer(&database, &id).await
}

/// `DELETE /api/people/{id}/notes`: forgets the notes; answers what went.
pub async fn clear_notes(env: &Env, id: &str, _operator: &Operator) -> std::result::Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    let id = percent_decode(id);
    let row = one(&database, &id).await?.ok_or(ApiError::NotFound)?;
    let removed = row.notes();
    let change = Change { notes: Vec::new(), ..Change::of(&row) };
    if !write(&database, &row, &change, now_ms()).await? {
        return Err(ApiError::BadRequest("the person changed meanwhile: reload and try again".into()));
    }
    Response::from_json(&json!({ "removed": removed })).map_err(internal)
}

/// `POST /api/people/{id}/link` with `{"platform_key"}`: that platform id
/// becomes this person's (seen or not yet). When it was the last id of
/// another record, that record is merged in (its notes after these, within
/// the cap; its time zone and language where these have none) and removed.
/// Answers the person and the notes that did not fit (`dropped`).
pub async fn link(
    mut request: Request,
    env: &Env,
    id: &str,
    _operator: &Operator,
) -> std::result::Result<Response, ApiError> {
    let body = json_object(&mut request).await?;
    let key = body.get("platform_key").and_then(Value::as_str).unwrap_or_default().trim().to_string();
    if !people::is_platform_key(&key) {
        return Err(ApiError::BadRequest(
            "`platform_key` must be a platform id such as slack:U123 or telegram:42 (telegram, slack, discord, web)"
                .into(),
        ));
    }
    let database = env.d1(DATABASE_BINDING)?;
    let id = percent_decode(id);
    let target = one(&database, &id).await?.ok_or(ApiError::NotFound)?;
    let now = now_ms();
    let mut statements = vec![database
        .prepare(
            "INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at) \
             VALUES (?1, ?2, '', NULL, NULL) ON CONFLICT (platform_key) DO UPDATE SET person_id = excluded.person_id",
        )
        .bind(&[key.as_str().into(), id.as_str().into()])?];
    let mut dropped = Vec::new();
    let previous = record_of(&database, &key).await?;
    if let Some(previous) = previous.filter(|previous| previous.id != id) {
        let others = one(&database, &previous.id).await?.map(Person::from);
        let is_last_id = others.is_some_and(|other| other.platform_ids.iter().all(|known| known.platform_key == key));
        if is_last_id {
            let (notes, left_out) = people::merge(&target.notes(), &previous.notes());
            dropped = left_out;
            let change = Change {
                display_name: target.display_name.clone(),
                time_zone: target.time_zone.clone().or(previous.time_zone.clone()),
                language: target.language.clone().or(previous.language.clone()),
                notes,
            };
            statements.push(
                database
                    .prepare(
                        "UPDATE people SET time_zone = ?1, language = ?2, notes = ?3, version = version + 1, \
                         updated_at = ?4 WHERE id = ?5",
                    )
                    .bind(&[
                        text_or_null(change.time_zone.as_deref()),
                        text_or_null(change.language.as_deref()),
                        serde_json::to_string(&change.notes).map_err(internal)?.into(),
                        number(now),
                        id.as_str().into(),
                    ])?,
            );
            statements.push(
                database
                    .prepare(
                        "DELETE FROM people WHERE id = ?1 AND NOT EXISTS \
                         (SELECT 1 FROM person_ids WHERE person_id = ?1)",
                    )
                    .bind(&[previous.id.as_str().into()])?,
            );
        }
    }
    batch(&database, statements).await?;
    let row = one(&database, &id).await?.ok_or(ApiError::NotFound)?;
    Response::from_json(&json!({ "person": Person::from(row), "dropped": dropped })).map_err(internal)
}
