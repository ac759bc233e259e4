//! A skill's rules (pure): its name, its `SKILL.md` front matter, the paths
//! and sizes of its files, the secrets it may not hold, and the lines the
//! prompt lists it by.
//!
//! `SKILL.md` is Anthropic's (and Spacebot's) format: front matter between two
//! `---` lines with a `name` and a one-line `description`, then the
//! instructions in Markdown. The front matter is parsed here by hand: it is two
//! flat `key: value` lines (other keys such as `license` are kept out of the
//! way, not read), and a YAML crate would bring a whole YAML engine into the
//! Worker for them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The file every skill has, at its root.
pub const SKILL_FILE: &str = "SKILL.md";
/// The longest skill name (`[a-z0-9-]{1,64}`, as Anthropic's skills).
pub const MAX_NAME_CHARS: usize = 64;
/// The longest description (one line).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The most files a skill holds, its `SKILL.md` included.
pub const MAX_FILES: usize = 32;
/// The largest file of a skill.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// The most bytes a skill's files hold in all.
pub const MAX_TOTAL_BYTES: usize = 256 * 1024;
/// The longest path of a file inside a skill.
pub const MAX_PATH_CHARS: usize = 160;
/// The most skills one agent has installed.
pub const MAX_SKILLS_PER_AGENT: usize = 50;
/// The newest versions kept of each skill.
pub const MAX_VERSIONS_KEPT: i64 = 20;
/// The most bytes an install's body holds (JSON escapes text; a zip is smaller).
pub const MAX_BODY_BYTES: usize = 2 * MAX_TOTAL_BYTES;
/// The folder of a run's workspace where the enabled skills' files are, read-only.
pub const MOUNT_ROOT: &str = "skills";
/// Why a file a run wrote under [`MOUNT_ROOT`] was not stored.
pub const MOUNT_READ_ONLY: &str = "skills/ is the agent's skills, read-only: write elsewhere";

/// Why a skill is refused. Each says which file, never a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("a skill name is 1 to 64 of a-z, 0-9 and '-': {0:?} is not")]
    BadName(String),
    #[error("an agent id is a-z then up to 31 of a-z, 0-9 and '-': {0:?} is not")]
    BadAgent(String),
    #[error("the skill has no SKILL.md at its root")]
    NoSkillFile,
    #[error("SKILL.md must start with front matter: a '---' line, 'name: …' and 'description: …', then '---'")]
    NoFrontMatter,
    #[error("SKILL.md's front matter has no {0}")]
    MissingField(&'static str),
    #[error("SKILL.md's description must be one line of at most {MAX_DESCRIPTION_CHARS} characters")]
    BadDescription,
    #[error("the skill is named {found:?} in SKILL.md but installed as {expected:?}")]
    NameMismatch { expected: String, found: String },
    #[error("{0:?} is not a file path a skill may hold (relative, no '..', no hidden files, a-z A-Z 0-9 . _ - /)")]
    BadPath(String),
    #[error("the file {path} holds more than {MAX_FILE_BYTES} bytes ({bytes} read), the most a skill's file may hold")]
    FileTooLarge { path: String, bytes: usize },
    #[error("the skill's files hold {0} bytes: at most {MAX_TOTAL_BYTES} in all")]
    TotalTooLarge(usize),
    #[error("the skill has {0} files: at most {MAX_FILES}")]
    TooManyFiles(usize),
    #[error("the file {path} is not UTF-8 text: a skill holds text files only")]
    NotText { path: String },
    #[error("the file {path} holds {found}: secrets do not belong in skills (nothing was stored)")]
    Secret { path: String, found: String },
    #[error("the zip cannot be read: {0}")]
    BadZip(String),
    #[error("not a version number: {0:?}")]
    BadVersion(String),
}

impl SkillError {
    /// A refusal for size (413) rather than shape (400).
    pub fn is_too_large(&self) -> bool {
        matches!(self, SkillError::FileTooLarge { .. } | SkillError::TotalTooLarge(_) | SkillError::TooManyFiles(_))
    }
}

/// The agent a conversation belongs to, whose skills its turns and runs see.
pub use crate::agents::agent_of;

/// A skill's name, checked: `[a-z0-9-]{1,64}`.
pub fn check_name(name: &str) -> Result<&str, SkillError> {
    let fits = !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
    match fits {
        true => Ok(name),
        false => Err(SkillError::BadName(name.chars().take(MAX_NAME_CHARS + 1).collect())),
    }
}

/// An agent id, checked: `[a-z][a-z0-9-]{0,31}` (issue 36's contract).
pub fn check_agent(agent: &str) -> Result<&str, SkillError> {
    match crate::agents::rules::is_agent_id(agent) {
        true => Ok(agent),
        false => Err(SkillError::BadAgent(agent.chars().take(33).collect())),
    }
}

/// A version number of a path segment (1 or more).
pub fn parse_version(text: &str) -> Result<i64, SkillError> {
    text.parse::<i64>().ok().filter(|version| *version >= 1).ok_or_else(|| SkillError::BadVersion(text.into()))
}

/// A file path inside a skill: relative, `/`-separated, no empty, `.` or `..`
/// segment, no hidden file or folder (a leading `.`), only `[A-Za-z0-9._-]` in
/// a segment, at most [`MAX_PATH_CHARS`]. Such a path is safe as an R2 key, a
/// sandbox path and a line of a listing.
pub fn check_path(path: &str) -> Result<&str, SkillError> {
    let segment_fits = |segment: &str| {
        !segment.is_empty()
            && !segment.starts_with('.')
            && segment.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    };
    match path.len() <= MAX_PATH_CHARS && path.split('/').all(segment_fits) {
        true => Ok(path),
        false => Err(SkillError::BadPath(path.chars().take(MAX_PATH_CHARS + 1).collect())),
    }
}

/// What `SKILL.md` says: its front matter's name and description, and the instructions after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    pub name: String,
    pub description: String,
    pub instructions: String,
}

/// A front matter value: trimmed, one pair of matching quotes taken off.
fn unquote(value: &str) -> &str {
    let value = value.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|rest| rest.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

/// Parses `SKILL.md`: `---`, flat `key: value` lines (`name` and
/// `description` read, others passed over), `---`, then the instructions. A
/// folded or multi-line description (`description: >`) is refused: the
/// prompt lists a skill by one line.
pub fn parse_skill_file(text: &str) -> Result<SkillFile, SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(SkillError::NoFrontMatter);
    }
    let (mut name, mut description) = (None, None);
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        let Some((key, value)) = line.split_once(':') else { continue };
        match key.trim() {
            "name" if !line.starts_with(char::is_whitespace) => name = Some(unquote(value).to_string()),
            "description" if !line.starts_with(char::is_whitespace) => description = Some(unquote(value).to_string()),
            _ => {}
        }
    }
    if !closed {
        return Err(SkillError::NoFrontMatter);
    }
    let name = name.filter(|name| !name.is_empty()).ok_or(SkillError::MissingField("name"))?;
    check_name(&name)?;
    let description = description.filter(|text| !text.is_empty()).ok_or(SkillError::MissingField("description"))?;
    if matches!(description.as_str(), ">" | "|" | ">-" | "|-") || description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(SkillError::BadDescription);
    }
    let instructions = lines.collect::<Vec<_>>().join("\n").trim().to_string();
    Ok(SkillFile { name, description, instructions })
}

/// A skill's files as installed: each path's text, sorted by path.
pub type Files = BTreeMap<String, String>;

/// A skill ready to store: its `SKILL.md` read, every file checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub skill: SkillFile,
    pub files: Files,
    pub bytes: usize,
}

/// Checks a skill's files: their count, paths and sizes, a `SKILL.md` with
/// its front matter (naming the skill `expected`, when the install names it),
/// and no secret in any text (`secrets` says what a text holds: the
/// configured secrets' names and key shapes, [`crate::redact::Redactor::found`]).
pub fn check_bundle(
    files: Files,
    expected: Option<&str>,
    secrets: impl Fn(&str) -> Vec<&'static str>,
) -> Result<Bundle, SkillError> {
    if files.len() > MAX_FILES {
        return Err(SkillError::TooManyFiles(files.len()));
    }
    let mut bytes = 0;
    for (path, text) in &files {
        check_path(path)?;
        if text.len() > MAX_FILE_BYTES {
            return Err(SkillError::FileTooLarge { path: path.clone(), bytes: text.len() });
        }
        bytes += text.len();
    }
    if bytes > MAX_TOTAL_BYTES {
        return Err(SkillError::TotalTooLarge(bytes));
    }
    for (path, text) in &files {
        let found = secrets(text);
        if !found.is_empty() {
            return Err(SkillError::Secret { path: path.clone(), found: found.join(", ") });
        }
    }
    let skill = parse_skill_file(files.get(SKILL_FILE).ok_or(SkillError::NoSkillFile)?)?;
    if let Some(expected) = expected.filter(|expected| *expected != skill.name) {
        return Err(SkillError::NameMismatch { expected: expected.into(), found: skill.name });
    }
    Ok(Bundle { skill, files, bytes })
}

/// Files from UTF-8 bytes by path (a zip's entries): a file that is not text is refused.
pub fn text_files(entries: Vec<(String, Vec<u8>)>) -> Result<Files, SkillError> {
    let mut files = Files::new();
    for (path, bytes) in entries {
        let text = String::from_utf8(bytes).map_err(|_| SkillError::NotText { path: path.clone() })?;
        files.insert(path, text);
    }
    Ok(files)
}

/// A zip's folder that holds everything (`my-skill/SKILL.md`, as zipping a
/// folder makes), taken off every path; paths as they are otherwise.
pub fn strip_common_folder(entries: Vec<(String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    let folder = entries.first().and_then(|(path, _)| path.split_once('/')).map(|(folder, _)| format!("{folder}/"));
    match folder {
        Some(folder) if entries.iter().all(|(path, _)| path.starts_with(&folder)) => {
            entries.into_iter().map(|(path, bytes)| (path[folder.len()..].to_string(), bytes)).collect()
        }
        _ => entries,
    }
}

/// A zip's files as (path, bytes), folders left out, read with the `zip`
/// crate. Held to the caps while reading, not after: a count over
/// [`MAX_FILES`] (folders included, twice over) is refused before any entry is
/// read, and each entry is read through a [`Read::take`] one byte past
/// [`MAX_FILE_BYTES`], so a zip bomb's declared sizes cannot make it inflate
/// more than the caps.
pub fn read_zip(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, SkillError> {
    use std::io::Read;
    let bad = |error: zip::result::ZipError| SkillError::BadZip(error.to_string());
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(bad)?;
    if archive.len() > 2 * MAX_FILES {
        return Err(SkillError::TooManyFiles(archive.len()));
    }
    let mut entries = Vec::new();
    let mut total = 0;
    for index in 0..archive.len() {
        let entry = archive.by_index(index).map_err(bad)?;
        let path = entry.name().to_string();
        if entry.is_dir() || is_archiver_litter(&path) {
            continue;
        }
        let mut data = Vec::new();
        entry
            .take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut data)
            .map_err(|error| SkillError::BadZip(error.to_string()))?;
        if data.len() > MAX_FILE_BYTES {
            return Err(SkillError::FileTooLarge { path, bytes: data.len() });
        }
        total += data.len();
        if total > MAX_TOTAL_BYTES {
            return Err(SkillError::TotalTooLarge(total));
        }
        entries.push((path, data));
    }
    Ok(strip_common_folder(entries))
}

/// What macOS's Archive Utility adds to a zip (`__MACOSX/…` resource forks,
/// `.DS_Store`): left out, rather than refusing the zip as hidden files.
fn is_archiver_litter(path: &str) -> bool {
    path.starts_with("__MACOSX/") || path.rsplit('/').next() == Some(".DS_Store")
}

/// A skill as the prompt lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
}

/// What `open_skill` answers: the instructions, then the files the skill has
/// besides SKILL.md and where a worker's `run_code` finds them.
pub fn opened(name: &str, files: &Files) -> Result<String, SkillError> {
    let skill = parse_skill_file(files.get(SKILL_FILE).ok_or(SkillError::NoSkillFile)?)?;
    let mut text = format!("# Skill: {name}\n\n{}\n", skill.instructions);
    let others: Vec<(&String, &String)> = files.iter().filter(|(path, _)| path.as_str() != SKILL_FILE).collect();
    if !others.is_empty() {
        text.push_str(&format!(
            "\n## Files\n\nA worker's `run_code` finds them read-only at `{MOUNT_ROOT}/{name}/<path>` \
             (workspace.read); hand the task to a worker with `spawn_worker` to run them.\n\n"
        ));
        for (path, content) in others {
            text.push_str(&format!("- {path} ({} bytes)\n", content.len()));
        }
    }
    Ok(text)
}

/// The path of a skill's file in a run's workspace.
pub fn mount_path(name: &str, path: &str) -> String {
    format!("{MOUNT_ROOT}/{name}/{path}")
}

/// Whether a path a run wrote is under the skills' mount (never stored back).
pub fn is_mounted(path: &str) -> bool {
    path.strip_prefix(MOUNT_ROOT).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests;
