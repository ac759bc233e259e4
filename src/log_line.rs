//! Structured log lines: one JSON object per line, `level` and `event` first,
//! then whatever the event knows (conversation key, turn or job id, platform,
//! durations, token counts, the error). Workers Logs indexes each field. Every
//! string is redacted as the line is rendered, so no secret reaches a log.

use std::fmt::Display;

use serde_json::Value;

use crate::llm::Usage;
use crate::redact::Redactor;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// A log line being built: `LogLine::warn("send_failed").conversation(key).error(e)`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub level: Level,
    pub event: &'static str,
    fields: Vec<(&'static str, Value)>,
}

impl LogLine {
    pub fn new(level: Level, event: &'static str) -> Self {
        LogLine { level, event, fields: Vec::new() }
    }

    pub fn info(event: &'static str) -> Self {
        Self::new(Level::Info, event)
    }

    pub fn warn(event: &'static str) -> Self {
        Self::new(Level::Warn, event)
    }

    pub fn error(event: &'static str) -> Self {
        Self::new(Level::Error, event)
    }

    /// Any field; a name given twice keeps the last value.
    pub fn field(self, name: &'static str, value: impl Into<Value>) -> Self {
        self.push(name, value.into())
    }

    // Not generic, so each kind of value adds only its conversion to the Worker.
    fn push(mut self, name: &'static str, value: Value) -> Self {
        self.fields.retain(|(existing, _)| *existing != name);
        self.fields.push((name, value));
        self
    }

    /// The conversation key (`telegram:41`, `slack:T1:C1:…`).
    pub fn conversation(self, key: &str) -> Self {
        self.field("conversation", key)
    }

    /// The turn, job, worker or piece the line is about.
    pub fn id(self, id: &dyn Display) -> Self {
        self.push("id", Value::String(id.to_string()))
    }

    pub fn platform(self, platform: &str) -> Self {
        self.field("platform", platform)
    }

    pub fn duration_ms(self, milliseconds: i64) -> Self {
        self.field("duration_ms", milliseconds)
    }

    pub fn tokens(self, usage: Usage) -> Self {
        self.field("input_tokens", usage.input_tokens).field("output_tokens", usage.output_tokens)
    }

    /// What went wrong, as text.
    pub fn reason(self, error: &dyn Display) -> Self {
        self.push("error", Value::String(error.to_string()))
    }

    /// The line as JSON, each string redacted (configured secrets and key shapes).
    pub fn render(&self, redactor: &Redactor) -> String {
        let mut line = format!(r#"{{"level":"{}","event":{}"#, self.level.as_str(), quoted(self.event));
        for (name, value) in &self.fields {
            let mut value = value.clone();
            redactor.redact_json(&mut value);
            line.push_str(&format!(",{}:{value}", quoted(name)));
        }
        line.push('}');
        line
    }
}

fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_one_json_object_with_level_and_event_first() {
        let line = LogLine::info("turn_finished")
            .conversation("telegram:41")
            .id(&7)
            .platform("Telegram")
            .duration_ms(1234)
            .tokens(Usage { input_tokens: 10, output_tokens: 5 })
            .field("sent", 2)
            .render(&Redactor::default());
        assert!(line.starts_with(r#"{"level":"info","event":"turn_finished","conversation":"telegram:41""#), "{line}");
        assert!(!line.contains('\n'));
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["id"], "7");
        assert_eq!(parsed["platform"], "Telegram");
        assert_eq!((parsed["duration_ms"].as_i64(), parsed["input_tokens"].as_u64()), (Some(1234), Some(10)));
        assert_eq!((parsed["output_tokens"].as_u64(), parsed["sent"].as_i64()), (Some(5), Some(2)));
    }

    #[test]
    fn errors_with_quotes_and_newlines_stay_on_one_valid_line() {
        let line = LogLine::error("internal").reason(&"bad \"input\"\nsecond line").render(&Redactor::default());
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["level"], "error");
        assert_eq!(parsed["error"], "bad \"input\"\nsecond line");
        assert_eq!(line.lines().count(), 1);
    }

    #[test]
    fn no_secret_and_no_key_shape_survives_rendering() {
        let redactor = Redactor::new([("TELEGRAM_BOT_TOKEN", "4242:test-token", Some("https://api.telegram.org"))]);
        let line = LogLine::warn("send_failed")
            .reason(&"Telegram: fetch https://api.telegram.org/bot4242:test-token/sendMessage failed")
            .field("detail", serde_json::json!({"header": "Bearer abcdefghijklmnop"}))
            .render(&redactor);
        assert!(!line.contains("4242:test-token") && !line.contains("abcdefghijklmnop"), "{line}");
        assert!(line.contains("bot[redacted]/sendMessage"), "{line}");
    }

    #[test]
    fn a_field_set_twice_keeps_its_last_value() {
        let line = LogLine::info("x").field("n", 1).field("n", 2).render(&Redactor::default());
        assert_eq!(line, r#"{"level":"info","event":"x","n":2}"#);
    }
}
