//! The one row holding what the object keeps for its next D1 commit: the
//! steps' spend and how far its history went to D1 (src/channel/held.rs says
//! why one row). Each change reads the row and writes it back in one
//! synchronous run, so it lands with the step that made it; the row is read
//! from storage once per start and then from the object's memory ([`Kept`]).

use serde::Deserialize;
use worker::Result;

use crate::channel::held::{Held, HeldSpend};
use crate::channel::memo::Memo;
use crate::runtime::durable::Sql;

/// The row as the object last read or wrote it.
pub type Kept = Memo<Held>;
const ROW: &str = "held";

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS held (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    body TEXT NOT NULL
);
";

/// The mark as SQL, for the history's change stamps: the highest stamp D1
/// holds. A macro, so that the statements built on it are constants.
macro_rules! mirrored_through {
    () => {
        "coalesce((SELECT json_extract(body, '$.mirrored_through') FROM held WHERE id = 1), 0)"
    };
}
pub(super) use mirrored_through;

#[derive(Deserialize)]
struct Body {
    body: String,
}

/// The row, from memory after the first read.
pub fn load(sql: &Sql, kept: &Kept) -> Result<Held> {
    kept.get(ROW, || read(sql))
}

fn read(sql: &Sql) -> Result<Held> {
    let rows: Vec<Body> = sql.exec("SELECT body FROM held WHERE id = 1", None)?.to_array()?;
    Ok(Held::parse(rows.first().map(|row| row.body.as_str()))?)
}

fn store(sql: &Sql, held: &Held) -> Result<()> {
    sql.exec(
        "INSERT INTO held (id, body) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body",
        vec![serde_json::to_string(held)?.into()],
    )?;
    Ok(())
}

/// Reads the row, lets `change` work on it and writes it back if it says so.
pub fn update(sql: &Sql, kept: &Kept, change: impl FnOnce(&mut Held) -> bool) -> Result<()> {
    let mut held = load(sql, kept)?;
    if change(&mut held) {
        store(sql, &held)?;
        kept.put(ROW, held);
    }
    Ok(())
}

/// A step's spend as an object made before kept it: a row of `unsent_spend`.
#[derive(Deserialize)]
struct OldSpend {
    seq: i64,
    conversation_key: String,
    day: String,
    person_key: Option<String>,
    person_name: Option<String>,
    input_tokens: i64,
    output_tokens: i64,
    micro_usd: i64,
}

impl From<OldSpend> for HeldSpend {
    fn from(old: OldSpend) -> HeldSpend {
        let amount = |value: i64| value.max(0) as u64;
        let person =
            old.person_key.map(|key| crate::budget::rules::Person { key, name: old.person_name.unwrap_or_default() });
        HeldSpend {
            seq: old.seq,
            conversation_key: old.conversation_key,
            day: old.day,
            person,
            spend: crate::budget::rules::Spend {
                input_tokens: amount(old.input_tokens),
                output_tokens: amount(old.output_tokens),
                micro_usd: amount(old.micro_usd),
            },
        }
    }
}

#[derive(Deserialize)]
struct Top {
    seq: i64,
}

/// An object's old table of unsent spend (a row per step, numbered by AUTOINCREMENT).
pub const OLD_TABLE: &str = "unsent_spend";

/// Moves [`OLD_TABLE`] into the row, in one synchronous run: its steps keep
/// their numbers, and numbers go on above the highest it ever handed out
/// (D1's `flush_seq` may be that high). schema.rs calls it while the table exists.
pub fn upgrade(sql: &Sql) -> Result<()> {
    let rows: Vec<OldSpend> = sql.exec("SELECT * FROM unsent_spend ORDER BY seq", None)?.to_array()?;
    let top: Vec<Top> = sql.exec("SELECT seq FROM sqlite_sequence WHERE name = 'unsent_spend'", None)?.to_array()?;
    let mut held = read(sql)?;
    let highest = top.iter().map(|top| top.seq).chain(rows.iter().map(|row| row.seq)).max().unwrap_or(0);
    held.next_seq = held.next_seq.max(highest + 1);
    held.spend.extend(rows.into_iter().map(HeldSpend::from));
    held.spend.sort_by_key(|spend| spend.seq);
    store(sql, &held)?;
    sql.exec("DROP TABLE unsent_spend", None)?;
    Ok(())
}
