//! What a sandbox run takes and gives, as plain data: its limits, the body the
//! host sends the loaded isolate (the workspace's files), the report the
//! isolate's wrapper sends back (`src/sandbox/wrapper.js`), and the text the
//! model reads, capped at [`OUTPUT_CAP_CHARS`].

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The model reads at most this many characters of a run (as any tool output).
pub const OUTPUT_CAP_CHARS: usize = 50_000;
/// How long a run may take by default (`SANDBOX_WALL_MS`).
pub const DEFAULT_WALL_MS: u64 = 30_000;
/// CPU time a run may use by default (`SANDBOX_CPU_MS`; enforced by Cloudflare).
pub const DEFAULT_CPU_MS: u64 = 10_000;
/// The workspace a run takes along may hold at most this much (`SANDBOX_MAX_INPUT_BYTES`).
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 20 * 1024 * 1024;
/// The longest module a run takes.
pub const CODE_LIMIT_CHARS: usize = 100_000;

/// A run's limits (settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time, enforced by the host: the call is raced against a timer and
    /// the isolate abandoned.
    pub wall_ms: u64,
    /// CPU time, given to the loader (`limits.cpuMs`); Cloudflare enforces it,
    /// the local runtime does not.
    pub cpu_ms: u64,
    /// The most workspace bytes a run takes along.
    pub max_input_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { wall_ms: DEFAULT_WALL_MS, cpu_ms: DEFAULT_CPU_MS, max_input_bytes: DEFAULT_MAX_INPUT_BYTES }
    }
}

impl Limits {
    /// The limits from the settings' numbers, held to sane bounds.
    pub fn new(wall_ms: u64, cpu_ms: u64, max_input_bytes: u64) -> Limits {
        Limits {
            wall_ms: wall_ms.clamp(100, 15 * 60 * 1000),
            cpu_ms: cpu_ms.clamp(10, 5 * 60 * 1000),
            max_input_bytes: max_input_bytes.max(1),
        }
    }
}

/// A file of the workspace as a run sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxFile {
    pub path: String,
    pub bytes: Vec<u8>,
    /// An attachment: the code may read it, not write it.
    pub read_only: bool,
}

/// The body the host sends the isolate; `egress` the run's network token, if it has the network.
pub fn request_body(files: &[SandboxFile], egress: Option<&str>) -> String {
    let files: Vec<Value> = files
        .iter()
        .map(|file| json!({ "path": file.path, "data": STANDARD.encode(&file.bytes), "read_only": file.read_only }))
        .collect();
    json!({ "files": files, "egress": egress }).to_string()
}

/// A console line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleLine {
    pub level: String,
    pub text: String,
}

/// What the code threw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thrown {
    pub name: String,
    pub message: String,
    #[serde(default)]
    pub stack: String,
}

/// A file the code wrote, as the isolate sends it (base64).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct WrittenWire {
    path: String,
    data: String,
}

/// The isolate's report of a run, as its wrapper sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct ReportWire {
    value: Option<String>,
    #[serde(default)]
    logs: Vec<ConsoleLine>,
    #[serde(default)]
    dropped: u64,
    error: Option<Thrown>,
    #[serde(default)]
    loop_limit: bool,
    #[serde(default)]
    written: Vec<WrittenWire>,
}

/// A run's report: what the code returned, logged, threw and wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The returned value as text (JSON for anything but a string); none for `undefined`.
    pub value: Option<String>,
    pub logs: Vec<ConsoleLine>,
    /// Console characters past the cap, counted but not kept.
    pub dropped: u64,
    pub error: Option<Thrown>,
    /// The loop guard stopped the code (`src/sandbox/loop_guard.rs`).
    pub loop_limit: bool,
    /// Files the code wrote, as (path, bytes).
    pub written: Vec<(String, Vec<u8>)>,
}

/// Reads the wrapper's JSON report.
pub fn parse_report(body: &str) -> Result<Report, String> {
    let wire: ReportWire =
        serde_json::from_str(body).map_err(|error| format!("the sandbox's report does not read: {error}"))?;
    let written = wire
        .written
        .into_iter()
        .map(|file| {
            let bytes =
                STANDARD.decode(file.data.as_bytes()).map_err(|_| format!("{} came back garbled", file.path))?;
            Ok((file.path, bytes))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Report {
        value: wire.value,
        logs: wire.logs,
        dropped: wire.dropped,
        error: wire.error,
        loop_limit: wire.loop_limit,
        written,
    })
}

/// What became of each written file: stored, or why not.
pub type Stored = Vec<(String, Result<u64, String>)>;

/// The text the model reads of a run: `error: …` first when the code threw
/// (or the loop guard stopped it), then its console lines, its value and the
/// files it wrote; cut at [`OUTPUT_CAP_CHARS`], saying so.
pub fn format_report(report: &Report, stored: &Stored) -> String {
    let mut out = String::new();
    if let Some(thrown) = &report.error {
        let limit = if report.loop_limit { " (the loop limit: the code ran too long)" } else { "" };
        out.push_str(&format!("error: the code threw {}: {}{limit}\n", thrown.name, thrown.message));
        if !thrown.stack.trim().is_empty() {
            out.push_str(&format!("stack:\n{}\n", thrown.stack.trim_end()));
        }
    } else if report.loop_limit {
        out.push_str("error: the code ran too long: the sandbox stopped a loop at its limit\n");
    }
    if !report.logs.is_empty() || report.dropped > 0 {
        out.push_str("console:\n");
        for line in &report.logs {
            let level = if line.level == "log" { String::new() } else { format!("[{}] ", line.level) };
            out.push_str(&format!("{level}{}\n", line.text));
        }
        if report.dropped > 0 {
            out.push_str(&format!("[console cut: {} more characters not kept]\n", report.dropped));
        }
    }
    match (&report.value, &report.error) {
        (Some(value), _) => out.push_str(&format!("result:\n{value}\n")),
        (None, None) => out.push_str("result: (none: the function returned undefined)\n"),
        (None, Some(_)) => {}
    }
    for (path, outcome) in stored {
        match outcome {
            Ok(bytes) => out.push_str(&format!("wrote {path} ({bytes} bytes) to the workspace\n")),
            Err(why) => out.push_str(&format!("not written: {path}: {why}\n")),
        }
    }
    cap(out.trim_end())
}

/// `text` cut at [`OUTPUT_CAP_CHARS`] characters, saying how much was cut.
pub fn cap(text: &str) -> String {
    let total = text.chars().count();
    if total <= OUTPUT_CAP_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(OUTPUT_CAP_CHARS).collect();
    format!("{kept}\n[output cut at {OUTPUT_CAP_CHARS} characters: {} more]", total - OUTPUT_CAP_CHARS)
}

/// Why a run could not start or finish, as the model reads it.
pub fn host_error(message: &str) -> String {
    let message = message.trim();
    let message = message.strip_prefix("Error: ").unwrap_or(message);
    if let Some(rest) = message.strip_prefix("Failed to start Worker:") {
        return format!("error: the code could not start: {}", rest.trim());
    }
    if message.contains("exceeded") && (message.contains("memory") || message.contains("Memory")) {
        return format!("error: the code ran out of memory and was stopped: {message}");
    }
    if message.contains("CPU") || message.contains("cpu") {
        return format!("error: the code used up its CPU time and was stopped: {message}");
    }
    format!("error: the sandbox failed: {message}")
}

/// The answer when the wall time ran out.
pub fn timed_out(limits: &Limits) -> String {
    format!("error: the code ran past its wall-time limit of {} ms and was stopped", limits.wall_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(value: Option<&str>, error: Option<Thrown>) -> Report {
        Report {
            value: value.map(str::to_string),
            logs: Vec::new(),
            dropped: 0,
            error,
            loop_limit: false,
            written: Vec::new(),
        }
    }

    #[test]
    fn the_request_carries_each_file_in_base64_with_its_mode() {
        let files = [SandboxFile { path: "attachments/a.csv".into(), bytes: b"x,y\n1,2\n".to_vec(), read_only: true }];
        let body: Value = serde_json::from_str(&request_body(&files, None)).unwrap();
        assert_eq!(body["egress"], Value::Null);
        assert_eq!(body["files"][0]["path"], "attachments/a.csv");
        assert_eq!(body["files"][0]["read_only"], true);
        assert_eq!(STANDARD.decode(body["files"][0]["data"].as_str().unwrap()).unwrap(), b"x,y\n1,2\n");
    }

    #[test]
    fn a_report_reads_with_its_files_and_a_garbled_one_is_refused() {
        let body = json!({
            "value": "42", "logs": [{ "level": "warn", "text": "careful" }], "dropped": 3, "error": null,
            "loop_limit": false, "written": [{ "path": "out.txt", "data": STANDARD.encode("hi") }]
        });
        let parsed = parse_report(&body.to_string()).unwrap();
        assert_eq!(parsed.value.as_deref(), Some("42"));
        assert_eq!(parsed.written, vec![("out.txt".to_string(), b"hi".to_vec())]);
        assert_eq!(parsed.dropped, 3);
        assert!(parse_report("not json").unwrap_err().contains("does not read"));
        let bad = json!({ "value": null, "error": null, "written": [{ "path": "x", "data": "%%%" }] });
        assert!(parse_report(&bad.to_string()).unwrap_err().contains("x came back garbled"));
    }

    #[test]
    fn a_value_its_console_and_its_files_are_shown() {
        let mut run = report(Some("{\n  \"total\": 6\n}"), None);
        run.logs = vec![
            ConsoleLine { level: "log".into(), text: "reading".into() },
            ConsoleLine { level: "error".into(), text: "odd row".into() },
        ];
        let stored = vec![("chart.svg".to_string(), Ok(120)), ("big.bin".to_string(), Err("over the quota".into()))];
        let text = format_report(&run, &stored);
        assert_eq!(
            text,
            "console:\nreading\n[error] odd row\nresult:\n{\n  \"total\": 6\n}\n\
             wrote chart.svg (120 bytes) to the workspace\nnot written: big.bin: over the quota"
        );
        assert_eq!(format_report(&report(None, None), &Vec::new()), "result: (none: the function returned undefined)");
    }

    #[test]
    fn a_thrown_error_starts_with_error_and_keeps_its_stack() {
        let thrown = Thrown {
            name: "TypeError".into(),
            message: "x is not a function".into(),
            stack: "at main (code.js:2:3)".into(),
        };
        let text = format_report(&report(None, Some(thrown)), &Vec::new());
        assert!(text.starts_with("error: the code threw TypeError: x is not a function\nstack:\nat main (code.js:2:3)"));
        let mut stopped =
            report(None, Some(Thrown { name: "RangeError".into(), message: "loop".into(), stack: String::new() }));
        stopped.loop_limit = true;
        assert!(format_report(&stopped, &Vec::new()).contains("the loop limit"));
        let mut caught = report(Some("1"), None);
        caught.loop_limit = true;
        assert!(format_report(&caught, &Vec::new()).starts_with("error: the code ran too long"));
    }

    #[test]
    fn output_is_cut_at_the_cap_and_says_so() {
        let mut flood = report(None, None);
        flood.logs = vec![ConsoleLine { level: "log".into(), text: "y".repeat(OUTPUT_CAP_CHARS) }];
        flood.dropped = 10_000_000;
        let text = format_report(&flood, &Vec::new());
        assert!(text.starts_with("console:\nyyy"));
        let (kept, note) = text.rsplit_once('\n').unwrap();
        assert_eq!(kept.chars().count(), OUTPUT_CAP_CHARS);
        assert!(note.starts_with("[output cut at 50000 characters: "), "{note}");
        assert_eq!(cap("short"), "short");
    }

    #[test]
    fn host_errors_say_what_happened() {
        assert_eq!(
            host_error("Error: Failed to start Worker:\nUncaught SyntaxError: missing ) at code.js:1:5"),
            "error: the code could not start: Uncaught SyntaxError: missing ) at code.js:1:5"
        );
        assert!(host_error("Worker exceeded memory limit.").starts_with("error: the code ran out of memory"));
        assert!(host_error("Worker exceeded CPU time limit.").starts_with("error: the code used up its CPU time"));
        assert!(host_error("Network connection lost.").starts_with("error: the sandbox failed"));
        assert!(timed_out(&Limits::default()).contains("30000 ms"));
    }

    #[test]
    fn limits_are_held_to_bounds() {
        assert_eq!(Limits::new(0, 0, 0), Limits { wall_ms: 100, cpu_ms: 10, max_input_bytes: 1 });
        assert_eq!(Limits::new(u64::MAX, u64::MAX, 5).wall_ms, 15 * 60 * 1000);
        assert_eq!(Limits::default().wall_ms, 30_000);
    }
}
