//! The workspace's tools as types: `file_list`, `file_read`, `file_write` and
//! `file_edit`, with their documented arguments. Their calls keep to the
//! conversation's own workspace.

use crate::llm::tool::NoArguments;

crate::tool! {
    /// `file_list`: the workspace's files.
    pub FileList = "file_list", NoArguments
}

crate::tool! {
    /// `file_read`: a workspace file's lines.
    pub FileRead = "file_read",
    /// `file_read`'s arguments.
    struct FileReadArguments {
        /// The file's path in the workspace (notes.md, data/out.csv, attachments/sales.csv).
        pub path: String,
        /// The first line to read, counting from 1 (default: the first).
        pub from: Option<u64>,
        /// The last line to read, included (default: the last).
        pub to: Option<u64>,
    }
}

crate::tool! {
    /// `file_write`: write a workspace file whole.
    pub FileWrite = "file_write",
    /// `file_write`'s arguments.
    struct FileWriteArguments {
        /// The file's path in the workspace (notes.md, data/out.csv); folders are made as needed.
        pub path: String,
        /// The file's whole content (it replaces what the file held).
        pub content: String,
    }
}

crate::tool! {
    /// `file_edit`: replace one passage of a workspace file.
    pub FileEdit = "file_edit",
    /// `file_edit`'s arguments.
    struct FileEditArguments {
        /// The file's path in the workspace.
        pub path: String,
        /// The exact passage to replace, as the file has it; it must occur exactly once.
        pub old: String,
        /// What replaces it (empty: the passage is removed).
        pub new: String,
    }
}
