//! What a channel object's SQLite schema lacks, from one read of
//! `sqlite_master`: the object runs that read on every start, and only what
//! [`Layout::plan`] finds missing after it. An object whose tables are
//! current runs the one statement; a new one a second that creates them all.
//! (It was 17 statements a start: a create, a probe and an upgrade check each.)

use serde::Deserialize;

/// A table or index as `sqlite_master` holds it: its `CREATE` text (None for
/// an index a constraint made).
#[derive(Debug, Deserialize)]
pub struct Found {
    pub name: String,
    pub sql: Option<String>,
}

/// A column added to a table after objects were made with it.
pub struct Column {
    pub table: &'static str,
    pub name: &'static str,
    /// What adds it (and fills it, where old rows need a value).
    pub add: &'static str,
}

/// A table whose shape changed to write fewer rows: how its `CREATE` text
/// tells an old one (the columns both shapes have are copied).
pub struct Reshaped {
    pub table: &'static str,
    /// The module's schema, holding the table's current `CREATE`.
    pub schema: &'static str,
    pub old: fn(&str) -> bool,
}

/// An object's schema as it should be, and what changed since objects were made.
pub struct Layout {
    /// Every table and index (each `CREATE ... IF NOT EXISTS`), in creation order.
    pub schemas: &'static [&'static str],
    /// Added columns, in the order they are added.
    pub columns: &'static [&'static Column],
    pub reshaped: &'static [Reshaped],
    /// Tables and indexes of old objects to take apart when found.
    pub leftovers: &'static [&'static str],
}

/// What one object's schema lacks: each list holds places in the layout's lists.
#[derive(Debug, PartialEq, Default)]
pub struct Plan {
    /// A table or index is missing: run every schema (each `IF NOT EXISTS`).
    pub create: bool,
    /// Nothing is there yet (a new object): the schemas run as one.
    pub fresh: bool,
    pub columns: Vec<usize>,
    pub reshape: Vec<usize>,
    pub leftovers: Vec<usize>,
}

impl Layout {
    pub fn plan(&self, found: &[Found]) -> Plan {
        let made = |name: &str| found.iter().find(|found| found.name == name);
        let text = |name: &str| made(name).and_then(|found| found.sql.as_deref());
        Plan {
            create: self.schemas.iter().flat_map(|schema| declared_names(schema)).any(|name| made(name).is_none()),
            fresh: found.is_empty(),
            columns: places(self.columns, |column| {
                text(column.table).is_some_and(|made| !has_column(made, column.name))
            }),
            reshape: places(self.reshaped, |reshaped| text(reshaped.table).is_some_and(reshaped.old)),
            leftovers: places(self.leftovers, |name| made(name).is_some()),
        }
    }

    /// The runs of statements that create what a plan lacks: every schema as
    /// one for a new object; one each for an old one, so that a statement its
    /// old tables fail does not stop the others.
    pub fn creates(&self, plan: &Plan) -> Vec<String> {
        match (plan.create, plan.fresh) {
            (false, _) => Vec::new(),
            (true, true) => vec![self.schemas.concat()],
            (true, false) => self.schemas.iter().map(|schema| schema.to_string()).collect(),
        }
    }
}

fn places<T>(items: &[T], wanted: impl Fn(&T) -> bool) -> Vec<usize> {
    (items.iter().enumerate()).filter(|(_, item)| wanted(item)).map(|(place, _)| place).collect()
}

/// The tables and indexes a schema creates.
pub fn declared_names(schema: &str) -> impl Iterator<Item = &str> {
    schema.split(';').filter_map(|statement| {
        let rest = statement.trim().strip_prefix("CREATE ")?;
        let rest = rest.strip_prefix("TABLE IF NOT EXISTS ").or_else(|| rest.strip_prefix("INDEX IF NOT EXISTS "))?;
        rest.split([' ', '(']).next()
    })
}

/// Whether a table's `CREATE` text declares `column` (a whole word in its column list).
pub fn has_column(create: &str, column: &str) -> bool {
    let Some(start) = create.find('(') else { return false };
    let list = &create[start..];
    let is_word = |character: char| character.is_ascii_alphanumeric() || character == '_';
    list.match_indices(column)
        .any(|(at, _)| !list[..at].ends_with(is_word) && !list[at + column.len()..].starts_with(is_word))
}

/// The `CREATE TABLE` statement of `table` in a module's schema (to its `;`).
pub fn create_statement<'a>(schema: &'a str, table: &str) -> Option<&'a str> {
    let start = schema.find(&format!("CREATE TABLE IF NOT EXISTS {table} ("))?;
    let end = start + schema[start..].find(';')?;
    Some(&schema[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTES: &str = "
CREATE TABLE IF NOT EXISTS notes (
    seq INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    author TEXT
);
CREATE INDEX IF NOT EXISTS notes_by_author ON notes (author);
";
    const MARKS: &str = "CREATE TABLE IF NOT EXISTS marks (name TEXT PRIMARY KEY, at INTEGER) WITHOUT ROWID;";
    const AUTHOR: Column = Column { table: "notes", name: "author", add: "ALTER TABLE notes ADD COLUMN author TEXT" };
    const AT: Column = Column { table: "marks", name: "at", add: "ALTER TABLE marks ADD COLUMN at INTEGER" };
    const LAYOUT: Layout = Layout {
        schemas: &[NOTES, MARKS],
        columns: &[&AUTHOR, &AT],
        reshaped: &[Reshaped { table: "marks", schema: MARKS, old: |made| !made.contains("WITHOUT ROWID") }],
        leftovers: &["notes_by_time"],
    };

    /// `sqlite_master` as SQLite keeps it: each `CREATE` without `IF NOT EXISTS`.
    fn made(statements: &[&str]) -> Vec<Found> {
        statements
            .iter()
            .map(|statement| {
                let name = declared_names(statement).next().expect("a name").to_string();
                Found { name, sql: Some(statement.trim().trim_end_matches(';').replacen(" IF NOT EXISTS", "", 1)) }
            })
            .collect()
    }

    fn current() -> Vec<Found> {
        made(&[create_statement(NOTES, "notes").unwrap(), NOTES.split(';').nth(1).unwrap(), MARKS])
    }

    #[test]
    fn a_current_object_needs_nothing_and_a_new_one_everything_in_one_run() {
        assert_eq!(LAYOUT.plan(&current()), Plan::default());
        assert!(LAYOUT.creates(&Plan::default()).is_empty());
        let fresh = LAYOUT.plan(&[]);
        assert_eq!(fresh, Plan { create: true, fresh: true, ..Plan::default() });
        assert_eq!(LAYOUT.creates(&fresh), [format!("{NOTES}{MARKS}")]);
        let mut without_index = current();
        without_index.retain(|found| found.name != "notes_by_author");
        let lacking = LAYOUT.plan(&without_index);
        assert_eq!(lacking, Plan { create: true, ..Plan::default() });
        assert_eq!(LAYOUT.creates(&lacking), [NOTES, MARKS]);
        assert_eq!(declared_names(NOTES).collect::<Vec<_>>(), ["notes", "notes_by_author"]);
    }

    #[test]
    fn an_old_object_gets_what_changed_since_it_was_made() {
        let mut old = made(&[
            "CREATE TABLE IF NOT EXISTS notes (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);",
            NOTES.split(';').nth(1).unwrap(),
            "CREATE TABLE IF NOT EXISTS marks (name TEXT PRIMARY KEY, at INTEGER);",
        ]);
        old.push(Found { name: "notes_by_time".into(), sql: Some("CREATE INDEX notes_by_time ON notes (seq)".into()) });
        // An index a constraint made has no text.
        old.push(Found { name: "sqlite_autoindex_marks_1".into(), sql: None });
        let plan = LAYOUT.plan(&old);
        assert_eq!(plan, Plan { columns: vec![0], reshape: vec![0], leftovers: vec![0], ..Plan::default() });
    }

    #[test]
    fn a_column_is_found_only_as_a_whole_word_of_the_column_list() {
        let made = "CREATE TABLE outbox (id TEXT PRIMARY KEY, file_ids TEXT, approval_id TEXT)";
        assert!(has_column(made, "approval_id"));
        assert!(has_column(made, "id"));
        assert!(!has_column(made, "file_id"));
        assert!(!has_column("CREATE TABLE outbox (id TEXT)", "outbox"));
    }
}
