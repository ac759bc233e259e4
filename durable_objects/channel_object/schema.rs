//! The object's tables, created on start, and the upgrades of objects made
//! before a table changed (each a no-op once done): one read of the schema,
//! and what src/channel/schema.rs finds missing in it.

use super::{commit, envelopes, held, history, inbox, notices, outbox, slots, stats};
use crate::channel::schema::{create_statement, Found, Layout, Reshaped};
use crate::log_line::LogLine;
use crate::runtime::durable::Sql;
use crate::runtime::log::Emit;

const LAYOUT: Layout = Layout {
    schemas: &SCHEMAS,
    columns: &[&inbox::UPGRADES[0], &inbox::UPGRADES[1], &outbox::UPGRADES[0], &outbox::UPGRADES[1], &history::UPGRADE],
    reshaped: &RESHAPED,
    // Dropped and moved by [`prepare`], in this order.
    leftovers: &[inbox::OLD_INDEX, held::OLD_TABLE],
};

/// The tables and indexes every object has, in the order they are created.
const SCHEMAS: [&str; 9] = [
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

/// - AUTOINCREMENT dropped (inbox, envelopes, history): its `sqlite_sequence`
///   update was a row written per row inserted. Their `seq` (the rowid) still
///   grows with each row; the inbox keeps its newest row so a number is never
///   handed out twice, the envelopes are never deleted, and history's `seq`
///   only orders the object's own rows (its change stamps say what D1 has).
/// - history's `UNIQUE` id dropped: its index was a second row written per
///   row stored (the id is checked by a scan of a few hundred rows); the
///   inbox's `UNIQUE` delivery id likewise (the object's memory holds the
///   ids: src/channel/deliveries.rs).
/// - the outbox and the sightings keyed by their text key `WITHOUT ROWID`:
///   a rowid table keeps a second index for such a key, a row written more
///   per row inserted.
const RESHAPED: [Reshaped; 5] = [
    Reshaped {
        table: "inbox",
        schema: inbox::SCHEMA,
        old: |made| made.contains("AUTOINCREMENT") || made.contains("UNIQUE"),
    },
    Reshaped { table: "history", schema: history::SCHEMA, old: |made| made.contains("UNIQUE") },
    Reshaped { table: "envelopes", schema: envelopes::SCHEMA, old: |made| made.contains("AUTOINCREMENT") },
    Reshaped { table: "outbox", schema: outbox::SCHEMA, old: |made| !made.contains("WITHOUT ROWID") },
    Reshaped { table: "sightings", schema: commit::SCHEMA, old: |made| !made.contains("WITHOUT ROWID") },
];

/// Creates the tables and upgrades old ones, in this order: creates, columns
/// added, old shapes copied, the old index dropped, the old spend moved.
pub(super) fn prepare(sql: &Sql) {
    let found = sql.exec("SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index')", None);
    let plan = match found.and_then(|cursor| cursor.to_array::<Found>()) {
        Ok(found) => LAYOUT.plan(&found),
        Err(error) => {
            LogLine::error("channel_schema_failed").field("upgrade", "read").reason(&error).emit();
            LAYOUT.plan(&[])
        }
    };
    let mut steps: Vec<(&str, worker::Result<()>)> = Vec::new();
    for create in LAYOUT.creates(&plan) {
        steps.push(("create", sql.exec(&create, None).map(drop)));
    }
    for &place in &plan.columns {
        steps.push(("column", sql.exec(LAYOUT.columns[place].add, None).map(drop)));
    }
    for &place in &plan.reshape {
        steps.push(("reshape", reshape(sql, &LAYOUT.reshaped[place])));
    }
    for &place in &plan.leftovers {
        steps.push(match LAYOUT.leftovers[place] {
            held::OLD_TABLE => ("held spend", held::upgrade(sql)),
            index => ("old index", sql.exec(&format!("DROP INDEX IF EXISTS {index}"), None).map(drop)),
        });
    }
    for (upgrade, outcome) in steps {
        if let Err(error) = outcome {
            LogLine::error("channel_schema_failed").field("upgrade", upgrade).reason(&error).emit();
        }
    }
}

/// Copies a table in an old shape into its current one, rows and numbers
/// kept: the columns both have (the added ones are there by now; one the
/// current shape dropped is left behind). One synchronous run of
/// statements, so one implicit transaction.
fn reshape(sql: &Sql, reshaped: &Reshaped) -> worker::Result<()> {
    let Reshaped { table, schema, .. } = reshaped;
    let Some(create) = create_statement(schema, table) else { return Ok(()) };
    let copy = format!("{table}_plain");
    let create =
        create.replacen(&format!("CREATE TABLE IF NOT EXISTS {table} ("), &format!("CREATE TABLE {copy} ("), 1);
    sql.exec(&format!("DROP TABLE IF EXISTS {copy}; {create};"), None)?;
    let names =
        |name: &str| sql.exec(&format!("SELECT * FROM {name} LIMIT 0"), None).map(|cursor| cursor.column_names());
    let kept = names(&copy)?;
    let columns = names(table)?.into_iter().filter(|name| kept.contains(name)).collect::<Vec<_>>().join(", ");
    sql.exec(
        &format!(
            "INSERT INTO {copy} ({columns}) SELECT {columns} FROM {table}; \
             DROP TABLE {table}; ALTER TABLE {copy} RENAME TO {table};"
        ),
        None,
    )?;
    // Its indexes went with the old table.
    sql.exec(schema, None)?;
    Ok(())
}
