//! Reads [`Config`] from the Worker's vars and secrets.

use worker::Env;

use crate::config::Config;

/// Name of the Durable Object binding for conversation channels.
pub const CHANNEL_BINDING: &str = "CHANNEL";
/// Name of the Queue binding for process jobs.
pub const JOBS_BINDING: &str = "JOBS";
/// Queue names ending in this are dead-letter queues.
pub const DEAD_LETTER_SUFFIX: &str = "-dlq";
/// Name of the D1 binding.
pub const DATABASE_BINDING: &str = "DB";

pub fn load(env: &Env) -> Config {
    Config::from_lookup(|name| {
        env.secret(name).map(|value| value.to_string()).or_else(|_| env.var(name).map(|value| value.to_string())).ok()
    })
}
