//! The Gateway's gate: the Gateway object class under one fixed name
//! ([`GATE_NAME`]) plans the shards (K from DISCORD_SHARDS or Discord's
//! `GET /gateway/bot`), starts, checks and stops them, grants their
//! IDENTIFYs (one per rate-limit key every 5 s, in order), gathers their
//! status, and hands a resharding K→K′ over: the new shards start, the old
//! ones close once every new one is READY (the inbox dedupes the overlap).
//! The rules are in [`crate::platforms::discord::shards`].

use futures_util::future::join_all;
use serde_json::{json, Map, Value};
use worker::{Env, Request, Response, Result, Storage};

use crate::config::Config;
use crate::log_line::LogLine;
use crate::platforms::discord::gateway_route::GatewayRoute;
use crate::platforms::discord::gateway_stub::object;
use crate::platforms::discord::messenger::bot_get;
use crate::platforms::discord::shards::{object_name, Grant, Plan, Shards};
use crate::runtime::durable::{MeteredStorage, Sql};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gateway_gate (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    shards TEXT NOT NULL
);
";

/// Serves one of the gate's routes (`None`: not one of them).
pub async fn serve(
    env: &Env,
    storage: &Storage,
    config: &Config,
    route: GatewayRoute,
    request: &Request,
) -> Result<Option<Response>> {
    let answer = match route {
        GatewayRoute::Plan => {
            plan(env, storage, config, GatewayRoute::Start).await?;
            status(env, storage).await?
        }
        GatewayRoute::Check => {
            plan(env, storage, config, GatewayRoute::Ensure).await?;
            json!({ "ok": true })
        }
        GatewayRoute::Halt => {
            let shards = load(&storage.counted_sql())?;
            let plans = [shards.plan, shards.retiring].into_iter().flatten();
            for plan in plans {
                each_shard(env, plan, GatewayRoute::Stop).await;
            }
            status(env, storage).await?
        }
        GatewayRoute::Shards => status(env, storage).await?,
        GatewayRoute::Grant | GatewayRoute::Ready if shard_query(request).is_err() => {
            return Response::error("a shard's call needs ?shard=i&of=K", 400).map(Some);
        }
        GatewayRoute::Grant => {
            let (shard, count) = shard_query(request)?;
            let sql = storage.counted_sql();
            let mut shards = load(&sql)?;
            let wait_ms = match shards.ask(shard, count, now_ms()) {
                Grant::Now => 0,
                Grant::Wait(ms) => ms,
            };
            save(&sql, &shards)?;
            json!({ "wait_ms": wait_ms })
        }
        GatewayRoute::Ready => {
            let (shard, count) = shard_query(request)?;
            let sql = storage.counted_sql();
            let mut shards = load(&sql)?;
            let retire = shards.on_ready(shard, count);
            save(&sql, &shards)?;
            if let Some(old) = retire {
                LogLine::info("gateway_resharded").platform("Discord").field("from", old.count).emit();
                each_shard(env, old, GatewayRoute::Stop).await;
            }
            json!({ "ok": true })
        }
        _ => return Ok(None),
    };
    Response::from_json(&answer).map(Some)
}

/// Plans K (resharding when it changed) and sends `route` (start or ensure)
/// to every shard of the plan, lowest first.
async fn plan(env: &Env, storage: &Storage, config: &Config, route: GatewayRoute) -> Result<()> {
    // Asked every time: the recommendation may change as the bot joins guilds,
    // and max_concurrency is only there.
    let answer = bot_get(config, "/gateway/bot", 100_000).await;
    let wanted = Plan::from(config.discord_shards, answer.as_ref());
    let sql = storage.counted_sql();
    let mut shards = load(&sql)?;
    let orphaned = shards.retiring;
    let changed = shards.replan(wanted, now_ms());
    save(&sql, &shards)?;
    if let Some(orphaned) = orphaned.filter(|plan| Some(*plan) != shards.retiring) {
        // Resharded again mid-handover: the older shards stop at once.
        each_shard(env, orphaned, GatewayRoute::Stop).await;
    }
    // A new plan's shards start (fresh); a running plan's are started or ensured.
    let route = if changed { GatewayRoute::Start } else { route };
    each_shard(env, wanted, route).await;
    Ok(())
}

/// Sends `route` to every shard of `plan`; a failure is logged (the cron tries again).
async fn each_shard(env: &Env, plan: Plan, route: GatewayRoute) {
    for shard in 0..plan.count {
        let query = format!("?shard={shard}&of={}&mc={}", plan.count, plan.max_concurrency);
        if let Err(error) = object(env, &object_name(shard, plan.count), route, &query).await {
            LogLine::warn("gateway_shard_unreachable").platform("Discord").field("shard", shard).reason(&error).emit();
        }
    }
}

/// Every shard's status; with one shard, its fields at the top too (as the
/// unsharded Gateway showed them).
async fn status(env: &Env, storage: &Storage) -> Result<Value> {
    let shards = load(&storage.counted_sql())?;
    let plan = shards.plan.unwrap_or(Plan { count: 1, max_concurrency: 1 });
    let mut plans = vec![plan];
    plans.extend(shards.retiring);
    let mut asks = Vec::new();
    for (retiring, plan) in plans.iter().enumerate() {
        for shard in 0..plan.count {
            asks.push(one_status(env, shard, plan.count, retiring > 0));
        }
    }
    let all: Vec<Value> = join_all(asks).await;
    let mut answer = Map::new();
    if plan.count == 1 {
        if let Some(Value::Object(fields)) = all.first() {
            answer.extend(fields.clone());
        }
    }
    answer.insert("count".into(), json!(plan.count));
    answer.insert("max_concurrency".into(), json!(plan.max_concurrency));
    answer.insert("retiring".into(), json!(shards.retiring.map(|plan| plan.count)));
    answer.insert("shards".into(), Value::Array(all));
    Ok(Value::Object(answer))
}

async fn one_status(env: &Env, shard: u32, count: u32, retiring: bool) -> Value {
    let name = object_name(shard, count);
    let answer = match object(env, &name, GatewayRoute::Status, "").await {
        Ok(mut response) => response.json::<Value>().await.unwrap_or(Value::Null),
        Err(error) => json!({ "error": error.to_string() }),
    };
    let mut fields = match answer {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    fields.insert("shard".into(), json!([shard, count]));
    fields.insert("name".into(), json!(name));
    fields.insert("retiring".into(), json!(retiring));
    Value::Object(fields)
}

/// `?shard=i&of=K` of a shard's call (K ≥ 1, i < K).
pub fn shard_query(request: &Request) -> Result<(u32, u32)> {
    let url = request.url()?;
    let number =
        |name: &str| url.query_pairs().find(|(key, _)| key == name).and_then(|(_, value)| value.parse::<u32>().ok());
    match (number("shard"), number("of")) {
        (Some(shard), Some(count)) if count >= 1 && shard < count => Ok((shard, count)),
        _ => Err("a shard's call needs ?shard=i&of=K".into()),
    }
}

fn load(sql: &Sql) -> Result<Shards> {
    sql.exec(SCHEMA, None)?;
    #[derive(serde::Deserialize)]
    struct Row {
        shards: String,
    }
    let rows: Vec<Row> = sql.exec("SELECT shards FROM gateway_gate WHERE id = 1", None)?.to_array()?;
    Ok(rows.first().and_then(|row| serde_json::from_str(&row.shards).ok()).unwrap_or_default())
}

fn save(sql: &Sql, shards: &Shards) -> Result<()> {
    sql.exec(
        "INSERT INTO gateway_gate (id, shards) VALUES (1, ?) \
         ON CONFLICT (id) DO UPDATE SET shards = excluded.shards",
        vec![serde_json::to_string(shards)?.into()],
    )?;
    Ok(())
}
