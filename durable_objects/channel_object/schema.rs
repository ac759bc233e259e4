//! The object's tables, created on start, and the upgrades of objects made
//! before a table changed (each a no-op once done).

use super::{commit, envelopes, held, history, inbox, notices, outbox, slots, stats};
use crate::log_line::LogLine;
use crate::runtime::durable::Sql;
use crate::runtime::log::Emit;

/// A table whose shape changed to write fewer rows: how its `CREATE` text
/// tells an old one, and the columns to copy from it.
struct Reshaped {
    table: &'static str,
    schema: &'static str,
    old: fn(&str) -> bool,
    columns: &'static str,
}

/// - AUTOINCREMENT dropped (inbox, envelopes, history): its `sqlite_sequence`
///   update was a row written per row inserted. Their `seq` (the rowid) still
///   grows with each row; the inbox keeps its newest row so a number is never
///   handed out twice, the envelopes are never deleted, and history's `seq`
///   only orders the object's own rows (its change stamps say what D1 has).
/// - history's `UNIQUE` id dropped: its index was a second row written per
///   row stored (the id is checked by a scan of a few hundred rows).
/// - the outbox and the sightings keyed by their text key `WITHOUT ROWID`:
///   a rowid table keeps a second index for such a key, a row written more
///   per row inserted.
const RESHAPED: [Reshaped; 5] = [
    Reshaped {
        table: "inbox",
        schema: inbox::SCHEMA,
        old: |made| made.contains("AUTOINCREMENT"),
        columns: "seq, delivery_id, event, decision, reason, received_at, status, membership",
    },
    Reshaped {
        table: "history",
        schema: history::SCHEMA,
        old: |made| made.contains("UNIQUE"),
        columns: "seq, id, conversation_key, role, author_id, author_name, content, platform_message_id, \
                  created_at, compacted, changed",
    },
    Reshaped {
        table: "envelopes",
        schema: envelopes::SCHEMA,
        old: |made| made.contains("AUTOINCREMENT"),
        columns: "seq, id, kind, body",
    },
    Reshaped {
        table: "outbox",
        schema: outbox::SCHEMA,
        old: |made| !made.contains("WITHOUT ROWID"),
        columns: "id, turn, piece, text, reply_to, status, attempts, platform_message_id, last_error, created_at, \
                  file_id, approval_id",
    },
    Reshaped {
        table: "sightings",
        schema: commit::SCHEMA,
        old: |made| !made.contains("WITHOUT ROWID"),
        columns: "platform_key, name, is_bot, seen_at, pending",
    },
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
        held::SCHEMA,
    ];
    for schema in schemas {
        if let Err(error) = sql.exec(schema, None) {
            LogLine::error("channel_schema_failed").reason(&error).emit();
        }
    }
    let _ = sql.exec(inbox::DROP_BY_RECEIVED, None);
    for (probe, upgrade) in inbox::UPGRADES.into_iter().chain(outbox::UPGRADES) {
        if sql.exec(probe, None).is_err() {
            let _ = sql.exec(upgrade, None);
        }
    }
    if sql.exec(history::PROBE, None).is_err() {
        let _ = sql.exec(history::UPGRADE, None);
    }
    if let Err(error) = reshape(sql) {
        LogLine::error("channel_schema_failed").field("upgrade", "reshape").reason(&error).emit();
    }
    if let Err(error) = held::upgrade(sql) {
        LogLine::error("channel_schema_failed").field("upgrade", "held spend").reason(&error).emit();
    }
}

/// Copies each table still in an old shape (one read of the schema finds
/// them) into its current one, rows and numbers kept: one synchronous run of
/// statements, so one implicit transaction.
fn reshape(sql: &Sql) -> worker::Result<()> {
    #[derive(serde::Deserialize)]
    struct Made {
        name: String,
        sql: String,
    }
    let tables: Vec<Made> = sql
        .exec(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' \
             AND name IN ('inbox', 'history', 'envelopes', 'outbox', 'sightings')",
            None,
        )?
        .to_array()?;
    for made in tables {
        let Some(Reshaped { table, schema, columns, .. }) =
            RESHAPED.iter().find(|reshaped| reshaped.table == made.name && (reshaped.old)(&made.sql))
        else {
            continue;
        };
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

/// The `CREATE TABLE` statement of `table` in a module's schema (to its `;`).
fn create_statement<'a>(schema: &'a str, table: &str) -> Option<&'a str> {
    let start = schema.find(&format!("CREATE TABLE IF NOT EXISTS {table} ("))?;
    let end = start + schema[start..].find(';')?;
    Some(&schema[start..end])
}
