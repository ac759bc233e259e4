//! The file tools' calls: `attachment_read`, `attachment_recall` and
//! `send_file`. Every read is by the conversation and a file's id, so no tool
//! reaches another conversation's files.

use sha2::Digest;
use worker::{D1Database, Env};

use super::store::{bytes, convert, find, keep_bytes, list, remember_text};
use crate::config::Config;
use crate::files::arguments::SendFileArguments;
use crate::files::rules::{display_name, file_id, Kind, StoredFile, READ_LIMIT_CHARS};
use crate::llm::tool::given;
use crate::process::envelope::{Envelope, MessageType};
use crate::runtime::config::redactor;

/// The text of one of the conversation's files, for `attachment_read`: text
/// files as they are, a voice note's transcript, an image's description;
/// redacted, and cut at [`READ_LIMIT_CHARS`].
pub async fn read(env: &Env, db: &D1Database, conversation: &str, id: &str) -> String {
    let file = match find(db, conversation, id).await {
        Ok(Some(file)) => file,
        Ok(None) => return format!("error: this conversation has no file {id}"),
        Err(error) => return format!("error: {error}"),
    };
    let text = match (file.kind, &file.text) {
        (_, Some(text)) => text.clone(),
        (Kind::Text, None) => match bytes(env, conversation, &file).await {
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            None => return format!("error: the bytes of {id} are gone"),
        },
        (Kind::Document, None) => match convert(env, conversation, &file).await {
            Some(text) => {
                remember_text(db, conversation, id, &text).await;
                text
            }
            None => {
                return format!(
                "{} is a {} this deployment cannot convert to text (Workers AI's conversion runs only in production)",
                file.name, file.content_type
            )
            }
        },
        _ => return format!("{} ({}) has no text to read", file.name, file.content_type),
    };
    let cut: String = text.chars().take(READ_LIMIT_CHARS).collect();
    let more = if cut.len() < text.len() { "\n[cut: the file goes on]" } else { "" };
    format!("{} ({}):\n{}{more}", file.name, file.content_type, redactor().redact(&cut))
}

/// `send_file`: the file a process sends the conversation, kept like any
/// other (R2, D1, the day's caps) and announced to the channel in the
/// returned envelope; the channel sends it after its next reply. Either a
/// file it wrote (`name` and `text`, redacted like any text leaving the
/// Worker) or one of the conversation's files again (`id`). The same file
/// from the same process keeps the same id, so a retried step sends it once.
pub async fn produce(
    config: &Config,
    env: &Env,
    db: &D1Database,
    conversation: &str,
    process: (&str, &str),
    arguments: &SendFileArguments,
    now_ms: i64,
) -> Result<Envelope, String> {
    let process_id = process.1;
    // A file's text is kept as written (its last newline too); only its presence is trimmed.
    let text = arguments.text.as_deref().filter(|text| !text.trim().is_empty());
    if let Some(url) = given(&arguments.url) {
        return fetched(config, env, db, conversation, process, given(&arguments.name), url, now_ms).await;
    }
    let file = match (given(&arguments.id), text) {
        (Some(id), _) => find(db, conversation, id)
            .await
            .map_err(|error| error.to_string())?
            .ok_or_else(|| format!("this conversation has no file {id}"))?,
        (None, Some(text)) => {
            let name = display_name(given(&arguments.name).unwrap_or("file.txt"));
            let text = redactor().redact(text).into_owned();
            let digest = crate::security::encode_hex(sha2::Sha256::digest(format!("{name}\n{text}").as_bytes()));
            let id = file_id(conversation, &format!("out:{process_id}:{digest}"));
            match find(db, conversation, &id).await.map_err(|error| error.to_string())? {
                Some(file) => file,
                None => keep_bytes(env, db, conversation, &id, &name, "", text.into_bytes(), now_ms)
                    .await
                    .map_err(|why| format!("not sent: {why}"))?,
            }
        }
        (None, None) => {
            return Err("give the file's `name` and `text`, the `path` of a workspace file, or the `id` of a file \
                        of this conversation"
                .into())
        }
    };
    Ok(announce(process, &file, now_ms))
}

/// The envelope that tells the channel a process sent `file`.
fn announce((process_kind, process_id): (&str, &str), file: &StoredFile, now_ms: i64) -> Envelope {
    let body = format!("{} {}", file.id, file.name);
    Envelope::report(process_kind, process_id, &format!("file:{}", file.id), now_ms, MessageType::File, body)
}

/// `send_file` with a `url`: the file is fetched through the fetch guard
/// (what `http_fetch` may reach, nothing private), at most the file cap, and
/// sent as it came (an image it found, a CSV it downloaded).
#[allow(clippy::too_many_arguments)] // the tool's context and its two arguments
async fn fetched(
    config: &Config,
    env: &Env,
    db: &D1Database,
    conversation: &str,
    process: (&str, &str),
    name: Option<&str>,
    url: &str,
    now_ms: i64,
) -> Result<Envelope, String> {
    let limit = crate::files::rules::FILE_LIMIT_BYTES as usize + 1;
    let answer = crate::web_tools::tools::guarded_get(config, url, limit).await?;
    if answer.status != 200 {
        return Err(format!("the fetch answered HTTP {}", answer.status));
    }
    let from_url = url.split(['?', '#']).next().unwrap_or_default().rsplit('/').next().unwrap_or_default();
    produce_bytes(env, db, conversation, process, name.unwrap_or(from_url), answer.body, now_ms).await
}

/// A file a process made (`name`, `bytes`: fetched, or from its workspace),
/// kept like any other and announced; the same bytes from the same process
/// keep the same id, so a retried step sends them once.
pub async fn produce_bytes(
    env: &Env,
    db: &D1Database,
    conversation: &str,
    process: (&str, &str),
    name: &str,
    bytes: Vec<u8>,
    now_ms: i64,
) -> Result<Envelope, String> {
    let name = display_name(name);
    let digest = crate::security::encode_hex(sha2::Sha256::digest(&bytes));
    let id = file_id(conversation, &format!("out:{}:{digest}", process.1));
    let file = match find(db, conversation, &id).await.map_err(|error| error.to_string())? {
        Some(file) => file,
        None => keep_bytes(env, db, conversation, &id, &name, "", bytes, now_ms)
            .await
            .map_err(|why| format!("not sent: {why}"))?,
    };
    Ok(announce(process, &file, now_ms))
}

/// The conversation's files, for `attachment_recall`.
pub async fn recall(db: &D1Database, conversation: &str) -> String {
    match list(db, conversation, 50).await {
        Ok(files) if files.is_empty() => "this conversation has no files".into(),
        Ok(files) => files
            .iter()
            .map(|file| {
                format!(
                    "{} {} ({}, {}, {})\n",
                    file.id,
                    file.name,
                    file.content_type,
                    crate::files::rules::human_size(file.size),
                    crate::time::format_utc(file.created_at)
                )
            })
            .collect(),
        Err(error) => format!("error: {error}"),
    }
}
