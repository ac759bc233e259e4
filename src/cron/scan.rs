//! The scan both movers share (reshard.rs: conversations, reshard_people.rs:
//! people): every database in turn, the shared one first, a page of keys at a
//! time in key order, each stray key handed to the mover. Where a source's
//! scan stands and which sources hold nothing stray (for this `D1_SHARDS`) is
//! kept in the shared database's `status_events`, so a run picks up where the
//! last one stopped and a settled deployment reads one row per source.

use serde_json::Value;
use worker::{D1Database, Env, Result};

use crate::runtime::d1::{number, Metered};
use crate::shards::{binding_of, shard_of, SHARED};

/// Pages one run of a mover reads at most, over every source.
const PAGES_PER_RUN: usize = 10;

/// One kind of row the scan moves.
pub(super) trait Mover {
    /// Names its marks in `status_events` (`{NAME}_cursor:…`, `{NAME}_settled:…`).
    const NAME: &'static str;
    /// Keys a page holds at most; a shorter page ends the source's scan.
    const PAGE: usize;

    /// The next keys after `cursor` on `source`, in order, at most [`Self::PAGE`].
    async fn page(&self, source: &D1Database, cursor: &str) -> Result<Vec<String>>;

    /// Moves `stray` (keys of the page whose shard is not `here`; None: the
    /// shared database, where every key is stray) to their shards, and returns
    /// how many moved.
    async fn move_stray(
        &self,
        env: &Env,
        source: &D1Database,
        here: Option<u32>,
        stray: &[&str],
        shards: u32,
    ) -> Result<usize>;
}

/// Runs `mover`'s next pages; returns how many keys moved. Nothing to do
/// with one database.
pub(super) async fn run<M: Mover>(env: &Env, mover: &M) -> Result<usize> {
    let shards = crate::runtime::config::load(env).d1_shards;
    if shards <= 1 {
        return Ok(0);
    }
    let shared = env.d1(SHARED)?;
    let mut sources: Vec<(String, Option<u32>)> = vec![(SHARED.to_string(), None)];
    sources.extend((0..shards).map(|shard| (binding_of(shard, shards), Some(shard))));
    let (mut moved, mut pages) = (0, 0);
    for (binding, here) in sources {
        let settled = format!("{}_settled:{binding}", M::NAME);
        if meta(&shared, &settled).await?.as_deref() == Some(&shards.to_string()) {
            continue;
        }
        let source = env.d1(&binding)?;
        let cursor_key = format!("{}_cursor:{binding}", M::NAME);
        let mut cursor = meta(&shared, &cursor_key).await?.unwrap_or_default();
        while pages < PAGES_PER_RUN {
            pages += 1;
            let keys = mover.page(&source, &cursor).await?;
            let stray: Vec<&str> = keys
                .iter()
                .map(String::as_str)
                .filter(|key| here.is_none_or(|here| shard_of(key, shards) != here))
                .collect();
            moved += mover.move_stray(env, &source, here, &stray, shards).await?;
            match keys.last() {
                Some(last) if keys.len() == M::PAGE => cursor = last.clone(),
                _ => {
                    set_meta(&shared, &cursor_key, "").await?;
                    set_meta(&shared, &settled, &shards.to_string()).await?;
                    break;
                }
            }
            set_meta(&shared, &cursor_key, &cursor).await?;
        }
    }
    Ok(moved)
}

/// A value the movers keep in the shared database's `status_events`.
async fn meta(shared: &D1Database, key: &str) -> Result<Option<String>> {
    let row: Option<Value> =
        shared.prepare("SELECT value FROM status_events WHERE key = ?1").bind(&[key.into()])?.first_counted().await?;
    Ok(row.and_then(|row| row["value"].as_str().map(str::to_string)))
}

async fn set_meta(shared: &D1Database, key: &str, value: &str) -> Result<()> {
    shared
        .prepare(
            "INSERT INTO status_events (key, value, updated_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(&[key.into(), value.into(), number(crate::runtime::http::now_ms())])?
        .run_counted()
        .await?;
    Ok(())
}
