//! The skills in D1 (migration `0028_skills.sql`), as a turn, a tool and a
//! run read them: the enabled skills' names and descriptions (the prompt's
//! list), one enabled skill's files (`open_skill`), and every enabled skill's
//! files (mounted read-only in `run_code`'s workspace). Each read is one query.

use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::runtime::d1::Metered;
use crate::skills::rules::{Files, SkillSummary};

/// The condition on `skill_versions AS v` that keeps each skill's newest version.
pub const NEWEST: &str =
    "v.version = (SELECT MAX(version) FROM skill_versions AS newer WHERE newer.agent = v.agent AND newer.name = v.name)";

/// The agent's enabled skills, by name: what its prompts list.
pub async fn enabled(db: &D1Database, agent: &str) -> worker::Result<Vec<SkillSummary>> {
    enabled_statement(db, agent)?.all_counted().await?.results()
}

/// [`enabled`]'s query, for a caller that batches it with others (a channel
/// turn); its rows are read with `D1Result::results::<SkillSummary>`.
pub fn enabled_statement(db: &D1Database, agent: &str) -> worker::Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT s.name, v.description FROM skills AS s JOIN skill_versions AS v ON v.agent = s.agent AND v.name = s.name \
         WHERE s.agent = ?1 AND s.enabled = 1 AND {NEWEST} ORDER BY s.name"
    ))
    .bind(&[agent.into()])
}

#[derive(Deserialize)]
struct FilesRow {
    name: String,
    files: String,
}

/// A stored files column as the files it holds (none when unreadable: it was
/// checked when stored, so that is corruption, not input).
fn files_of(row: &FilesRow) -> Files {
    serde_json::from_str(&row.files).unwrap_or_default()
}

/// One enabled skill's current files; None when the agent has no such
/// enabled skill (a disabled one is as good as absent to the model).
pub async fn enabled_files(db: &D1Database, agent: &str, name: &str) -> worker::Result<Option<Files>> {
    let row: Option<FilesRow> = db
        .prepare(format!(
            "SELECT v.name, v.files FROM skills AS s JOIN skill_versions AS v ON v.agent = s.agent AND v.name = s.name \
             WHERE s.agent = ?1 AND s.name = ?2 AND s.enabled = 1 AND {NEWEST}"
        ))
        .bind(&[agent.into(), name.into()])?
        .first_counted()
        .await?;
    Ok(row.as_ref().map(files_of))
}

/// Every enabled skill's current files, by skill name: what a run mounts.
pub async fn all_enabled_files(db: &D1Database, agent: &str) -> worker::Result<Vec<(String, Files)>> {
    let rows: Vec<FilesRow> = db
        .prepare(format!(
            "SELECT v.name, v.files FROM skills AS s JOIN skill_versions AS v ON v.agent = s.agent AND v.name = s.name \
             WHERE s.agent = ?1 AND s.enabled = 1 AND {NEWEST} ORDER BY s.name"
        ))
        .bind(&[agent.into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(rows.iter().map(|row| (row.name.clone(), files_of(row))).collect())
}

/// Adds the enabled skills of the conversation's agent to a run's files,
/// read-only under `skills/{name}/`, while the run's files stay within
/// `max_bytes` in all (the same cap as the workspace's snapshot).
pub async fn mount(
    env: &worker::Env,
    conversation: &str,
    files: &mut Vec<crate::sandbox::rules::SandboxFile>,
    max_bytes: u64,
) -> Result<(), String> {
    let db = env.d1(crate::runtime::config::DATABASE_BINDING).map_err(|error| error.to_string())?;
    let agent = crate::skills::rules::agent_of(conversation);
    let skills = all_enabled_files(&db, agent).await.map_err(|error| error.to_string())?;
    let mut total: u64 = files.iter().map(|file| file.bytes.len() as u64).sum();
    for (name, skill_files) in skills {
        for (path, text) in skill_files {
            total += text.len() as u64;
            if total > max_bytes {
                return Err(format!("the workspace and the skills hold over {max_bytes} bytes: too much for one run"));
            }
            let path = crate::skills::rules::mount_path(&name, &path);
            files.push(crate::sandbox::rules::SandboxFile { path, bytes: text.into_bytes(), read_only: true });
        }
    }
    Ok(())
}
