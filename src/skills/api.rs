//! The skills' admin routes under `/api/agents/{agent}/skills` (D1, migration
//! `0028_skills.sql`): install (a zip, or JSON `{"files": {path: text}}`; a new
//! version when the skill exists), list, get, enable, disable, versions and
//! restore. The rules (names, paths, caps, the front matter) are
//! [`crate::skills::rules`]'s.
//!
//! Who: an operator (the admin token or the dashboard's session; the router
//! checks before any handler runs). What it may cost: a body of
//! [`MAX_BODY_BYTES`], [`MAX_FILES`] files of [`MAX_FILE_BYTES`] and
//! [`MAX_TOTAL_BYTES`] in all per version, [`MAX_SKILLS_PER_AGENT`] skills per
//! agent, [`MAX_VERSIONS_KEPT`] versions per skill. What it may read: the two
//! skills tables, nothing else. A text holding a configured secret or a key
//! shape refuses the whole install (400 naming the file, nothing stored): a
//! skill's text goes to the model. No log line carries a file's text: only
//! the skill, its version, author and size.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use worker::{D1Database, Env, Request, Response};

use crate::api_error::ApiError;
use crate::log_line::LogLine;
use crate::runtime::config::{self, DATABASE_BINDING};
use crate::runtime::d1::{batch, changes, number, Metered};
use crate::runtime::failure::{internal, Answer};
use crate::runtime::http::{now_ms, read_body};
use crate::runtime::log::Emit;
use crate::security::percent_decode;
use crate::sessions::api::Operator;
use crate::sessions::rules::OperatorAccess;
use crate::skills::rules::{
    check_agent, check_bundle, check_name, parse_skill_file, parse_version, read_zip, text_files, Bundle, Files,
    SkillError, MAX_BODY_BYTES, MAX_FILES, MAX_FILE_BYTES, MAX_SKILLS_PER_AGENT, MAX_TOTAL_BYTES, MAX_VERSIONS_KEPT,
    SKILL_FILE,
};
use crate::skills::store::NEWEST;

/// A refusal as the API answers it: 413 for a size over a cap, else 400.
fn refused(error: SkillError) -> ApiError {
    match error.is_too_large() {
        true => ApiError::ContentTooLarge(error.to_string()),
        false => ApiError::BadRequest(error.to_string()),
    }
}

fn agent_named(agent: &str) -> Result<String, ApiError> {
    let agent = percent_decode(agent);
    check_agent(&agent).map_err(refused)?;
    Ok(agent)
}

fn name_of(name: &str) -> Result<String, ApiError> {
    let name = percent_decode(name);
    check_name(&name).map_err(refused)?;
    Ok(name)
}

fn limits() -> Value {
    json!({
        "files": MAX_FILES,
        "file_bytes": MAX_FILE_BYTES,
        "total_bytes": MAX_TOTAL_BYTES,
        "skills_per_agent": MAX_SKILLS_PER_AGENT,
        "versions_kept": MAX_VERSIONS_KEPT,
    })
}

/// A version's row, as the API shows it (its files apart).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct VersionRow {
    name: String,
    version: i64,
    description: String,
    bytes: i64,
    author: String,
    created_at: i64,
    restored_from: Option<i64>,
    files: String,
    #[serde(default)]
    enabled: Option<i64>,
}

impl VersionRow {
    fn files(&self) -> Files {
        serde_json::from_str(&self.files).unwrap_or_default()
    }

    /// The row as the API shows it; `with_text`: the files' texts too, else their paths and sizes.
    fn view(&self, with_text: bool) -> Value {
        let files = self.files();
        let mut view = json!({
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "bytes": self.bytes,
            "author": self.author,
            "created_at": self.created_at,
            "restored_from": self.restored_from,
            "paths": files.keys().collect::<Vec<_>>(),
        });
        if let Some(enabled) = self.enabled {
            view["enabled"] = json!(enabled != 0);
        }
        if with_text {
            let instructions = files.get(SKILL_FILE).and_then(|text| parse_skill_file(text).ok());
            view["instructions"] = json!(instructions.map(|skill| skill.instructions));
            view["files"] = json!(files);
        }
        view
    }
}

const COLUMNS: &str = "v.name, v.version, v.description, v.bytes, v.author, v.created_at, v.restored_from, v.files";

/// The agent's skills, each at its newest version.
async fn current(db: &D1Database, agent: &str, name: Option<&str>) -> worker::Result<Vec<VersionRow>> {
    db.prepare(format!(
        "SELECT {COLUMNS}, s.enabled FROM skills AS s JOIN skill_versions AS v ON v.agent = s.agent AND v.name = s.name \
         WHERE s.agent = ?1 AND (?2 IS NULL OR s.name = ?2) AND {NEWEST} ORDER BY s.name"
    ))
    .bind(&[agent.into(), name.map_or(wasm_bindgen::JsValue::NULL, Into::into)])?
    .all_counted()
    .await?
    .results()
}

async fn skill_answer(db: &D1Database, agent: &str, name: &str, extra: Value) -> Answer {
    let row = current(db, agent, Some(name)).await?.into_iter().next().ok_or(ApiError::NotFound)?;
    let mut view = row.view(true);
    view["agent"] = json!(agent);
    if let (Some(view), Some(extra)) = (view.as_object_mut(), extra.as_object()) {
        view.extend(extra.clone());
    }
    Response::from_json(&view).map_err(internal)
}

/// `GET /api/agents/{agent}/skills`: the agent's skills (newest versions, files by path) and the limits.
pub async fn list(env: &Env, agent: &str, _operator: &Operator) -> Answer {
    let agent = agent_named(agent)?;
    let rows = current(&env.d1(DATABASE_BINDING)?, &agent, None).await?;
    let skills: Vec<Value> = rows.iter().map(|row| row.view(false)).collect();
    Response::from_json(&json!({ "agent": agent, "skills": skills, "limits": limits() })).map_err(internal)
}

/// `GET /api/agents/{agent}/skills/{name}`: the skill's newest version with its files' texts.
pub async fn get(env: &Env, agent: &str, name: &str, _operator: &Operator) -> Answer {
    let (agent, name) = (agent_named(agent)?, name_of(name)?);
    skill_answer(&env.d1(DATABASE_BINDING)?, &agent, &name, json!({})).await
}

/// The files an install's body holds: a zip (`content-type: application/zip`)
/// or JSON `{"files": {path: text}}`.
async fn body_files(request: &mut Request) -> Result<Files, ApiError> {
    let zipped = request.headers().get("content-type").ok().flatten().is_some_and(|kind| kind.contains("zip"));
    let body = read_body(request, MAX_BODY_BYTES).await?;
    if zipped {
        return text_files(read_zip(&body).map_err(refused)?).map_err(refused);
    }
    #[derive(Deserialize)]
    struct Body {
        files: Files,
    }
    serde_json::from_slice::<Body>(&body)
        .map(|body| body.files)
        .map_err(|_| ApiError::BadRequest("expected a zip or {\"files\": {\"SKILL.md\": \"…\", …}}".into()))
}

/// Saves `bundle` as the skill's next version (a new skill starts enabled,
/// while fewer than the cap exist), trimming the versions past the cap, in
/// one transaction. Nothing when it equals the current files. Says whether a
/// version was saved.
async fn save(
    db: &D1Database,
    agent: &str,
    bundle: &Bundle,
    access: OperatorAccess,
    restored_from: Option<i64>,
) -> Result<bool, ApiError> {
    let name = bundle.skill.name.as_str();
    let existing = current(db, agent, Some(name)).await?.into_iter().next();
    if existing.as_ref().is_some_and(|row| row.files() == bundle.files) {
        return Ok(false);
    }
    let files = serde_json::to_string(&bundle.files).map_err(internal)?;
    let now = number(now_ms());
    let claim = db
        .prepare(
            "INSERT INTO skills (agent, name, enabled, updated_at) SELECT ?1, ?2, 1, ?3 \
             WHERE (SELECT COUNT(*) FROM skills WHERE agent = ?1) < ?4 \
             OR EXISTS (SELECT 1 FROM skills WHERE agent = ?1 AND name = ?2) \
             ON CONFLICT (agent, name) DO UPDATE SET updated_at = excluded.updated_at",
        )
        .bind(&[agent.into(), name.into(), now.clone(), number(MAX_SKILLS_PER_AGENT as i64)])?;
    let insert = db
        .prepare(
            "INSERT INTO skill_versions (agent, name, version, description, files, bytes, author, created_at, restored_from) \
             SELECT ?1, ?2, COALESCE((SELECT MAX(version) FROM skill_versions WHERE agent = ?1 AND name = ?2), 0) + 1, \
             ?3, ?4, ?5, ?6, ?7, ?8 WHERE EXISTS (SELECT 1 FROM skills WHERE agent = ?1 AND name = ?2)",
        )
        .bind(&[
            agent.into(),
            name.into(),
            bundle.skill.description.as_str().into(),
            files.into(),
            number(bundle.bytes as i64),
            access.author().into(),
            now,
            restored_from.map_or(wasm_bindgen::JsValue::NULL, number),
        ])?;
    let trim = db
        .prepare(
            "DELETE FROM skill_versions WHERE agent = ?1 AND name = ?2 \
             AND version <= (SELECT MAX(version) FROM skill_versions WHERE agent = ?1 AND name = ?2) - ?3",
        )
        .bind(&[agent.into(), name.into(), number(MAX_VERSIONS_KEPT)])?;
    let results = batch(db, vec![claim, insert, trim]).await?;
    if results.get(1).map_or(0, changes) == 0 {
        return Err(ApiError::BadRequest(format!(
            "the agent has {MAX_SKILLS_PER_AGENT} skills already: remove one first"
        )));
    }
    LogLine::info("skill_saved")
        .field("agent", agent)
        .field("skill", name)
        .field("author", access.author())
        .field("bytes", bundle.bytes as u64)
        .field("files", bundle.files.len() as u64)
        .field("restored_from", restored_from)
        .emit();
    Ok(true)
}

/// `POST /api/agents/{agent}/skills`: installs a skill (named by its
/// SKILL.md), or a new version of it. Refused whole (nothing stored): a bad
/// path, a file or total over its cap (413), a secret in any file (400 naming
/// the file), a SKILL.md without its front matter.
pub async fn install(mut request: Request, env: &Env, agent: &str, operator: &Operator) -> Answer {
    let agent = agent_named(agent)?;
    let files = body_files(&mut request).await?;
    let redactor = config::redactor();
    let bundle = check_bundle(files, None, |text| redactor.found(text)).map_err(refused)?;
    let database = env.d1(DATABASE_BINDING)?;
    if crate::agents::store::get(&database, &agent).await?.is_none() {
        return Err(ApiError::NotFound);
    }
    let saved = save(&database, &agent, &bundle, operator.access(), None).await?;
    skill_answer(&database, &agent, &bundle.skill.name, json!({ "saved": saved })).await
}

/// `POST /api/agents/{agent}/skills/{name}/enable` and `…/disable`: whether
/// its name and description go in the agent's prompts (and its files in runs).
pub async fn set_enabled(env: &Env, agent: &str, name: &str, enabled: bool, operator: &Operator) -> Answer {
    let (agent, name) = (agent_named(agent)?, name_of(name)?);
    let database = env.d1(DATABASE_BINDING)?;
    let result = database
        .prepare("UPDATE skills SET enabled = ?3, updated_at = ?4 WHERE agent = ?1 AND name = ?2")
        .bind(&[agent.as_str().into(), name.as_str().into(), number(enabled as i64), number(now_ms())])?
        .run_counted()
        .await?;
    if changes(&result) == 0 {
        return Err(ApiError::NotFound);
    }
    LogLine::info("skill_enabled")
        .field("agent", agent.as_str())
        .field("skill", name.as_str())
        .field("enabled", enabled)
        .field("author", operator.access().author())
        .emit();
    skill_answer(&database, &agent, &name, json!({})).await
}

/// `GET /api/agents/{agent}/skills/{name}/versions`: the kept versions, newest first (paths, not texts).
pub async fn versions(env: &Env, agent: &str, name: &str, _operator: &Operator) -> Answer {
    let (agent, name) = (agent_named(agent)?, name_of(name)?);
    let rows: Vec<VersionRow> = env
        .d1(DATABASE_BINDING)?
        .prepare(format!(
            "SELECT {COLUMNS} FROM skill_versions AS v WHERE v.agent = ?1 AND v.name = ?2 ORDER BY v.version DESC"
        ))
        .bind(&[agent.as_str().into(), name.as_str().into()])?
        .all_counted()
        .await?
        .results()?;
    if rows.is_empty() {
        return Err(ApiError::NotFound);
    }
    let versions: Vec<Value> = rows.iter().map(|row| row.view(false)).collect();
    Response::from_json(&json!({ "agent": agent, "name": name, "versions": versions })).map_err(internal)
}

/// `POST /api/agents/{agent}/skills/{name}/restore/{version}`: saves a kept
/// version's files again as the newest version.
pub async fn restore(env: &Env, agent: &str, name: &str, version: &str, operator: &Operator) -> Answer {
    let (agent, name) = (agent_named(agent)?, name_of(name)?);
    let version = parse_version(version).map_err(refused)?;
    let database = env.d1(DATABASE_BINDING)?;
    let row: Option<VersionRow> = database
        .prepare(format!(
            "SELECT {COLUMNS} FROM skill_versions AS v WHERE v.agent = ?1 AND v.name = ?2 AND v.version = ?3"
        ))
        .bind(&[agent.as_str().into(), name.as_str().into(), number(version)])?
        .first_counted()
        .await?;
    let row = row.ok_or(ApiError::NotFound)?;
    // Checked again: the caps or the configured secrets may have changed since.
    let redactor = config::redactor();
    let bundle = check_bundle(row.files(), Some(&name), |text| redactor.found(text)).map_err(refused)?;
    let saved = save(&database, &agent, &bundle, operator.access(), Some(version)).await?;
    skill_answer(&database, &agent, &name, json!({ "saved": saved })).await
}
