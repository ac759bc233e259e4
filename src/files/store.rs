//! Files that come with messages, kept in R2: downloaded from the platform's
//! own file host, checked by their bytes and against the caps, stored under
//! their conversation and recorded in D1 (`files`). Voice notes are
//! transcribed; images go to a model that sees them, or are described by one.
//! Every read of a file is by its conversation and id: no tool reaches another
//! conversation's files.

use base64::Engine;
use serde_json::{json, Value};
use worker::{D1Database, Env, HttpMetadata, Method};

use crate::budget::rules::day_of;
use crate::budget::usage;
use crate::budget::usage::Spender;
use crate::config::Config;
use crate::files::rules::{
    admit, describe, display_name, file_id, object_key, sniff, transcribed, Kind, Received, Refusal, Sight, StoredFile,
    KEEP_DAYS,
};
use crate::inbound::{Attachment, InboundEvent};
use crate::llm::client::HttpModel;
use crate::llm::routing::parse_chain;
use crate::llm::vision::sees_images;
use crate::llm::{ChatMessage, ChatModel, ChatRequest, Image, Role};
use crate::log_line::LogLine;
use crate::memory::embedder::AI_BINDING;
use crate::ops::Op;
use crate::platforms::messenger::FileBody;
use crate::platforms::messenger::Messenger;
use crate::platforms::outbound::Outbound;
use crate::prompt;
use crate::runtime::config::redactor;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::{number, Metered};
use crate::runtime::http::send_form;
use crate::runtime::log::Emit;

/// The R2 bucket files live in.
pub const BUCKET_BINDING: &str = crate::bindings::FILES.name;
/// How long a transcription may take.
const TRANSCRIBE_TIMEOUT_MS: u64 = 60_000;
/// Images sent with one turn's prompt, at most.
const IMAGES_PER_TURN: usize = 4;

/// What a turn's messages brought with them.
#[derive(Default)]
pub struct TurnFiles {
    /// Per message of the turn, a prompt line per attachment.
    pub notes: Vec<Vec<String>>,
    /// The images for a channel model that sees them.
    pub images: Vec<Image>,
    /// What a person is told was not kept (name: why), once per file.
    pub refused: Vec<String>,
}

/// Keeps every attachment of the turn's `events` (once: a turn run again
/// finds what it kept), turns voice notes into their messages' text, and
/// decides how each image reaches the channel's model.
pub async fn receive(
    config: &Config,
    env: &Env,
    db: &D1Database,
    platform: &Outbound<'_>,
    events: &mut [InboundEvent],
    now_ms: i64,
) -> TurnFiles {
    let sees = parse_chain(&config.channel_model).is_ok_and(|chain| sees_images(&chain[0]));
    let mut files = TurnFiles::default();
    for event in events.iter_mut() {
        let mut notes = Vec::new();
        for attachment in &event.attachments {
            let mut received = keep(env, db, platform, event, attachment, now_ms).await;
            let mut sight = Sight::Blind;
            if let Received::Kept(file) = &mut received {
                match file.kind {
                    Kind::Audio => {
                        if file.text.is_none() {
                            file.text = transcribe(config, env, db, &event.conversation_key, file).await;
                        }
                        if let Some(transcript) = &file.text {
                            event.text = transcribed(transcript, &event.text);
                        }
                    }
                    Kind::Image if sees && files.images.len() < IMAGES_PER_TURN => {
                        if let Some(image) = image(env, &event.conversation_key, file).await {
                            files.images.push(image);
                            sight = Sight::Shown;
                        }
                    }
                    Kind::Image => {
                        if file.text.is_none() {
                            file.text = describe_image(config, env, db, event, file).await;
                        }
                        if file.text.is_some() {
                            sight = Sight::Described;
                        }
                    }
                    _ => {}
                }
            }
            if let Received::Refused { name, why } = &received {
                files.refused.push(format!("{name}: {why}"));
            }
            notes.push(describe(&received, sight));
        }
        files.notes.push(notes);
    }
    files
}

/// The file, from D1 if this conversation kept it already; else downloaded,
/// checked and stored.
async fn keep(
    env: &Env,
    db: &D1Database,
    platform: &Outbound<'_>,
    event: &InboundEvent,
    attachment: &Attachment,
    now_ms: i64,
) -> Received {
    let conversation = &event.conversation_key;
    let id = file_id(conversation, &attachment.platform_file_id);
    let name = display_name(attachment.name.as_deref().unwrap_or(default_name(&attachment.kind)));
    if let Ok(Some(file)) = find(db, conversation, &id).await {
        return Received::Kept(file);
    }
    // A file the platform says is too large is not even downloaded.
    let kept = match admit(attachment.size.unwrap_or(0), 0, 0) {
        Err(why) => Err(why),
        Ok(()) => match platform.download(&event.reply_address, attachment).await {
            Ok(bytes) => keep_bytes(env, db, conversation, &id, &name, &event.message_id, bytes, now_ms).await,
            Err(why) => Err(why),
        },
    };
    match kept {
        Ok(file) => Received::Kept(file),
        Err(why) => {
            LogLine::warn("file_refused").conversation(conversation).id(&id).reason(&why).emit();
            Received::Refused { name, why }
        }
    }
}

/// Keeps a file uploaded to the web chat under `token` (the page's message
/// names it later, and the turn finds it by `file_id(conversation, token)`):
/// typed by its bytes and capped like any other file.
pub async fn store_upload(
    env: &Env,
    db: &D1Database,
    conversation: &str,
    token: &str,
    name: &str,
    bytes: Vec<u8>,
    now_ms: i64,
) -> Result<StoredFile, Refusal> {
    let id = file_id(conversation, token);
    keep_bytes(env, db, conversation, &id, &display_name(name), UPLOADED, bytes, now_ms).await
}

/// Keeps bytes as the conversation's file `id`, if today's caps allow:
/// typed by the bytes, stored in R2, recorded in D1.
#[allow(clippy::too_many_arguments)] // each is a different fact about the file
pub(crate) async fn keep_bytes(
    env: &Env,
    db: &D1Database,
    conversation: &str,
    id: &str,
    name: &str,
    message_id: &str,
    bytes: Vec<u8>,
    now_ms: i64,
) -> Result<StoredFile, Refusal> {
    let day = day_of(now_ms);
    let (count, stored) = today(db, conversation, &day).await.map_err(|_| Refusal::Unreachable)?;
    admit(bytes.len() as u64, stored, count)?;
    let sniffed = sniff(&bytes, name);
    let file = StoredFile {
        id: id.to_string(),
        name: name.to_string(),
        kind: sniffed.kind,
        content_type: sniffed.content_type,
        size: bytes.len() as u64,
        text: None,
        created_at: now_ms,
    };
    match store(env, db, conversation, message_id, &file, bytes, &day).await {
        Ok(()) => Ok(file),
        Err(error) => {
            LogLine::error("file_not_stored").conversation(conversation).id(&id).reason(&error).emit();
            Err(Refusal::Unreachable)
        }
    }
}

/// The message id an upload is recorded with: no message carried it yet.
const UPLOADED: &str = "upload";

/// The name a file gets when the platform sent none.
pub(crate) fn default_name(kind: &str) -> &'static str {
    match kind {
        "photo" => "photo.jpg",
        "voice" => "voice-note.ogg",
        "audio" => "audio",
        _ => "file",
    }
}

async fn store(
    env: &Env,
    db: &D1Database,
    conversation: &str,
    message_id: &str,
    file: &StoredFile,
    bytes: Vec<u8>,
    day: &str,
) -> worker::Result<()> {
    let key = object_key(conversation, &file.id, &file.name);
    let metadata = HttpMetadata { content_type: Some(file.content_type.clone()), ..HttpMetadata::default() };
    env.bucket(BUCKET_BINDING)?.put(&key, bytes).http_metadata(metadata).execute().await?;
    db.prepare(
        "INSERT OR IGNORE INTO files \
         (id, conversation_key, platform_file_id, name, kind, content_type, size, r2_key, message_id, day, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )
    .bind(&[
        file.id.as_str().into(),
        conversation.into(),
        file.id.as_str().into(),
        file.name.as_str().into(),
        file.kind.name().into(),
        file.content_type.as_str().into(),
        number(file.size as i64),
        key.as_str().into(),
        message_id.into(),
        day.into(),
        number(file.created_at),
    ])?
    .run_counted()
    .await?;
    Ok(())
}

/// A row of `files` as D1 gives it.
#[derive(serde::Deserialize)]
struct Row {
    id: String,
    name: String,
    kind: String,
    content_type: String,
    size: f64,
    text: Option<String>,
    created_at: f64,
}

impl Row {
    fn file(self) -> StoredFile {
        let kind = serde_json::from_value(json!(self.kind)).unwrap_or(Kind::Other);
        StoredFile {
            id: self.id,
            name: self.name,
            kind,
            content_type: self.content_type,
            size: self.size as u64,
            text: self.text,
            created_at: self.created_at as i64,
        }
    }
}

const COLUMNS: &str = "id, name, kind, content_type, size, text, created_at";

/// A file of this conversation (never another's).
pub async fn find(db: &D1Database, conversation: &str, id: &str) -> worker::Result<Option<StoredFile>> {
    let row: Option<Row> = db
        .prepare(format!("SELECT {COLUMNS} FROM files WHERE conversation_key = ?1 AND id = ?2"))
        .bind(&[conversation.into(), id.into()])?
        .first_counted()
        .await?;
    Ok(row.map(Row::file))
}

/// The conversation's files, newest first.
pub async fn list(db: &D1Database, conversation: &str, limit: u32) -> worker::Result<Vec<StoredFile>> {
    let rows: Vec<Row> = db
        .prepare(format!("SELECT {COLUMNS} FROM files WHERE conversation_key = ?1 ORDER BY created_at DESC LIMIT ?2"))
        .bind(&[conversation.into(), number(limit as i64)])?
        .all_counted()
        .await?
        .results()?;
    Ok(rows.into_iter().map(Row::file).collect())
}

/// Files and bytes the conversation kept on `day`.
async fn today(db: &D1Database, conversation: &str, day: &str) -> worker::Result<(u64, u64)> {
    #[derive(serde::Deserialize)]
    struct Totals {
        files: f64,
        bytes: f64,
    }
    let totals: Option<Totals> = db
        .prepare("SELECT COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM files WHERE conversation_key = ?1 AND day = ?2")
        .bind(&[conversation.into(), day.into()])?
        .first_counted()
        .await?;
    Ok(totals.map_or((0, 0), |totals| (totals.files as u64, totals.bytes as u64)))
}

/// One of the conversation's files with its bytes, to send (None if it is gone).
/// Its `link` is where the web chat downloads it (signed, for a day).
pub async fn outgoing(config: &Config, env: &Env, conversation: &str, id: &str) -> Option<FileBody> {
    let db = env.d1(DATABASE_BINDING).ok()?;
    let (file, bytes) = download(env, &db, conversation, id).await.ok()??;
    let link = crate::files::download_link::download_link(config, conversation, &file, crate::runtime::http::now_ms());
    Some(FileBody { file, bytes, link })
}

/// A file's bytes from R2 (None if they are gone).
pub(crate) async fn bytes(env: &Env, conversation: &str, file: &StoredFile) -> Option<Vec<u8>> {
    let key = object_key(conversation, &file.id, &file.name);
    let object = env.bucket(BUCKET_BINDING).ok()?.get(key).execute().await.ok()??;
    object.body()?.bytes().await.ok()
}

/// One of the conversation's files with its bytes, for a signed link (None
/// when the conversation has no such file, or its bytes are gone).
pub async fn download(
    env: &Env,
    db: &D1Database,
    conversation: &str,
    id: &str,
) -> worker::Result<Option<(StoredFile, Vec<u8>)>> {
    let Some(file) = find(db, conversation, id).await? else {
        return Ok(None);
    };
    Ok(bytes(env, conversation, &file).await.map(|bytes| (file, bytes)))
}

async fn image(env: &Env, conversation: &str, file: &StoredFile) -> Option<Image> {
    let bytes = bytes(env, conversation, file).await?;
    let base64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    Some(Image { media_type: file.content_type.clone(), base64 })
}

/// Keeps a file's text (a transcript, a description) for the next time it is read.
pub(crate) async fn remember_text(db: &D1Database, conversation: &str, id: &str, text: &str) {
    let statement = db.prepare("UPDATE files SET text = ?1 WHERE conversation_key = ?2 AND id = ?3").bind(&[
        text.into(),
        conversation.into(),
        id.into(),
    ]);
    if let Err(error) = async { statement?.run_counted().await }.await {
        LogLine::warn("file_text_not_kept").conversation(conversation).id(&id).reason(&error).emit();
    }
}

/// `VISION_MODEL`'s description of an image, for a channel model that cannot
/// see it; what it cost is charged to the person who sent it, like a turn.
async fn describe_image(
    config: &Config,
    env: &Env,
    db: &D1Database,
    event: &InboundEvent,
    file: &StoredFile,
) -> Option<String> {
    let conversation = event.conversation_key.as_str();
    let chain = config.vision_model.as_deref()?;
    let image = image(env, conversation, file).await?;
    let model = HttpModel::new(config, env, chain).ok()?;
    let mut question = ChatMessage::new(Role::User, prompt::text("describe_image"));
    question.images.push(image);
    let request = ChatRequest { model: model.model_name().to_string(), messages: vec![question], tools: Vec::new() };
    let answer = model.complete(&request).await;
    let spender = Spender::of(event);
    if let Err(error) = usage::record(env, &spender, "vision", model.spent(), crate::runtime::http::now_ms()).await {
        LogLine::warn("usage_not_recorded").conversation(conversation).field("process", "vision").reason(&error).emit();
    }
    let answer = match answer {
        Ok(answer) => answer.content?,
        Err(error) => {
            LogLine::warn("image_not_described").conversation(conversation).id(&file.id).reason(&error).emit();
            return None;
        }
    };
    let description = redactor().redact(answer.trim()).into_owned();
    remember_text(db, conversation, &file.id, &description).await;
    Some(description)
}

/// A voice note's transcript by `TRANSCRIBE_MODEL` (None when none is set or it failed).
async fn transcribe(
    config: &Config,
    env: &Env,
    db: &D1Database,
    conversation: &str,
    file: &StoredFile,
) -> Option<String> {
    let setting = config.transcribe_model.as_deref()?;
    let bytes = bytes(env, conversation, file).await?;
    let transcript = match setting.split_once('/') {
        Some(("openai", model)) => {
            let url = format!("{}/audio/transcriptions", config.openai_base_url);
            let authorization = format!("Bearer {}", config.openai_api_key.expose());
            let fields = [("model", model)];
            let file_part = ("file", file.name.as_str(), bytes.as_slice());
            let headers = [("authorization", authorization.as_str())];
            match send_form(Op::ModelCall, Method::Post, &url, &headers, &fields, file_part, TRANSCRIBE_TIMEOUT_MS)
                .await
            {
                Ok(answer) if answer.status == 200 => {
                    serde_json::from_slice::<Value>(&answer.body).ok()?["text"].as_str().map(str::to_string)
                }
                Ok(answer) => {
                    let line = LogLine::warn("not_transcribed").conversation(conversation).id(&file.id);
                    line.field("status", answer.status).emit();
                    None
                }
                Err(error) => {
                    LogLine::warn("not_transcribed")
                        .conversation(conversation)
                        .id(&file.id)
                        .reason(&format!("{error:?}"))
                        .emit();
                    None
                }
            }
        }
        Some(("workers-ai", model)) => {
            crate::ops::count(Op::ModelCall);
            let audio = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let ai = env.ai(AI_BINDING).ok()?;
            let answer: Value = ai.run(model, json!({ "audio": audio })).await.ok()?;
            answer["text"].as_str().map(str::to_string)
        }
        _ => None,
    }?;
    let transcript = redactor().redact(transcript.trim()).into_owned();
    remember_text(db, conversation, &file.id, &transcript).await;
    Some(transcript)
}

/// A PDF or office document as Markdown, by Workers AI's document conversion
/// (`env.AI.toMarkdown`, which workers-rs does not wrap, so it is called
/// through the binding's JS object). None where there is no `AI` binding
/// (local runs: `read` says so) or the conversion fails.
pub(crate) async fn convert(env: &Env, conversation: &str, file: &StoredFile) -> Option<String> {
    use wasm_bindgen::JsCast;
    let ai = env.ai(AI_BINDING).ok()?;
    let bytes = bytes(env, conversation, file).await?;
    let to_markdown =
        js_sys::Reflect::get(ai.as_ref(), &"toMarkdown".into()).ok()?.dyn_into::<js_sys::Function>().ok()?;
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()).buffer());
    let blob = worker::web_sys::File::new_with_u8_array_sequence(&parts, &file.name).ok()?;
    let document = js_sys::Object::new();
    js_sys::Reflect::set(&document, &"name".into(), &file.name.as_str().into()).ok()?;
    js_sys::Reflect::set(&document, &"blob".into(), &blob).ok()?;
    crate::ops::count(Op::ModelCall);
    let promise = to_markdown.call1(ai.as_ref(), &js_sys::Array::of1(&document)).ok()?;
    let converted = crate::runtime::settled::settled(&js_sys::Promise::from(promise)).await.ok()?;
    let first = js_sys::Reflect::get(&converted, &0.into()).ok()?;
    let text = js_sys::Reflect::get(&first, &"data".into()).ok()?.as_string()?;
    Some(redactor().redact(&text).into_owned())
}

/// Deletes files kept longer than [`KEEP_DAYS`] (at most a batch per tick):
/// their bytes from R2, then their records. Returns how many went.
pub async fn expire(env: &Env, now_ms: i64) -> worker::Result<usize> {
    #[derive(serde::Deserialize)]
    struct Expired {
        id: String,
        conversation_key: String,
        r2_key: String,
    }
    let db = env.d1(DATABASE_BINDING)?;
    let before = now_ms - KEEP_DAYS * 24 * 60 * 60 * 1000;
    let expired: Vec<Expired> = db
        .prepare("SELECT id, conversation_key, r2_key FROM files WHERE created_at < ?1 ORDER BY created_at LIMIT 100")
        .bind(&[number(before)])?
        .all_counted()
        .await?
        .results()?;
    if expired.is_empty() {
        return Ok(0);
    }
    let bucket = env.bucket(BUCKET_BINDING)?;
    for file in &expired {
        bucket.delete(&file.r2_key).await?;
    }
    let statements = expired
        .iter()
        .map(|file| {
            db.prepare("DELETE FROM files WHERE conversation_key = ?1 AND id = ?2")
                .bind(&[file.conversation_key.as_str().into(), file.id.as_str().into()])
        })
        .collect::<worker::Result<Vec<_>>>()?;
    crate::runtime::d1::batch(&db, statements).await?;
    Ok(expired.len())
}
