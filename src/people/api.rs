//! The admin API's People views: list and show people, edit a person (or
//! many at once, `[[humans]]`), clear their notes, link another platform id
//! to them. Only here are a person's role and bio written: the operator's
//! facts about them, which no message and no profile tool can change.

use super::homes::{self, IdRow, Listed};
use super::store::{
    batch_by_shard, database_for, database_of, one, people_by_ids, record_of, records, shard_count, write, Person, Row,
    COLUMNS, IDS, LISTING_LIMIT,
};
use crate::api_error::ApiError;
use crate::people::rules::{self as people, Change, Refusal};
use crate::runtime::config::redactor;
use crate::runtime::d1::{number, on_every_shard, text_or_null, Metered};
use crate::runtime::failure::internal;
use crate::runtime::failure::Answer;
use crate::runtime::http::json_object;
use crate::runtime::http::now_ms;
use crate::schedules::zones::IntlZones;
use crate::security::percent_decode;
use crate::sessions::api::Operator;
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Request, Response};

/// `GET /api/people[?q=…]`: people, most recently seen first, with their
/// platform ids; `q` searches names and platform ids. With D1 shards every
/// shard is asked and the answers merged ([`homes::merge_listings`]); the ids
/// linked to a record on another shard are read first, so a search finds a
/// person by any of their ids.
pub async fn list(request: &Request, env: &Env, _operator: &Operator) -> Answer {
    let url = request.url()?;
    let search = url.query_pairs().find(|(key, _)| key == "q").map(|(_, value)| value.trim().to_lowercase());
    let pattern = search.filter(|search| !search.is_empty()).map(|search| format!("%{search}%"));
    let linked = linked_ids(env).await?;
    let wanted: Vec<&str> = linked
        .iter()
        .filter(|id| {
            pattern.as_deref().is_some_and(|pattern| {
                let search = pattern.trim_matches('%');
                id.platform_key.to_lowercase().contains(search) || id.display_name.to_lowercase().contains(search)
            })
        })
        .map(|id| id.person_id.as_str())
        .collect();
    let wanted = serde_json::to_string(&wanted).map_err(internal)?;
    let sql = format!(
        "SELECT {COLUMNS}, {IDS} FROM people p WHERE ?1 IS NULL OR lower(p.display_name) LIKE ?1 \
         OR EXISTS (SELECT 1 FROM person_ids i WHERE i.person_id = p.id AND (lower(i.platform_key) LIKE ?1 \
         OR lower(i.display_name) LIKE ?1)) OR p.id IN (SELECT value FROM json_each(?3)) \
         ORDER BY (SELECT MAX(i.last_seen_at) FROM person_ids i WHERE i.person_id = p.id) DESC, p.created_at DESC \
         LIMIT ?2"
    );
    let answers = on_every_shard(env, |database| {
        let (sql, wanted) = (sql.clone(), wanted.clone());
        let pattern = text_or_null(pattern.as_deref());
        async move {
            let statement = database.prepare(sql).bind(&[pattern, JsValue::from_f64(LISTING_LIMIT), wanted.into()])?;
            statement.all_counted().await?.results::<Row>()
        }
    })
    .await?;
    let mut shards = Vec::new();
    for answer in answers {
        let mut rows = answer?;
        for row in &mut rows {
            row.ids = Some(homes::with_ids(row.ids.as_deref(), &row.id, &linked));
        }
        shards.push(rows);
    }
    let rows = homes::merge_listings(shards, LISTING_LIMIT as usize);
    Response::from_json(&rows.into_iter().map(Person::from).collect::<Vec<_>>()).map_err(internal)
}

/// The platform ids whose record lives on another shard (an operator linked
/// them), from every shard; none with one shard.
async fn linked_ids(env: &Env) -> worker::Result<Vec<IdRow>> {
    if shard_count(env) <= 1 {
        return Ok(Vec::new());
    }
    let sql = "SELECT platform_key, person_id, display_name, last_seen_at FROM person_ids i \
               WHERE NOT EXISTS (SELECT 1 FROM people p WHERE p.id = i.person_id) LIMIT 5000";
    let answers =
        on_every_shard(env, |database| async move { database.prepare(sql).all_counted().await?.results::<IdRow>() })
            .await?;
    answers.into_iter().try_fold(Vec::new(), |mut all, answer| {
        all.extend(answer?);
        Ok(all)
    })
}

impl Listed for Row {
    fn person(&self) -> &str {
        &self.id
    }
    fn created_at(&self) -> i64 {
        self.created_at
    }
    fn last_seen_at(&self) -> Option<i64> {
        homes::last_seen_in(self.ids.as_deref())
    }
}

/// `GET /api/people/{id}`.
pub async fn show(env: &Env, id: &str, _operator: &Operator) -> Answer {
    answer(env, &percent_decode(id)).await
}

async fn answer(env: &Env, id: &str) -> Answer {
    let row = one(env, id).await?.ok_or(ApiError::NotFound)?;
    Response::from_json(&Person::from(row)).map_err(internal)
}

/// `PUT /api/people/{id}` with any of `{"display_name", "time_zone",
/// "language", "role", "bio", "notes": [text]}`: a field left out stays;
/// `notes` replaces the list (within the caps); an empty time zone,
/// language, role or bio clears it.
pub async fn update(mut request: Request, env: &Env, id: &str, _operator: &Operator) -> Answer {
    let body = json_object(&mut request).await?;
    let id = percent_decode(id);
    let row = one(env, &id).await?.ok_or(ApiError::NotFound)?;
    let database = database_of(env, row.shard)?;
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
    if let Some(role) = field("role")? {
        change.role = people::role(&role).map_err(refused)?;
    }
    if let Some(bio) = field("bio")? {
        change.bio = people::bio(&bio).map_err(refused)?;
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
    answer(env, &id).await
}

/// `DELETE /api/people/{id}/notes`: forgets the notes; answers what went.
pub async fn clear_notes(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let id = percent_decode(id);
    let row = one(env, &id).await?.ok_or(ApiError::NotFound)?;
    let database = database_of(env, row.shard)?;
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
pub async fn link(mut request: Request, env: &Env, id: &str, _operator: &Operator) -> Answer {
    let body = json_object(&mut request).await?;
    let key = body.get("platform_key").and_then(Value::as_str).unwrap_or_default().trim().to_string();
    if !people::is_platform_key(&key) {
        return Err(ApiError::BadRequest(
            "`platform_key` must be a platform id such as slack:U123 or telegram:42 (telegram, slack, discord, web)"
                .into(),
        ));
    }
    let id = percent_decode(id);
    let target = one(env, &id).await?.ok_or(ApiError::NotFound)?;
    let now = now_ms();
    // The id's row, on its shard, names the record and where it lives.
    let home = home_of(&target);
    let mut statements = vec![(
        crate::shards::shard_of(&key, shard_count(env)),
        database_for(env, &key)?
            .prepare(
                "INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at, home_key) \
                 VALUES (?1, ?2, '', NULL, NULL, ?3) ON CONFLICT (platform_key) DO UPDATE SET \
                 person_id = excluded.person_id, home_key = excluded.home_key",
            )
            .bind(&[key.as_str().into(), id.as_str().into(), text_or_null(home.as_deref())])?,
    )];
    let mut dropped = Vec::new();
    let previous = record_of(env, &key).await?;
    if let Some(previous) = previous.filter(|previous| previous.id != id) {
        let others = one(env, &previous.id).await?.map(Person::from);
        let is_last_id = others.is_some_and(|other| other.platform_ids.iter().all(|known| known.platform_key == key));
        if is_last_id {
            let (notes, left_out) = people::merge(&target.notes(), &previous.notes());
            dropped = left_out;
            let change = Change {
                display_name: target.display_name.clone(),
                time_zone: target.time_zone.clone().or(previous.time_zone.clone()),
                language: target.language.clone().or(previous.language.clone()),
                notes,
                role: target.role.clone().or(previous.role.clone()),
                bio: target.bio.clone().or(previous.bio.clone()),
            };
            statements.push((
                target.shard,
                database_of(env, target.shard)?
                    .prepare(
                        "UPDATE people SET time_zone = ?1, language = ?2, notes = ?3, version = version + 1, \
                         updated_at = ?4, role = ?6, bio = ?7 WHERE id = ?5",
                    )
                    .bind(&[
                        text_or_null(change.time_zone.as_deref()),
                        text_or_null(change.language.as_deref()),
                        serde_json::to_string(&change.notes).map_err(internal)?.into(),
                        number(now),
                        id.as_str().into(),
                        text_or_null(change.role.as_deref()),
                        text_or_null(change.bio.as_deref()),
                    ])?,
            ));
            statements.push((
                previous.shard,
                database_of(env, previous.shard)?
                    .prepare(
                        "DELETE FROM people WHERE id = ?1 AND NOT EXISTS \
                         (SELECT 1 FROM person_ids WHERE person_id = ?1)",
                    )
                    .bind(&[previous.id.as_str().into()])?,
            ));
        }
    }
    batch_by_shard(env, statements).await?;
    let row = one(env, &id).await?.ok_or(ApiError::NotFound)?;
    Response::from_json(&json!({ "person": Person::from(row), "dropped": dropped })).map_err(internal)
}

/// The home key of a record read with its ids ([`homes::home_key_of`] for one from before migration 0036).
fn home_of(record: &Row) -> Option<String> {
    let keys = Person::from(record.clone()).platform_ids.into_iter().map(|known| known.platform_key);
    let keys: Vec<String> = keys.collect();
    record.home_key.clone().or_else(|| homes::home_key_of(&record.id, keys.iter().map(String::as_str)))
}

/// `PUT /api/people[?agent={id}]` with `[{"id": "telegram:42", "display_name"?,
/// "role"?, "bio"?, "time_zone"?, "language"?}]` (the specification's
/// `[[humans]]`): each person found by platform id, or made (unseen yet),
/// and their fields set as in `PUT /api/people/{id}`. The list is checked
/// whole first and written in one D1 batch: a bad entry is a 400 and changes
/// nothing. (With D1 shards, one batch per shard the people live on.)
/// A non-default agent's people are its own records (`?agent=`).
/// Answers the people as they are now.
pub async fn put_many(mut request: Request, env: &Env, _operator: &Operator) -> Answer {
    let agent = crate::agents::api::of_query(&request)?;
    let agent = agent.as_str();
    let body = crate::runtime::http::read_body(&mut request, crate::runtime::http::MAX_ADMIN_BODY_BYTES).await?;
    let body: Value =
        serde_json::from_slice(&body).map_err(|_| ApiError::BadRequest("expected a JSON list of people".into()))?;
    let humans = crate::people::humans::parse(&body, agent, &IntlZones).map_err(ApiError::BadRequest)?;
    let now = now_ms();
    let keys: Vec<&str> = humans.iter().map(|human| human.key.as_str()).collect();
    // With shards, a linked id's record is on its home's shard: found first.
    let known = match shard_count(env) {
        0 | 1 => Vec::new(),
        _ => records(env, &keys, true).await?,
    };
    let mut statements = Vec::new();
    for human in &humans {
        let record = known.iter().find(|row| row.platform_key.as_deref() == Some(human.key.as_str()));
        let key_shard = crate::shards::shard_of(&human.key, shard_count(env));
        let ids = database_for(env, &human.key)?;
        let home = record.map_or(key_shard, |row| row.shard);
        let [made, named, set] =
            set_human(&ids, &database_of(env, home)?, human, record.map(|row| row.id.as_str()), now)?;
        statements.extend([(key_shard, made), (key_shard, named), (home, set)]);
    }
    batch_by_shard(env, statements).await?;
    let ids: Vec<String> = records(env, &keys, true).await?.into_iter().map(|row| row.id).collect();
    let rows = people_by_ids(env, &ids).await?;
    Response::from_json(&rows.into_iter().map(Person::from).collect::<Vec<_>>()).map_err(internal)
}

/// The statements that make `human`'s record if it is new (named by the name
/// given, else the platform id) and set the fields given.
/// `ids`: the database of the platform id's row; `home`: that of the record
/// (another shard's when the id is linked to a record made elsewhere, whose
/// id `record` names).
fn set_human(
    ids: &D1Database,
    home: &D1Database,
    human: &crate::people::humans::Human,
    record: Option<&str>,
    now: i64,
) -> worker::Result<[worker::D1PreparedStatement; 3]> {
    let key: JsValue = human.key.as_str().into();
    let id: JsValue = people::person_id(&human.key).into();
    let name: JsValue = human.display_name.as_deref().unwrap_or(&human.key).into();
    // A field given: (1, its value or NULL to clear); left out: (0, NULL) keeps it.
    let given = |field: &Option<Option<String>>| match field {
        Some(value) => (number(1), text_or_null(value.as_deref())),
        None => (number(0), JsValue::NULL),
    };
    let (role_given, role) = given(&human.role);
    let (bio_given, bio) = given(&human.bio);
    let (zone_given, zone) = given(&human.time_zone);
    let (language_given, language) = given(&human.language);
    Ok([
        ids.prepare(
            "INSERT OR IGNORE INTO people (id, display_name, is_bot, created_at, updated_at, home_key) \
             SELECT ?1, ?2, 0, ?3, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM person_ids WHERE platform_key = ?4)",
        )
        .bind(&[id.clone(), name, number(now), key.clone()])?,
        ids.prepare(
            "INSERT INTO person_ids (platform_key, person_id, display_name, first_seen_at, last_seen_at, home_key) \
             VALUES (?1, ?2, '', NULL, NULL, ?1) ON CONFLICT (platform_key) DO NOTHING",
        )
        .bind(&[key.clone(), id])?,
        home.prepare(
            "UPDATE people SET display_name = coalesce(?2, display_name), \
             role = CASE WHEN ?3 THEN ?4 ELSE role END, bio = CASE WHEN ?5 THEN ?6 ELSE bio END, \
             time_zone = CASE WHEN ?7 THEN ?8 ELSE time_zone END, language = CASE WHEN ?9 THEN ?10 ELSE language END, \
             version = version + 1, updated_at = ?11 \
             WHERE id = coalesce(?12, (SELECT person_id FROM person_ids WHERE platform_key = ?1))",
        )
        .bind(&[
            key,
            text_or_null(human.display_name.as_deref()),
            role_given,
            role,
            bio_given,
            bio,
            zone_given,
            zone,
            language_given,
            language,
            number(now),
            text_or_null(record),
        ])?,
    ])
}
