//! The identity documents in D1, as a turn or a branch reads them.

use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement, D1Result};

use crate::identity::rules::{IdentityTexts, OVERRIDE_ROW};
use crate::runtime::d1::Metered;

/// The texts one conversation's prompts carry now, in one query: each
/// document's newest version (the shipped default where none was saved) and
/// the conversation's override. The documents are the conversation's
/// agent's own (see `crate::agents`); turns and branches take them from
/// the agent's snapshot (`crate::agents::snapshot`) and read this only for
/// a conversation with an override.
pub async fn load(db: &D1Database, conversation_key: &str) -> worker::Result<IdentityTexts> {
    texts_of(&statement(db, conversation_key)?.all_counted().await?)
}

/// [`load`]'s query, for a caller that batches it with others (a channel turn).
pub fn statement(db: &D1Database, conversation_key: &str) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "SELECT name, text FROM identity_versions AS saved WHERE agent = ?3 AND version = \
         (SELECT MAX(version) FROM identity_versions AS newer WHERE newer.agent = ?3 AND newer.name = saved.name) \
         UNION ALL SELECT ?2 AS name, text FROM conversation_identity WHERE conversation_key = ?1",
    )
    .bind(&[conversation_key.into(), OVERRIDE_ROW.into(), crate::agents::agent_of(conversation_key).into()])
}

/// One saved document (or the conversation's override, named [`OVERRIDE_ROW`]).
#[derive(Clone, Deserialize)]
pub struct Row {
    name: String,
    text: String,
}

/// The texts [`statement`]'s (or [`documents_statement`]'s) rows hold.
pub fn texts_of(result: &D1Result) -> worker::Result<IdentityTexts> {
    Ok(texts_from(&result.results::<Row>()?))
}

/// The texts of `rows`.
pub fn texts_from(rows: &[Row]) -> IdentityTexts {
    IdentityTexts::from_rows(rows.iter().map(|row| (row.name.as_str(), row.text.as_str())))
}

/// The rows of [`documents_statement`] (an isolate keeps them: `crate::agents::snapshot`).
pub fn rows_of(result: &D1Result) -> worker::Result<Vec<Row>> {
    result.results()
}

/// Each of `agent`'s documents' newest version, without any conversation's override.
pub fn documents_statement(db: &D1Database, agent: &str) -> worker::Result<D1PreparedStatement> {
    db.prepare(
        "SELECT name, text FROM identity_versions AS saved WHERE agent = ?1 AND version = \
         (SELECT MAX(version) FROM identity_versions AS newer WHERE newer.agent = ?1 AND newer.name = saved.name)",
    )
    .bind(&[agent.into()])
}

/// The conversations that have an override (at most
/// [`MAX_CONVERSATION_OVERRIDES`](crate::identity::rules::MAX_CONVERSATION_OVERRIDES)):
/// a turn of any other needs only its agent's documents.
pub fn overridden_statement(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT conversation_key FROM conversation_identity ORDER BY conversation_key")
}

/// The keys of [`overridden_statement`]'s rows, sorted.
pub fn overridden_in(result: &D1Result) -> worker::Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Key {
        conversation_key: String,
    }
    Ok(result.results::<Key>()?.into_iter().map(|row| row.conversation_key).collect())
}
