//! The cron triggers (wrangler.toml). Every minute, the sweeper: it wakes
//! conversations holding an acknowledged inbound with no outcome past
//! `SWEEP_AFTER_MS`, so no message depends on one alarm chain succeeding.
//! Every 15 minutes, the tick: the Discord Gateway kept connected, overdue
//! schedules woken, ready tasks started, the cortex, then files past their
//! keeping time deleted. Each part runs whatever the others did; the tick is
//! logged and kept for `/api/status`.

pub mod cortex;
pub mod reshard;
pub mod reshard_people;
mod scan;

use worker::Env;

use crate::channel::routes::ChannelRoute;
use crate::conversations::store as conversations;
use crate::files::store as files;
use crate::log_line::{Level, LogLine};
use crate::platforms::discord::gateway_route::GatewayRoute;
use crate::platforms::discord::gateway_stub as gateway;
use crate::runtime::channel_stub;
use crate::runtime::config;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::schedules::store as schedules;
use crate::status::api as status;
use crate::status::rules::{outcome, CronTick};
use crate::tasks::store as tasks;

/// The sweeper's trigger (wrangler.toml); any other trigger runs the tick.
pub const SWEEP_CRON: &str = "* * * * *";
/// Conversations one sweep wakes at most (the longest waiting first).
const SWEEP_BATCH: usize = 200;

/// Runs what the trigger `cron` is for.
pub async fn run(cron: &str, env: &Env) {
    match cron {
        SWEEP_CRON => {
            sweep(env).await;
            reshard(env).await;
        }
        _ => tick(env).await,
    }
}

/// Wakes every conversation whose oldest open inbound waited past the bound;
/// its channel object runs what waits (or clears a stale mark).
async fn sweep(env: &Env) {
    let config = config::load(env);
    if config.refusal().is_some() {
        return;
    }
    let started = now_ms();
    let swept = async {
        let waiting = conversations::awaiting(env, started - config.sweep_after_ms, SWEEP_BATCH).await?;
        let mut woken = 0;
        for conversation_key in &waiting {
            match channel_stub::post(env, conversation_key, ChannelRoute::SweepWake, String::new()).await {
                Ok(_) => woken += 1,
                Err(error) => {
                    LogLine::warn("sweep_wake_failed").conversation(conversation_key).reason(&error).emit();
                }
            }
        }
        Ok::<_, worker::Error>((waiting.len(), woken))
    };
    match swept.await {
        Ok((0, _)) => {}
        Ok((waiting, woken)) => LogLine::warn("swept")
            .field("waiting", waiting)
            .field("woken", woken)
            .duration_ms(now_ms() - started)
            .emit(),
        Err(error) => LogLine::error("sweep_failed").reason(&error).emit(),
    }
}

/// Moves conversations' rows (reshard.rs) and people's (reshard_people.rs)
/// the D1 shards now place elsewhere.
async fn reshard(env: &Env) {
    if config::load(env).refusal().is_some() {
        return;
    }
    match reshard::run(env).await {
        Ok(0) => {}
        Ok(moved) => LogLine::info("resharded").field("conversations", moved).emit(),
        Err(error) => {
            LogLine::error("reshard_failed").field("recovery", "the next minute goes on").reason(&error).emit()
        }
    }
    match reshard_people::run(env).await {
        Ok(0) => {}
        Ok(moved) => LogLine::info("resharded_people").field("platform_ids", moved).emit(),
        Err(error) => {
            LogLine::error("reshard_people_failed").field("recovery", "the next minute goes on").reason(&error).emit()
        }
    }
}

/// Runs the tick's parts in turn and records how each went.
async fn tick(env: &Env) {
    let config = config::load(env);
    if let Some(refusal) = config.refusal() {
        // Refused at start: the cron does nothing either (every request says why).
        LogLine::error("config_refused").field("error", refusal).emit();
        return;
    }
    let started = now_ms();
    let gateway = match config.discord_gateway {
        true => outcome(gateway::call(env, GatewayRoute::Ensure).await.map(|_| None)),
        false => "off".to_string(),
    };
    let schedules = schedules::rearm_overdue(env, started).await;
    let schedules = outcome(schedules.map(|woken| Some(format!("woke {woken} conversation(s)"))));
    let tasks = outcome(tasks::run_ready_loop(env).await.map(|begun| Some(format!("started {begun} task(s)"))));
    let cortex = outcome(cortex::run(&config, env).await.map(|()| None));
    // The workspace's files keep as long as the files do: the same sweep.
    let expired = match files::expire(env, started).await {
        Ok(deleted) => crate::workspace::store::expire(env, started)
            .await
            .map(|gone| Some(format!("deleted {deleted} file(s), {gone} workspace file(s)"))),
        Err(error) => Err(error),
    };
    let files = outcome(expired);
    let tick = CronTick { at_ms: started, duration_ms: now_ms() - started, gateway, schedules, tasks, cortex, files };
    let level = if tick.is_ok() { Level::Info } else { Level::Error };
    LogLine::new(level, "cron_tick")
        .duration_ms(tick.duration_ms)
        .field("gateway", tick.gateway.as_str())
        .field("schedules", tick.schedules.as_str())
        .field("tasks", tick.tasks.as_str())
        .field("cortex", tick.cortex.as_str())
        .field("files", tick.files.as_str())
        .emit();
    if let Err(error) = status::record(env, status::CRON_TICK, tick.to_json()).await {
        LogLine::warn("status_not_recorded").field("kind", "cron_tick").reason(&error).emit();
    }
}
