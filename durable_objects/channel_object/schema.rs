//! The object's tables, created on start, and the upgrades of objects made
//! before a table changed (each a no-op once done).

use super::{commit, envelopes, history, inbox, notices, outbox, slots, stats};
use crate::log_line::LogLine;
use crate::runtime::durable::Sql;
use crate::runtime::log::Emit;

/// Tables that dropped AUTOINCREMENT, with the columns an old table has:
/// its `sqlite_sequence` update was a row written per row inserted. Their
/// `seq` (the rowid) still grows with each row; the inbox keeps its newest
/// row so a number is never handed out twice, the envelopes are never
/// deleted, and history's `seq` only orders the object's own rows.
const PLAIN_ROWID: [(&str, &str, &str); 3] = [
    ("inbox", inbox::SCHEMA, "seq, delivery_id, event, decision, reason, received_at, status, membership"),
    (
        "history",
        history::SCHEMA,
        "seq, id, conversation_key, role, author_id, author_name, content, platform_message_id, created_at, \
         compacted, mirrored",
    ),
    ("envelopes", envelopes::SCHEMA, "seq, id, kind, body"),
];

/// Creates the tables and upgrades old ones.
pub(super) fn prepare(sql: &Sql) {
    let schemas = [
        inbox::SCHEMA,
        outbox::SCHEMA,
        slots::SCHEMA,
        envelopes::SCHEMA,
        stats::SCHEMA,
        history::SCHEMA,
        notices::SCHEMA,
        commit::SCHEMA,
    ];
    for schema in schemas {
        if let Err(error) = sql.exec(schema, None) {
            LogLine::error("channel_schema_failed").reason(&error).emit();
        }
    }
    if sql.exec(inbox::PROBE, None).is_err() {
        let _ = sql.exec(inbox::UPGRADE, None);
    }
    let _ = sql.exec(inbox::DROP_BY_RECEIVED, None);
    for (probe, upgrade) in outbox::UPGRADES {
        if sql.exec(probe, None).is_err() {
            let _ = sql.exec(upgrade, None);
        }
    }
    if let Err(error) = drop_autoincrement(sql) {
        LogLine::error("channel_schema_failed").field("upgrade", "plain rowid").reason(&error).emit();
    }
}

/// Copies each table still made with AUTOINCREMENT (one read of the schema
/// finds them) into its current layout, rows and numbers kept: one
/// synchronous run of statements, so one implicit transaction.
fn drop_autoincrement(sql: &Sql) -> worker::Result<()> {
    #[derive(serde::Deserialize)]
    struct Old {
        name: String,
    }
    let old: Vec<Old> = sql
        .exec(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('inbox', 'history', 'envelopes') \
             AND sql LIKE '%AUTOINCREMENT%'",
            None,
        )?
        .to_array()?;
    for Old { name } in old {
        let Some((table, schema, columns)) = PLAIN_ROWID.iter().find(|(table, ..)| *table == name) else { continue };
        let Some(create) = create_statement(schema, table) else { continue };
        let copy = format!("{table}_plain");
        let create =
            create.replacen(&format!("CREATE TABLE IF NOT EXISTS {table} ("), &format!("CREATE TABLE {copy} ("), 1);
        sql.exec(
            &format!(
                "DROP TABLE IF EXISTS {copy}; {create}; INSERT INTO {copy} ({columns}) SELECT {columns} FROM {table}; \
                 DROP TABLE {table}; ALTER TABLE {copy} RENAME TO {table};"
            ),
            None,
        )?;
        // Its indexes went with the old table.
        sql.exec(schema, None)?;
    }
    Ok(())
}

/// The `CREATE TABLE` statement of `table` in a module's schema.
fn create_statement<'a>(schema: &'a str, table: &str) -> Option<&'a str> {
    let start = schema.find(&format!("CREATE TABLE IF NOT EXISTS {table} ("))?;
    let end = start + schema[start..].find(");")? + 1;
    Some(&schema[start..end])
}
