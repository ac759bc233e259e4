//! What `GET /api/status` says, in plain data: each platform's configuration
//! state (which settings are present: booleans, never values), and the
//! records the cron tick and the dead-letter consumer leave for it.

use std::fmt::Display;

use serde_json::{json, Value};

use crate::config::Config;
use crate::platforms::Platform;

/// Each platform's settings, present or not, and whether the platform has
/// what it needs to answer.
pub fn platforms(config: &Config) -> Value {
    let states = Platform::ALL
        .into_iter()
        .filter_map(|platform| Some((platform.as_str().to_string(), platform.settings_state(config)?)));
    Value::Object(states.collect())
}

/// The models and other keys: which are set, and the model settings.
pub fn models(config: &Config) -> Value {
    json!({
            "channel_model": config.channel_model,
            "openai_api_key": config.openai_api_key.is_set(),
            "anthropic_api_key": config.anthropic_api_key.is_set(),
            "search_api_key": config.search_api_key.is_set(),
            "embedding_model": config.embedding_model,
            "vector_backend": config.vector_backend,
    })
}

/// What the last cron tick did: each of its parts, `ok…` or `failed: …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronTick {
    pub at_ms: i64,
    pub duration_ms: i64,
    /// The Gateway check (`off` when DISCORD_GATEWAY is off).
    pub gateway: String,
    /// Conversations woken for overdue scheduled jobs.
    pub schedules: String,
    /// Ready tasks handed to workers.
    pub tasks: String,
    /// Memory maintenance and the bulletin.
    pub cortex: String,
    /// Files past their keeping time, deleted.
    pub files: String,
}

impl CronTick {
    /// As `/api/status` shows it (built by hand: a serde derive costs more wasm).
    pub fn to_json(&self) -> Value {
        json!({
            "at_ms": self.at_ms,
            "duration_ms": self.duration_ms,
            "gateway": self.gateway,
            "schedules": self.schedules,
            "tasks": self.tasks,
            "cortex": self.cortex,
            "files": self.files,
        })
    }

    /// Whether every part went well.
    pub fn is_ok(&self) -> bool {
        let parts = [&self.gateway, &self.schedules, &self.tasks, &self.cortex, &self.files];
        parts.iter().all(|part| !part.starts_with("failed"))
    }
}

/// A part's outcome as the tick records it: `ok`, `ok: <what it did>`, or `failed: <why>`.
pub fn outcome<E: Display>(result: Result<Option<String>, E>) -> String {
    match result {
        Ok(None) => "ok".to_string(),
        Ok(Some(done)) => format!("ok: {done}"),
        Err(error) => format!("failed: {error}"),
    }
}

/// The last job that ran out of retries and reached the dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub at_ms: i64,
    /// `branch`, `worker`, `compaction`, or `unreadable`.
    pub kind: String,
    pub id: String,
    pub conversation: String,
}

impl DeadLetter {
    pub fn to_json(&self) -> Value {
        json!({ "at_ms": self.at_ms, "kind": self.kind, "id": self.id, "conversation": self.conversation })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_are_ready_only_with_what_they_need() {
        let nothing = platforms(&Config::of(&[]));
        for platform in ["telegram", "slack", "discord"] {
            assert_eq!(nothing[platform]["ready"], false, "{platform}");
        }
        let telegram_only = platforms(&Config::of(&[("TELEGRAM_BOT_TOKEN", "1:x"), ("TELEGRAM_WEBHOOK_SECRET", "s")]));
        assert_eq!(telegram_only["telegram"], json!({"ready": true, "bot_token": true, "webhook_secret": true}));
        assert_eq!(telegram_only["slack"]["ready"], false);
        let discord = [("DISCORD_PUBLIC_KEY", "ab"), ("DISCORD_APPLICATION_ID", "1")];
        assert_eq!(platforms(&Config::of(&discord))["discord"]["ready"], true, "interactions need no bot token");
        let gateway = [discord[0], discord[1], ("DISCORD_GATEWAY", "on")];
        assert_eq!(platforms(&Config::of(&gateway))["discord"]["ready"], false, "the Gateway does");
    }

    #[test]
    fn no_secret_value_appears_only_whether_it_is_set() {
        let secrets = [
            ("ADMIN_TOKEN", "secret-admin"),
            ("OPENAI_API_KEY", "secret-openai"),
            ("ANTHROPIC_API_KEY", "secret-anthropic"),
            ("SEARCH_API_KEY", "secret-search"),
            ("TELEGRAM_BOT_TOKEN", "secret-telegram"),
            ("TELEGRAM_WEBHOOK_SECRET", "secret-webhook"),
            ("SLACK_SIGNING_SECRET", "secret-signing"),
            ("SLACK_BOT_TOKEN", "secret-slack"),
            ("DISCORD_BOT_TOKEN", "secret-discord"),
        ];
        let config = Config::of(&secrets);
        let shown = format!("{} {}", platforms(&config), models(&config));
        assert!(!shown.contains("secret-"), "{shown}");
        assert!(shown.contains(r#""bot_token":true"#) && shown.contains(r#""openai_api_key":true"#), "{shown}");
    }

    #[test]
    fn a_tick_records_each_part_and_is_ok_only_when_all_are() {
        let mut tick = CronTick {
            at_ms: 1,
            duration_ms: 2,
            gateway: "off".into(),
            schedules: outcome::<String>(Ok(Some("woke 2 conversations".into()))),
            tasks: outcome::<String>(Ok(None)),
            cortex: "ok".into(),
            files: "ok: deleted 3 file(s)".into(),
        };
        assert_eq!(tick.schedules, "ok: woke 2 conversations");
        assert!(tick.is_ok());
        assert_eq!(tick.to_json()["schedules"], "ok: woke 2 conversations");
        assert_eq!(tick.to_json()["at_ms"], 1);
        tick.cortex = outcome::<&str>(Err("D1 is down"));
        assert_eq!(tick.cortex, "failed: D1 is down");
        assert!(!tick.is_ok());
    }
}
