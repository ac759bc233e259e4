//! The workspace's rules: what a path may be (one parser, [`WorkspacePath`]),
//! where its files live in R2, the quotas, how `file_read` cuts a file into
//! lines and how `file_edit` replaces a passage. Every refusal is a sentence
//! the model can act on.

use std::fmt;

use serde::Serialize;

/// The longest path, in bytes.
pub const PATH_LIMIT_BYTES: usize = 200;
/// The most segments a path may have (`a/b/c` has three).
pub const PATH_LIMIT_DEPTH: usize = 8;
/// The read-only folder the conversation's attachments appear in.
pub const ATTACHMENTS: &str = "attachments";
/// The most text `file_read` hands a model at once (as other tool output).
pub const READ_LIMIT_CHARS: usize = 50_000;
/// Default quotas, per conversation: files, bytes in all, bytes per file.
pub const DEFAULT_MAX_FILES: u32 = 200;
pub const DEFAULT_MAX_BYTES: u64 = 20 * 1024 * 1024;
pub const DEFAULT_MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// Where every conversation's workspace lives in the bucket. The files' own
/// keys start with a conversation key, which always holds a `:`, so no file's
/// key starts with this.
pub const KEY_ROOT: &str = "workspace/";

/// A path in the workspace, checked: relative, `/`-separated, each segment
/// non-empty and not `.` or `..`, no backslash, no control or invisible
/// characters, at most [`PATH_LIMIT_BYTES`] and [`PATH_LIMIT_DEPTH`] deep.
/// Nothing is normalised: a path that would need it is refused.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// Reads a path the model (or a sandbox) gave, or says what is wrong with it.
    pub fn parse(path: &str) -> Result<WorkspacePath, String> {
        let refuse = |why: &str| Err(format!("the path {path:?} is refused: {why}"));
        if path.is_empty() {
            return Err("the path is empty: give a file's path, like notes.md or data/out.csv".into());
        }
        if path.len() > PATH_LIMIT_BYTES {
            return refuse(&format!("it is {} bytes long, at most {PATH_LIMIT_BYTES} are allowed", path.len()));
        }
        if path.starts_with('/') {
            return refuse("it is absolute; paths are relative to the workspace (write notes.md, not /notes.md)");
        }
        if path.contains('\\') {
            return refuse("it holds a backslash; separate folders with /");
        }
        if let Some(character) = path.chars().find(|&character| is_odd(character)) {
            return refuse(&format!(
                "it holds the character U+{:04X} (a control, invisible or direction-changing character); \
                 use plain letters, digits, spaces and punctuation",
                character as u32
            ));
        }
        let segments: Vec<&str> = path.split('/').collect();
        if segments.len() > PATH_LIMIT_DEPTH {
            return refuse(&format!("it is {} folders deep, at most {PATH_LIMIT_DEPTH} are allowed", segments.len()));
        }
        for segment in &segments {
            match *segment {
                "" => return refuse("it has an empty segment (a leading, doubled or trailing /)"),
                "." | ".." => return refuse("`.` and `..` are not allowed; name the file from the workspace's top"),
                _ if segment.starts_with(' ') || segment.ends_with(' ') => {
                    return refuse("a segment starts or ends with a space")
                }
                _ => {}
            }
        }
        Ok(WorkspacePath(path.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it names one of the conversation's attachments (read-only).
    /// The folder's name is compared without case, so `Attachments/x` cannot
    /// pass for a writable twin.
    pub fn is_attachment(&self) -> bool {
        self.0.split('/').next().is_some_and(|first| first.eq_ignore_ascii_case(ATTACHMENTS))
    }

    /// The attachment's name, for a path under `attachments/`.
    pub fn attachment_name(&self) -> Option<&str> {
        self.is_attachment().then(|| self.0.split_once('/').map(|(_, name)| name)).flatten()
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// Whether the model (or a sandbox) may write `path`: not under `attachments/`.
pub fn writable(path: &WorkspacePath) -> Result<(), String> {
    match path.attachment_name() {
        Some(name) => Err(format!(
            "{ATTACHMENTS}/ is read-only (the conversation's attachments); write a copy elsewhere, like data/{name}"
        )),
        None if path.is_attachment() => Err(format!("{ATTACHMENTS}/ is read-only (the conversation's attachments)")),
        None => Ok(()),
    }
}

/// A character no path may hold: controls, line and paragraph separators,
/// any whitespace but the plain space, direction overrides and isolates,
/// zero-width and other invisible formatting characters, non-characters.
fn is_odd(character: char) -> bool {
    let code = character as u32;
    character.is_control()
        || (character.is_whitespace() && character != ' ')
        || matches!(code,
            0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
            | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB | 0xFDD0..=0xFDEF | 0xE0000..=0xE0FFF)
        || code & 0xFFFE == 0xFFFE
}

/// The bucket prefix of a conversation's workspace: [`KEY_ROOT`], then the
/// conversation key with `%` and `/` escaped (so it is one segment, and
/// two conversations never share a prefix), then `/`.
pub fn key_prefix(conversation: &str) -> String {
    let escaped = conversation.replace('%', "%25").replace('/', "%2F");
    format!("{KEY_ROOT}{escaped}/")
}

/// Where a workspace file lives in the bucket.
pub fn object_key(conversation: &str, path: &WorkspacePath) -> String {
    format!("{}{}", key_prefix(conversation), path.as_str())
}

/// One file of the workspace, as `list` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub path: String,
    pub bytes: u64,
    /// An attachment: it can be read, not written.
    pub read_only: bool,
    /// When it was last written (ms since the epoch).
    pub modified: i64,
}

/// How much one conversation's workspace may hold (the conversation's
/// attachments do not count: they are held to the files' own caps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// `WORKSPACE_MAX_FILES`.
    pub files: u32,
    /// `WORKSPACE_MAX_BYTES`.
    pub bytes: u64,
    /// `WORKSPACE_MAX_FILE_BYTES`.
    pub file_bytes: u64,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas { files: DEFAULT_MAX_FILES, bytes: DEFAULT_MAX_BYTES, file_bytes: DEFAULT_MAX_FILE_BYTES }
    }
}

/// What the workspace holds now (its own files, not the attachments).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub files: u64,
    pub bytes: u64,
}

impl Quotas {
    /// Whether `size` bytes may be written to a path that now holds
    /// `existing` bytes (None: a new file).
    pub fn admit(&self, usage: Usage, existing: Option<u64>, size: u64) -> Result<(), String> {
        if size > self.file_bytes {
            return Err(format!(
                "the file would be {}, more than the {} a workspace file may hold",
                human(size),
                human(self.file_bytes)
            ));
        }
        let files = usage.files + u64::from(existing.is_none());
        if files > u64::from(self.files) {
            return Err(format!(
                "the workspace holds {} files, its limit; overwrite or edit one instead of adding another",
                self.files
            ));
        }
        let bytes = usage.bytes - existing.unwrap_or(0).min(usage.bytes) + size;
        if bytes > self.bytes {
            return Err(format!(
                "the workspace would hold {}, more than its {} (it holds {} now)",
                human(bytes),
                human(self.bytes),
                human(usage.bytes)
            ));
        }
        Ok(())
    }
}

/// Whether writing `path` would make a file where a folder is, or a folder
/// where a file is (`a` and `a/b` cannot both be files).
pub fn clash<'a>(path: &WorkspacePath, existing: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    let path = path.as_str();
    for other in existing {
        if other.starts_with(path) && other.as_bytes().get(path.len()) == Some(&b'/') {
            return Err(format!("{path} is a folder (it holds {other}); choose another name"));
        }
        if path.starts_with(other) && path.as_bytes().get(other.len()) == Some(&b'/') {
            return Err(format!("{other} is a file, so it cannot hold {path}; choose another name"));
        }
    }
    Ok(())
}

/// A size for people: `512 B`, `3.4 KB`, `1.2 MB`.
pub fn human(bytes: u64) -> String {
    match bytes {
        0..=1023 => format!("{bytes} B"),
        1024..=1_048_575 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// A file's bytes as text for `file_read` and `file_edit`, or why they are not.
pub fn as_text<'a>(path: &WorkspacePath, bytes: &'a [u8]) -> Result<&'a str, String> {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(text),
        _ => Err(format!("{path} is not text ({}); it cannot be read or edited as lines", human(bytes.len() as u64))),
    }
}

/// Lines `from` to `to` (1-based, both included; None: the first, the last)
/// of `text`, under a heading, cut at [`READ_LIMIT_CHARS`] with a note that
/// says where to read on.
pub fn read_lines(path: &WorkspacePath, text: &str, from: Option<u64>, to: Option<u64>) -> Result<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len() as u64;
    if total == 0 {
        return Ok(format!("{path} is empty"));
    }
    let first = from.unwrap_or(1);
    let last = to.unwrap_or(total).min(total);
    if first == 0 {
        return Err("lines count from 1: give `from` 1 or more".into());
    }
    if first > total {
        return Err(format!("{path} has {total} lines; `from` {first} is past its end"));
    }
    if last < first {
        return Err(format!("`to` ({last}) is before `from` ({first})"));
    }
    let mut out = String::new();
    let mut chars = 0;
    for (index, line) in lines[(first - 1) as usize..last as usize].iter().enumerate() {
        let length = line.chars().count();
        if chars + length > READ_LIMIT_CHARS {
            let number = first + index as u64;
            let kept: String = line.chars().take(READ_LIMIT_CHARS - chars).collect();
            out.push_str(&kept);
            out.push_str(&format!(
                "\n[cut at {READ_LIMIT_CHARS} characters, in line {number}: read on with from={number}]"
            ));
            return Ok(format!("{path} (lines {first}-{last} of {total}):\n{out}"));
        }
        chars += length;
        out.push_str(line);
    }
    Ok(format!("{path} (lines {first}-{last} of {total}):\n{out}"))
}

/// `text` with the passage `old` replaced by `new`: `old` must occur exactly
/// once (else the model is told it was not found, or how often it occurs).
pub fn edit(path: &WorkspacePath, text: &str, old: &str, new: &str) -> Result<String, String> {
    if old.is_empty() {
        return Err("`old` is empty: give the exact passage to replace".into());
    }
    match text.matches(old).count() {
        0 => Err(format!(
            "the passage was not found in {path}; read the file and copy the passage exactly, spaces and line breaks too"
        )),
        1 => Ok(text.replacen(old, new, 1)),
        count => Err(format!(
            "the passage occurs {count} times in {path}; give a longer passage that occurs once"
        )),
    }
}

/// The listing `file_list` shows: one line per file, read-only ones marked.
pub fn listing(entries: &[Entry], quotas: &Quotas) -> String {
    if entries.is_empty() {
        return "the workspace is empty".into();
    }
    let own: Vec<&Entry> = entries.iter().filter(|entry| !entry.read_only).collect();
    let used: u64 = own.iter().map(|entry| entry.bytes).sum();
    let mut out = format!(
        "{} file(s); the workspace's own use {} of {} files and {} of {}\n",
        entries.len(),
        own.len(),
        quotas.files,
        human(used),
        human(quotas.bytes)
    );
    for entry in entries {
        let marker = if entry.read_only { ", read-only" } else { "" };
        out.push_str(&format!(
            "{} ({}, {}{marker})\n",
            entry.path,
            human(entry.bytes),
            crate::time::format_utc(entry.modified)
        ));
    }
    out
}

/// The paths the conversation's attachments appear under, in the order of
/// `names` (oldest first): each name made a valid segment (odd characters and
/// separators become `_`) and unique (`report.csv`, `report (2).csv`).
pub fn attachment_paths(names: &[String]) -> Vec<WorkspacePath> {
    let mut taken: Vec<String> = Vec::new();
    let mut paths = Vec::new();
    for name in names {
        let base = segment_of(name);
        let mut candidate = base.clone();
        let mut count = 2;
        while taken.iter().any(|known| known.eq_ignore_ascii_case(&candidate))
            || WorkspacePath::parse(&format!("{ATTACHMENTS}/{candidate}")).is_err()
        {
            candidate = numbered(&base, count);
            count += 1;
        }
        taken.push(candidate.clone());
        paths.push(WorkspacePath(format!("{ATTACHMENTS}/{candidate}")));
    }
    paths
}

/// The longest attachment name kept, in bytes (the folder and the number fit beside it).
const ATTACHMENT_NAME_BYTES: usize = 120;

fn segment_of(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|character| if character == '/' || character == '\\' || is_odd(character) { '_' } else { character })
        .collect();
    let mut cleaned = cleaned.trim().to_string();
    while cleaned.len() > ATTACHMENT_NAME_BYTES {
        cleaned.pop();
    }
    match cleaned.trim() {
        "" | "." | ".." => "file".into(),
        trimmed => trimmed.to_string(),
    }
}

fn numbered(name: &str, count: u32) -> String {
    match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => format!("{stem} ({count}).{extension}"),
        _ => format!("{name} ({count})"),
    }
}

/// Whether a workspace file last written at `modified_ms` is past the keeping
/// time (`keep_days`: the files' own, `files::rules::KEEP_DAYS`) at `now_ms`.
pub fn is_expired(modified_ms: i64, now_ms: i64, keep_days: i64) -> bool {
    modified_ms < now_ms - keep_days * 24 * 60 * 60 * 1000
}

/// What `snapshot` refuses when the workspace is larger than a run may take.
pub fn too_large_for_snapshot(total: u64, max_bytes: u64) -> String {
    format!("the workspace holds {}, more than the {} a run may take", human(total), human(max_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> WorkspacePath {
        WorkspacePath::parse(text).unwrap()
    }

    fn refused(text: &str) -> String {
        WorkspacePath::parse(text).expect_err(text)
    }

    #[test]
    fn plain_relative_paths_are_taken_as_written() {
        for good in ["notes.md", "data/out.csv", "a/b/c/d/e/f/g/h.txt", "my report (v2).md", "été/naïve.txt", ".env"]
        {
            assert_eq!(path(good).as_str(), good);
        }
    }

    #[test]
    fn every_path_trick_is_refused_with_a_reason() {
        let tricks: &[(&str, &str)] = &[
            ("", "empty"),
            ("..", "`..`"),
            ("../secrets", "`..`"),
            ("a/../../b", "`..`"),
            ("./a", "`.`"),
            ("/etc/passwd", "absolute"),
            ("a\\b", "backslash"),
            ("..\\b", "backslash"),
            ("a\0b", "U+0000"),
            ("a\nb", "U+000A"),
            ("a\tb", "U+0009"),
            ("evil\u{202e}txt.exe", "U+202E"),
            ("a\u{2066}b", "U+2066"),
            ("zero\u{200b}width", "U+200B"),
            ("joiner\u{200d}", "U+200D"),
            ("bom\u{feff}", "U+FEFF"),
            ("non\u{fffe}char", "U+FFFE"),
            ("non\u{fdd0}char", "U+FDD0"),
            ("no\u{a0}break", "U+00A0"),
            ("line\u{2028}sep", "U+2028"),
            ("a//b", "empty segment"),
            ("a/", "empty segment"),
            (" a", "space"),
            ("a /b", "space"),
        ];
        for (trick, reason) in tricks {
            let why = refused(trick);
            assert!(why.contains(reason), "{trick:?}: {why}");
        }
        let long = "a".repeat(PATH_LIMIT_BYTES + 1);
        assert!(refused(&long).contains("bytes long"));
        assert!(WorkspacePath::parse(&"a".repeat(PATH_LIMIT_BYTES)).is_ok());
        let deep = ["d"; PATH_LIMIT_DEPTH + 1].join("/");
        assert!(refused(&deep).contains("folders deep"));
    }

    #[test]
    fn attachments_are_the_read_only_folder_whatever_its_case() {
        assert!(path("attachments/a.csv").is_attachment());
        assert!(path("Attachments/a.csv").is_attachment());
        assert!(path("ATTACHMENTS").is_attachment());
        assert!(!path("attachments.txt").is_attachment());
        assert!(!path("data/attachments/a.csv").is_attachment());
        assert_eq!(path("attachments/a b.csv").attachment_name(), Some("a b.csv"));
        assert_eq!(path("notes.md").attachment_name(), None);
        assert!(writable(&path("attachments/a.csv")).unwrap_err().contains("read-only"));
        assert!(writable(&path("Attachments")).unwrap_err().contains("read-only"));
        assert!(writable(&path("data/a.csv")).is_ok());
    }

    #[test]
    fn keys_keep_conversations_apart_and_clear_of_the_files_keys() {
        let path = path("out.csv");
        assert_eq!(object_key("telegram:42", &path), "workspace/telegram:42/out.csv");
        // A key with a slash cannot reach into another conversation's prefix.
        assert_ne!(key_prefix("web:a/b"), key_prefix("web:a"));
        assert_eq!(key_prefix("web:a/b"), "workspace/web:a%2Fb/");
        assert_ne!(key_prefix("web:a%2Fb"), key_prefix("web:a/b"));
        // The files' keys start with the conversation key, which holds a ':'.
        let file_key = crate::files::rules::object_key("telegram:42", "f0123", "out.csv");
        assert!(!file_key.starts_with(KEY_ROOT));
    }

    #[test]
    fn quotas_bound_a_file_the_count_and_the_total() {
        let quotas = Quotas { files: 2, bytes: 100, file_bytes: 60 };
        let empty = Usage::default();
        assert!(quotas.admit(empty, None, 60).is_ok());
        assert!(quotas.admit(empty, None, 61).unwrap_err().contains("a workspace file may hold"));
        let full = Usage { files: 2, bytes: 50 };
        assert!(quotas.admit(full, None, 1).unwrap_err().contains("holds 2 files"));
        assert!(quotas.admit(full, Some(10), 20).is_ok(), "overwriting adds no file");
        let heavy = Usage { files: 1, bytes: 90 };
        assert!(quotas.admit(heavy, None, 11).unwrap_err().contains("more than its 100 B"));
        assert!(quotas.admit(heavy, Some(50), 60).is_ok(), "the old bytes go");
        let defaults = Quotas::default();
        assert_eq!((defaults.files, defaults.bytes, defaults.file_bytes), (200, 20 << 20, 5 << 20));
    }

    #[test]
    fn a_file_and_a_folder_cannot_share_a_name() {
        assert!(clash(&path("a/b"), ["a"]).unwrap_err().contains("a is a file"));
        assert!(clash(&path("a"), ["a/b"]).unwrap_err().contains("a is a folder"));
        assert!(clash(&path("a"), ["ab", "a"]).is_ok());
        assert!(clash(&path("ab/c"), ["a"]).is_ok());
    }

    #[test]
    fn reads_take_line_ranges_and_cut_long_output() {
        let path = path("n.txt");
        let text = "one\ntwo\nthree\nfour\n";
        assert_eq!(read_lines(&path, text, None, None).unwrap(), "n.txt (lines 1-4 of 4):\none\ntwo\nthree\nfour\n");
        assert_eq!(read_lines(&path, text, Some(2), Some(3)).unwrap(), "n.txt (lines 2-3 of 4):\ntwo\nthree\n");
        assert_eq!(read_lines(&path, text, Some(4), Some(99)).unwrap(), "n.txt (lines 4-4 of 4):\nfour\n");
        assert!(read_lines(&path, text, Some(0), None).unwrap_err().contains("count from 1"));
        assert!(read_lines(&path, text, Some(5), None).unwrap_err().contains("past its end"));
        assert!(read_lines(&path, text, Some(3), Some(2)).unwrap_err().contains("before"));
        assert_eq!(read_lines(&path, "", None, None).unwrap(), "n.txt is empty");
        let long = format!("{}\n{}\n", "x".repeat(30_000), "y".repeat(30_000));
        let read = read_lines(&path, &long, None, None).unwrap();
        assert!(
            read.ends_with("[cut at 50000 characters, in line 2: read on with from=2]"),
            "{}",
            &read[read.len() - 80..]
        );
        let body = read.split_once('\n').unwrap().1;
        assert_eq!(
            body.matches('x').count() + body.matches('y').count(),
            READ_LIMIT_CHARS - 1,
            "the newline counts too"
        );
    }

    #[test]
    fn a_file_is_kept_as_long_as_the_files_are() {
        let day = 24 * 60 * 60 * 1000;
        let now = 100 * day;
        assert!(!is_expired(now - 30 * day, now, 30), "thirty days to the millisecond: kept");
        assert!(is_expired(now - 30 * day - 1, now, 30));
        assert!(!is_expired(now - day, now, 30));
        assert!(is_expired(now - 2 * day, now, 1));
    }

    #[test]
    fn text_is_utf8_without_nul() {
        let path = path("b.bin");
        assert_eq!(as_text(&path, b"hi").unwrap(), "hi");
        assert!(as_text(&path, &[0xff, 0xfe]).unwrap_err().contains("not text"));
        assert!(as_text(&path, b"a\0b").is_err());
    }

    #[test]
    fn an_edit_replaces_a_passage_found_exactly_once() {
        let path = path("n.md");
        assert_eq!(edit(&path, "total: 1\nsum: 2\n", "sum: 2", "sum: 3").unwrap(), "total: 1\nsum: 3\n");
        assert!(edit(&path, "abc", "xyz", "q").unwrap_err().contains("not found"));
        assert!(edit(&path, "a = 1\na = 1\n", "a = 1", "a = 2").unwrap_err().contains("occurs 2 times"));
        assert!(edit(&path, "ab ab ab", "ab", "q").unwrap_err().contains("occurs 3 times"));
        assert_eq!(
            edit(&path, "a = 1\na = 1\n", "a = 1\na", "b = 1\na").unwrap(),
            "b = 1\na = 1\n",
            "a longer passage"
        );
        assert!(edit(&path, "ab", "", "q").unwrap_err().contains("empty"));
    }

    #[test]
    fn the_listing_marks_attachments_read_only() {
        let entries = vec![
            Entry { path: "attachments/sales.csv".into(), bytes: 40, read_only: true, modified: 0 },
            Entry { path: "chart.svg".into(), bytes: 2048, read_only: false, modified: 86_400_000 },
        ];
        let listed = listing(&entries, &Quotas::default());
        assert!(
            listed.starts_with("2 file(s); the workspace's own use 1 of 200 files and 2.0 KB of 20.0 MB"),
            "{listed}"
        );
        assert!(listed.contains("attachments/sales.csv (40 B, 1970-01-01 00:00 UTC, read-only)"), "{listed}");
        assert!(listed.contains("chart.svg (2.0 KB, 1970-01-02 00:00 UTC)\n"), "{listed}");
        assert_eq!(listing(&[], &Quotas::default()), "the workspace is empty");
    }

    #[test]
    fn attachment_names_become_unique_valid_paths() {
        let names: Vec<String> =
            ["sales.csv", "sales.csv", "SALES.csv", "a/b\u{202e}.txt", "..", "", "x".repeat(300).as_str()]
                .iter()
                .map(|name| name.to_string())
                .collect();
        let paths: Vec<String> = attachment_paths(&names).iter().map(|path| path.to_string()).collect();
        assert_eq!(paths[0], "attachments/sales.csv");
        assert_eq!(paths[1], "attachments/sales (2).csv");
        assert_eq!(paths[2], "attachments/SALES (3).csv");
        assert_eq!(paths[3], "attachments/a_b_.txt");
        assert_eq!(paths[4], "attachments/file");
        assert_eq!(paths[5], "attachments/file (2)");
        assert!(paths[6].len() <= PATH_LIMIT_BYTES);
        for path in &paths {
            assert!(WorkspacePath::parse(path).is_ok(), "{path}");
        }
    }
}
