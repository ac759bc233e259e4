//! The file tools as types, shared by branches and workers:
//! `attachment_read`, `attachment_recall` and `send_file`, with their
//! documented arguments. Their calls keep to the conversation's own files.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::llm::tool::{NoArguments, Tool};

/// `attachment_read`: a file of this conversation, as text.
pub struct AttachmentRead;

impl Tool for AttachmentRead {
    const NAME: &'static str = "attachment_read";
    type Arguments = AttachmentReadArguments;
}

/// `attachment_read`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AttachmentReadArguments {
    /// The file's id (f and 16 hex digits).
    pub id: String,
}

/// `attachment_recall`: the files of this conversation.
pub struct AttachmentRecall;

impl Tool for AttachmentRecall {
    const NAME: &'static str = "attachment_recall";
    type Arguments = NoArguments;
}

/// `send_file`: send the person a file.
pub struct SendFile;

impl Tool for SendFile {
    const NAME: &'static str = "send_file";
    type Arguments = SendFileArguments;
}

/// `send_file`'s arguments: a file written (`name` and `text`), fetched
/// (`url`) or sent again (`id`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct SendFileArguments {
    /// The file's name, with its extension (report.csv, notes.md).
    pub name: Option<String>,
    /// The file's content, for a file you wrote.
    pub text: Option<String>,
    /// Or: the id of a file of this conversation, to send it again.
    pub id: Option<String>,
    /// Or: an http(s) URL to fetch the file from (an image you found, a CSV to pass on).
    pub url: Option<String>,
}
