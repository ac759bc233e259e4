//! Writes [`LogLine`]s to the console, where Workers Logs (wrangler.toml
//! `[observability]`) picks each up as a JSON object: redacted with the
//! configured secrets, at the console level that matches the line's.

use crate::log_line::{Level, LogLine};

use crate::runtime::config;

/// `line.emit()`: renders and writes the line.
pub trait Emit {
    fn emit(self);
}

impl Emit for LogLine {
    fn emit(self) {
        let text = self.render(&config::redactor());
        match self.level {
            Level::Info => worker::console_log!("{text}"),
            Level::Warn => worker::console_warn!("{text}"),
            Level::Error => worker::console_error!("{text}"),
        }
    }
}
