//! The identity documents' admin routes: read, save and restore SOUL,
//! IDENTITY and USER and set one conversation's override (D1, migration
//! `0013_identity.sql`). The one query a turn or a branch reads them with is
//! [`super::store::load`]; the rules (names, limits, the prompt block) are
//! [`crate::identity::rules`]'s.
//!
//! Each route answers the three questions: who (an operator: the admin token or
//! the dashboard's session, [`authorize_operator`]), what it may cost (a body of
//! [`MAX_BODY_BYTES`], a document of [`MAX_DOCUMENT_CHARS`] characters, an
//! override of [`MAX_OVERRIDE_CHARS`], [`MAX_VERSIONS_KEPT`] versions per
//! document, [`MAX_CONVERSATION_OVERRIDES`] overrides), what it may read (the
//! two identity tables, nothing else). A text holding a configured secret or a
//! key shape is refused (it would go to the model with every turn), and no log
//! line carries a text: only its document, version, author and length.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use worker::{D1Database, Env, Request, Response};

use crate::api_error::ApiError;
use crate::identity::rules::{
    check_document, check_override, parse_version, Document, IdentityError, DEFAULT_VERSION, MAX_BODY_BYTES,
    MAX_CONVERSATION_OVERRIDES, MAX_DOCUMENT_CHARS, MAX_OVERRIDE_CHARS, MAX_VERSIONS_KEPT,
};
use crate::inbound::ReplyAddress;
use crate::log_line::LogLine;
use crate::runtime::failure::Answer;
use crate::security::percent_decode;
use crate::sessions::rules::OperatorAccess;

use crate::runtime::config;

use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::{batch, changes, number, Metered};
use crate::runtime::failure::internal;
use crate::runtime::http::now_ms;
use crate::runtime::http::read_body;
use crate::runtime::log::Emit;
use crate::sessions::api::Operator;

/// One saved version of a document, as the admin API shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Version {
    version: i64,
    text: String,
    author: String,
    /// Milliseconds since the epoch; None for the shipped default.
    created_at: Option<i64>,
    /// The version a restore copied.
    restored_from: Option<i64>,
}

impl Version {
    fn shipped(document: Document) -> Version {
        Version {
            version: DEFAULT_VERSION,
            text: document.default_text().to_string(),
            author: "shipped default".into(),
            created_at: None,
            restored_from: None,
        }
    }
}

fn document_of(name: &str) -> Result<Document, ApiError> {
    let name = percent_decode(name);
    Document::parse(&name).ok_or_else(|| refused(IdentityError::UnknownDocument(name.chars().take(40).collect())))
}

/// A refusal as the API answers it: 413 for a text over its limit, else 400.
fn refused(error: IdentityError) -> ApiError {
    match error.is_too_long() {
        true => ApiError::ContentTooLarge(error.to_string()),
        false => ApiError::BadRequest(error.to_string()),
    }
}

/// The `text` of a `{"text": "..."}` body.
async fn text_body(request: &mut Request) -> Result<String, ApiError> {
    let body = read_body(request, MAX_BODY_BYTES).await?;
    let parsed = serde_json::from_slice::<Value>(&body).ok();
    match parsed.as_ref().and_then(|body| body.get("text")).and_then(Value::as_str) {
        Some(text) => Ok(text.to_string()),
        None => Err(ApiError::BadRequest("expected {\"text\": \"…\"}".into())),
    }
}

/// Secrets do not belong in a text every prompt carries: the model request is
/// scrubbed of configured secrets, but key shapes would reach the model and a
/// reply could repeat them. Says which kind was found, never the value.
fn refuse_secrets(text: &str) -> Result<(), ApiError> {
    let found = config::redactor().found(text);
    match found.is_empty() {
        true => Ok(()),
        false => Err(ApiError::BadRequest(format!(
            "the text holds {}: secrets do not belong in identity texts",
            found.join(", ")
        ))),
    }
}

fn limits() -> Value {
    json!({
        "document_chars": MAX_DOCUMENT_CHARS,
        "override_chars": MAX_OVERRIDE_CHARS,
        "versions_kept": MAX_VERSIONS_KEPT,
    })
}

/// The newest saved version of each document that has one.
async fn current_versions(db: &D1Database, agent: &str) -> worker::Result<Vec<(String, Version)>> {
    #[derive(Deserialize)]
    struct Row {
        name: String,
        #[serde(flatten)]
        version: Version,
    }
    let rows: Vec<Row> = db
        .prepare(
            "SELECT name, version, text, author, created_at, restored_from FROM identity_versions AS saved \
             WHERE agent = ?1 AND version = \
             (SELECT MAX(version) FROM identity_versions AS newer WHERE newer.agent = ?1 AND newer.name = saved.name)",
        )
        .bind(&[agent.into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(rows.into_iter().map(|row| (row.name, row.version)).collect())
}

/// What the admin API says of a document: its current text and where it came from.
fn document_view(document: Document, current: Option<&Version>) -> Value {
    let shipped = Version::shipped(document);
    let current = current.unwrap_or(&shipped);
    json!({
        "name": document.name(),
        "file": document.file_name(),
        "text": current.text,
        "version": current.version,
        "author": current.author,
        "updated_at": current.created_at,
        "restored_from": current.restored_from,
        "is_default": current.version == DEFAULT_VERSION,
        "chars": current.text.chars().count(),
        "default_text": document.default_text(),
    })
}

async fn document_answer(db: &D1Database, agent: &str, document: Document, extra: Value) -> Answer {
    let current = current_versions(db, agent).await?;
    let mine = current.iter().find(|(name, _)| name == document.name()).map(|(_, version)| version);
    let mut view = document_view(document, mine);
    if let (Some(view), Some(extra)) = (view.as_object_mut(), extra.as_object()) {
        view.extend(extra.clone());
    }
    Response::from_json(&view).map_err(internal)
}

/// `GET /api/identity`: the three documents as they are now, and the limits.
pub async fn documents(env: &Env, agent: &str, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    let current = current_versions(&database, agent).await?;
    let documents: Vec<Value> = Document::ALL
        .into_iter()
        .map(|document| {
            let mine = current.iter().find(|(name, _)| name == document.name()).map(|(_, version)| version);
            document_view(document, mine)
        })
        .collect();
    Response::from_json(&json!({ "documents": documents, "limits": limits() })).map_err(internal)
}

/// `GET /api/identity/{name}/versions`: the kept versions, newest first, then
/// the shipped default (version 0), each with its text, author and time.
pub async fn versions(env: &Env, agent: &str, name: &str, _operator: &Operator) -> Answer {
    let document = document_of(name)?;
    let database = env.d1(DATABASE_BINDING)?;
    let mut versions: Vec<Version> = database
        .prepare(
            "SELECT version, text, author, created_at, restored_from FROM identity_versions \
             WHERE agent = ?3 AND name = ?1 ORDER BY version DESC LIMIT ?2",
        )
        .bind(&[document.name().into(), number(MAX_VERSIONS_KEPT), agent.into()])?
        .all_counted()
        .await?
        .results()?;
    versions.push(Version::shipped(document));
    Response::from_json(&json!({ "name": document.name(), "file": document.file_name(), "versions": versions }))
        .map_err(internal)
}

/// Saves `text` as the document's next version (in one transaction with
/// dropping the versions past [`MAX_VERSIONS_KEPT`]); nothing when it equals
/// the current text. Says whether a version was saved.
async fn save(
    db: &D1Database,
    agent: &str,
    document: Document,
    text: &str,
    access: OperatorAccess,
    restored_from: Option<i64>,
) -> Result<bool, ApiError> {
    // The agent's documents as a conversation of it reads them (no override:
    // `-` names no conversation).
    let current = super::store::load(db, &crate::agents::within(agent, "-")).await?;
    if current.text(document) == text {
        return Ok(false);
    }
    let name = document.name();
    let insert = db
        .prepare(
            "INSERT INTO identity_versions (agent, name, version, text, author, created_at, restored_from) \
             SELECT ?6, ?1, COALESCE(MAX(version), 0) + 1, ?2, ?3, ?4, ?5 FROM identity_versions \
             WHERE agent = ?6 AND name = ?1",
        )
        .bind(&[
            name.into(),
            text.into(),
            access.author().into(),
            number(now_ms()),
            restored_from.map_or(wasm_bindgen::JsValue::NULL, number),
            agent.into(),
        ])?;
    let trim = db
        .prepare(
            "DELETE FROM identity_versions WHERE agent = ?3 AND name = ?1 \
             AND version <= (SELECT MAX(version) FROM identity_versions WHERE agent = ?3 AND name = ?1) - ?2",
        )
        .bind(&[name.into(), number(MAX_VERSIONS_KEPT), agent.into()])?;
    batch(db, vec![insert, trim]).await?;
    LogLine::info("identity_saved")
        .field("document", name)
        .field("agent", agent)
        .field("author", access.author())
        .field("chars", text.chars().count() as u64)
        .field("restored_from", restored_from)
        .emit();
    Ok(true)
}

/// `PUT /api/identity/{name}` with `{"text"}`: saves a new version. Over the
/// limit: 413 and nothing stored; a secret in it: 400 and nothing stored.
pub async fn save_document(mut request: Request, env: &Env, agent: &str, name: &str, operator: &Operator) -> Answer {
    let access = operator.access();
    let document = document_of(name)?;
    let text = check_document(document, &text_body(&mut request).await?).map_err(refused)?;
    refuse_secrets(&text)?;
    let database = env.d1(DATABASE_BINDING)?;
    let saved = save(&database, agent, document, &text, access, None).await?;
    document_answer(&database, agent, document, json!({ "saved": saved })).await
}

/// `POST /api/identity/{name}/restore/{version}`: saves a kept version's text
/// (or the shipped default's, version 0) again as the newest version.
pub async fn restore(env: &Env, agent: &str, name: &str, version: &str, operator: &Operator) -> Answer {
    let access = operator.access();
    let document = document_of(name)?;
    let version = parse_version(version).map_err(refused)?;
    let database = env.d1(DATABASE_BINDING)?;
    let text = match version {
        DEFAULT_VERSION => document.default_text().to_string(),
        _ => {
            #[derive(Deserialize)]
            struct Row {
                text: String,
            }
            let row: Option<Row> = database
                .prepare("SELECT text FROM identity_versions WHERE agent = ?3 AND name = ?1 AND version = ?2")
                .bind(&[document.name().into(), number(version), agent.into()])?
                .first_counted()
                .await?;
            row.ok_or(ApiError::NotFound)?.text
        }
    };
    let saved = save(&database, agent, document, &text, access, Some(version)).await?;
    document_answer(&database, agent, document, json!({ "saved": saved })).await
}

/// The conversation key of a `{key}` path segment, when it names one.
fn conversation_of(key: &str) -> Result<String, ApiError> {
    let key = percent_decode(key);
    match ReplyAddress::for_conversation(&key) {
        Some(_) => Ok(key),
        None => Err(ApiError::BadRequest("not a conversation key (e.g. telegram:42, slack:T1:C1)".into())),
    }
}

#[derive(Deserialize)]
struct OverrideRow {
    text: String,
    author: String,
    updated_at: i64,
}

async fn override_answer(db: &D1Database, conversation_key: &str) -> Answer {
    let row: Option<OverrideRow> = db
        .prepare("SELECT text, author, updated_at FROM conversation_identity WHERE conversation_key = ?1")
        .bind(&[conversation_key.into()])?
        .first_counted()
        .await?;
    Response::from_json(&json!({
        "conversation": conversation_key,
        "text": row.as_ref().map(|row| &row.text),
        "author": row.as_ref().map(|row| &row.author),
        "updated_at": row.as_ref().map(|row| row.updated_at),
        "max_chars": MAX_OVERRIDE_CHARS,
    }))
    .map_err(internal)
}

/// `GET /api/channels/{key}/identity`: the conversation's override (text null without one).
pub async fn conversation_override(env: &Env, key: &str, _operator: &Operator) -> Answer {
    let conversation_key = conversation_of(key)?;
    override_answer(&env.d1(DATABASE_BINDING)?, &conversation_key).await
}

/// `PUT /api/channels/{key}/identity` with `{"text"}`: sets the override.
pub async fn set_conversation_override(mut request: Request, env: &Env, key: &str, operator: &Operator) -> Answer {
    let access = operator.access();
    let conversation_key = conversation_of(key)?;
    let text = check_override(&text_body(&mut request).await?).map_err(refused)?;
    refuse_secrets(&text)?;
    let database = env.d1(DATABASE_BINDING)?;
    // A new conversation gets one only while fewer than the cap have one.
    let result = database
        .prepare(
            "INSERT INTO conversation_identity (conversation_key, text, author, updated_at) \
             SELECT ?1, ?2, ?3, ?4 WHERE (SELECT COUNT(*) FROM conversation_identity) < ?5 \
             OR EXISTS (SELECT 1 FROM conversation_identity WHERE conversation_key = ?1) \
             ON CONFLICT (conversation_key) DO UPDATE SET \
             text = excluded.text, author = excluded.author, updated_at = excluded.updated_at",
        )
        .bind(&[
            conversation_key.as_str().into(),
            text.as_str().into(),
            access.author().into(),
            number(now_ms()),
            number(MAX_CONVERSATION_OVERRIDES),
        ])?
        .run_counted()
        .await?;
    if changes(&result) == 0 {
        return Err(ApiError::BadRequest(format!(
            "{MAX_CONVERSATION_OVERRIDES} conversations have an override already: delete one first"
        )));
    }
    LogLine::info("identity_override_set")
        .conversation(&conversation_key)
        .field("author", access.author())
        .field("chars", text.chars().count() as u64)
        .emit();
    override_answer(&database, &conversation_key).await
}

/// `DELETE /api/channels/{key}/identity`: removes the override (404 without one).
pub async fn remove_conversation_override(env: &Env, key: &str, operator: &Operator) -> Answer {
    let access = operator.access();
    let conversation_key = conversation_of(key)?;
    let database = env.d1(DATABASE_BINDING)?;
    let result = database
        .prepare("DELETE FROM conversation_identity WHERE conversation_key = ?1")
        .bind(&[conversation_key.as_str().into()])?
        .run_counted()
        .await?;
    if changes(&result) == 0 {
        return Err(ApiError::NotFound);
    }
    LogLine::info("identity_override_removed").conversation(&conversation_key).field("author", access.author()).emit();
    override_answer(&database, &conversation_key).await
}
