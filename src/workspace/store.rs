//! A conversation's workspace in R2: its own files under
//! [`key_prefix`](crate::workspace::rules::key_prefix) in the `FILES` bucket,
//! and the conversation's attachments (the files room: rows in D1, bytes in
//! R2) beside them, read-only, under `attachments/`. Every call is by the
//! conversation the workspace was opened for: no path reaches another's.

use worker::{Bucket, D1Database, Env, HttpMetadata};

use crate::files::rules::{sniff, StoredFile, KEEP_DAYS};
use crate::files::store::BUCKET_BINDING;
use crate::log_line::LogLine;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::log::Emit;
use crate::workspace::rules::{
    attachment_paths, clash, is_expired, key_prefix, object_key, too_large_for_snapshot, writable, Entry, Quotas,
    Usage, WorkspacePath, KEY_ROOT,
};

/// The most attachments a workspace shows (the newest).
const ATTACHMENTS_SHOWN: u32 = 200;
/// R2 deletes at most this many keys in one call.
const DELETE_BATCH: usize = 1000;
/// Pages of a listing the expiry sweep reads per tick (1,000 keys a page).
const EXPIRY_PAGES_PER_TICK: usize = 10;

/// One conversation's workspace.
pub struct Workspace {
    env: Env,
    bucket: Bucket,
    db: D1Database,
    conversation: String,
    quotas: Quotas,
}

/// A file of the workspace's own, as R2 lists it.
struct Own {
    path: String,
    bytes: u64,
    modified: i64,
}

impl Workspace {
    /// The workspace of `conversation`, held to the configured quotas.
    pub fn open(env: &Env, conversation: &str) -> worker::Result<Workspace> {
        Ok(Workspace {
            env: env.clone(),
            bucket: env.bucket(BUCKET_BINDING)?,
            db: env.d1(DATABASE_BINDING)?,
            conversation: conversation.to_string(),
            quotas: crate::runtime::config::load(env).workspace_quotas,
        })
    }

    /// The quotas it is held to.
    pub fn quotas(&self) -> Quotas {
        self.quotas
    }

    /// Every file: the attachments (read-only) first, then its own, by path.
    pub async fn list(&self) -> Result<Vec<Entry>, String> {
        let mut entries: Vec<Entry> = self
            .attachments()
            .await?
            .into_iter()
            .map(|(path, file)| Entry {
                path: path.to_string(),
                bytes: file.size,
                read_only: true,
                modified: file.created_at,
            })
            .collect();
        let own = self.own().await?;
        entries.extend(own.into_iter().map(|own| Entry {
            path: own.path,
            bytes: own.bytes,
            read_only: false,
            modified: own.modified,
        }));
        Ok(entries)
    }

    /// A file's bytes (an attachment's too).
    pub async fn read(&self, path: &WorkspacePath) -> Result<Vec<u8>, String> {
        if path.is_attachment() {
            let attachments = self.attachments().await?;
            let Some((_, file)) = attachments.iter().find(|(known, _)| known == path) else {
                return Err(format!("there is no attachment {path}; file_list shows the files"));
            };
            return crate::files::store::bytes(&self.env, &self.conversation, file)
                .await
                .ok_or_else(|| format!("the bytes of {path} are gone (kept {KEEP_DAYS} days)"));
        }
        let object = self
            .bucket
            .get(object_key(&self.conversation, path))
            .execute()
            .await
            .map_err(|error| format!("the workspace cannot be read now: {error}"))?
            .ok_or_else(|| format!("there is no file {path}; file_list shows the files"))?;
        let body = object.body().ok_or_else(|| format!("{path} has no content"))?;
        body.bytes().await.map_err(|error| format!("{path} cannot be read now: {error}"))
    }

    /// Writes a file whole, if the quotas allow; never under `attachments/`.
    pub async fn write(&self, path: &WorkspacePath, bytes: &[u8]) -> Result<(), String> {
        writable(path)?;
        let own = self.own().await?;
        let usage = Usage { files: own.len() as u64, bytes: own.iter().map(|own| own.bytes).sum() };
        let existing = own.iter().find(|own| own.path == path.as_str()).map(|own| own.bytes);
        clash(path, own.iter().map(|own| own.path.as_str()))?;
        self.quotas.admit(usage, existing, bytes.len() as u64)?;
        let name = path.as_str().rsplit('/').next().unwrap_or_default();
        let metadata = HttpMetadata { content_type: Some(sniff(bytes, name).content_type), ..HttpMetadata::default() };
        self.bucket
            .put(object_key(&self.conversation, path), bytes.to_vec())
            .http_metadata(metadata)
            .execute()
            .await
            .map_err(|error| format!("{path} was not written: {error}"))?;
        Ok(())
    }

    /// Every file with its bytes and whether it is read-only, for a run that
    /// takes the workspace along; refused when it holds more than `max_bytes`.
    pub async fn snapshot(&self, max_bytes: u64) -> Result<Vec<(String, Vec<u8>, bool)>, String> {
        let entries = self.list().await?;
        let total: u64 = entries.iter().map(|entry| entry.bytes).sum();
        if total > max_bytes {
            return Err(too_large_for_snapshot(total, max_bytes));
        }
        let mut files = Vec::with_capacity(entries.len());
        for entry in entries {
            let path = WorkspacePath::parse(&entry.path)?;
            let bytes = self.read(&path).await?;
            files.push((entry.path, bytes, entry.read_only));
        }
        Ok(files)
    }

    /// Deletes the workspace's own files (the attachments are the files
    /// room's); a failure is logged, and the expiry sweep takes what is left.
    pub async fn remove_all(&self) {
        let keys = match self.own().await {
            Ok(own) => {
                let prefix = key_prefix(&self.conversation);
                own.into_iter().map(|own| format!("{prefix}{}", own.path)).collect::<Vec<_>>()
            }
            Err(error) => {
                LogLine::warn("workspace_not_removed").conversation(&self.conversation).reason(&error).emit();
                return;
            }
        };
        for batch in keys.chunks(DELETE_BATCH) {
            if let Err(error) = self.bucket.delete_multiple(batch.to_vec()).await {
                LogLine::warn("workspace_not_removed").conversation(&self.conversation).reason(&error).emit();
            }
        }
    }

    /// The workspace's own files, by path.
    async fn own(&self) -> Result<Vec<Own>, String> {
        let prefix = key_prefix(&self.conversation);
        let mut own = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut listing = self.bucket.list().prefix(prefix.clone());
            if let Some(cursor) = cursor.take() {
                listing = listing.cursor(cursor);
            }
            let page =
                listing.execute().await.map_err(|error| format!("the workspace cannot be listed now: {error}"))?;
            for object in page.objects() {
                let key = object.key();
                let Some(path) = key.strip_prefix(&prefix) else { continue };
                own.push(Own {
                    path: path.to_string(),
                    bytes: object.size(),
                    modified: object.uploaded().as_millis() as i64,
                });
            }
            match (page.truncated(), page.cursor()) {
                (true, Some(next)) => cursor = Some(next),
                _ => break,
            }
        }
        own.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(own)
    }

    /// The conversation's attachments with the paths they appear under
    /// (oldest first, so an older file keeps its plain name).
    async fn attachments(&self) -> Result<Vec<(WorkspacePath, StoredFile)>, String> {
        let mut files = crate::files::store::list(&self.db, &self.conversation, ATTACHMENTS_SHOWN)
            .await
            .map_err(|error| format!("the attachments cannot be listed now: {error}"))?;
        files.reverse();
        let names: Vec<String> = files.iter().map(|file| file.name.clone()).collect();
        Ok(attachment_paths(&names).into_iter().zip(files).collect())
    }
}

/// Deletes workspace files not written for [`KEEP_DAYS`] (the files' keeping
/// time), at most [`EXPIRY_PAGES_PER_TICK`] pages of the listing a tick.
/// Returns how many went.
pub async fn expire(env: &Env, now_ms: i64) -> worker::Result<usize> {
    let bucket = env.bucket(BUCKET_BINDING)?;
    let mut expired: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..EXPIRY_PAGES_PER_TICK {
        let mut listing = bucket.list().prefix(KEY_ROOT);
        if let Some(cursor) = cursor.take() {
            listing = listing.cursor(cursor);
        }
        let page = listing.execute().await?;
        expired.extend(
            page.objects()
                .into_iter()
                .filter(|object| is_expired(object.uploaded().as_millis() as i64, now_ms, KEEP_DAYS))
                .map(|object| object.key()),
        );
        match (page.truncated(), page.cursor()) {
            (true, Some(next)) => cursor = Some(next),
            _ => break,
        }
    }
    for batch in expired.chunks(DELETE_BATCH) {
        bucket.delete_multiple(batch.to_vec()).await?;
    }
    Ok(expired.len())
}
