//! The file tools' calls: `file_list`, `file_read`, `file_write` and
//! `file_edit`, on the workspace of the worker's own conversation. What the
//! model writes is redacted of secrets like any text leaving the Worker, and
//! what it reads is redacted like an attachment read.

use worker::Env;

use crate::runtime::config::redactor;
use crate::workspace::arguments::{FileEditArguments, FileReadArguments, FileWriteArguments};
use crate::workspace::rules::{as_text, edit as edited, listing, read_lines, writable, WorkspacePath};
use crate::workspace::store::Workspace;

fn open(env: &Env, conversation: &str) -> Result<Workspace, String> {
    Workspace::open(env, conversation).map_err(|error| format!("the workspace cannot be opened now: {error}"))
}

/// `file_list`: every file, the attachments marked read-only.
pub async fn list(env: &Env, conversation: &str) -> Result<String, String> {
    let workspace = open(env, conversation)?;
    Ok(listing(&workspace.list().await?, &workspace.quotas()))
}

/// `file_read`: a file's lines, or a range of them.
pub async fn read(env: &Env, conversation: &str, arguments: &FileReadArguments) -> Result<String, String> {
    let path = WorkspacePath::parse(arguments.path.trim())?;
    let bytes = open(env, conversation)?.read(&path).await?;
    let text = read_lines(&path, as_text(&path, &bytes)?, arguments.from, arguments.to)?;
    Ok(redactor().redact(&text).into_owned())
}

/// `file_write`: a file written whole.
pub async fn write(env: &Env, conversation: &str, arguments: &FileWriteArguments) -> Result<String, String> {
    let path = WorkspacePath::parse(arguments.path.trim())?;
    let content = redactor().redact(&arguments.content).into_owned();
    open(env, conversation)?.write(&path, content.as_bytes()).await?;
    Ok(format!("wrote {path} ({} lines, {} bytes)", content.lines().count(), content.len()))
}

/// `file_edit`: one passage replaced, if it occurs exactly once.
pub async fn edit(env: &Env, conversation: &str, arguments: &FileEditArguments) -> Result<String, String> {
    let path = WorkspacePath::parse(arguments.path.trim())?;
    let workspace = open(env, conversation)?;
    // Said before the passage is looked for: the answer does not depend on it.
    writable(&path)?;
    let bytes = workspace.read(&path).await?;
    let new = redactor().redact(&arguments.new).into_owned();
    let text = edited(&path, as_text(&path, &bytes)?, &arguments.old, &new)?;
    workspace.write(&path, text.as_bytes()).await?;
    Ok(format!("edited {path}: replaced {} lines with {}", arguments.old.lines().count(), new.lines().count()))
}
