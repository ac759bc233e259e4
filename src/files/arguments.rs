//! The file tools as types, shared by branches and workers:
//! `attachment_read`, `attachment_recall` and `send_file`, with their
//! documented arguments. Their calls keep to the conversation's own files.

use crate::llm::tool::NoArguments;

crate::tool! {
    /// `attachment_read`: a file of this conversation, as text.
    pub AttachmentRead = "attachment_read",
    /// `attachment_read`'s arguments.
    struct AttachmentReadArguments {
        /// The file's id (f and 16 hex digits).
        pub id: String,
    }
}

crate::tool! {
    /// `attachment_recall`: the files of this conversation.
    pub AttachmentRecall = "attachment_recall", NoArguments
}

crate::tool! {
    /// `send_file`: send the person a file.
    pub SendFile = "send_file",
    /// `send_file`'s arguments: a file written (`name` and `text`), fetched
    /// (`url`), in the workspace (`path`) or sent again (`id`).
    #[derive(Default)]
    struct SendFileArguments {
        /// The file's name, with its extension (report.csv, notes.md).
        pub name: Option<String>,
        /// The file's content, for a file you wrote.
        pub text: Option<String>,
        /// Or: the id of a file of this conversation, to send it again.
        pub id: Option<String>,
        /// Or: an http(s) URL to fetch the file from (an image you found, a CSV to pass on).
        pub url: Option<String>,
        /// Or: the path of a file in this conversation's workspace (chart.svg, data/out.csv).
        pub path: Option<String>,
    }
}
