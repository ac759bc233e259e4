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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;

    #[test]
    fn arguments_parse_and_a_bad_call_says_what_is_wrong() {
        let read = FileRead::parse(&json!({ "path": "notes.md", "from": 2 })).unwrap();
        assert_eq!((read.path.as_str(), read.from, read.to), ("notes.md", Some(2), None));
        let missing = FileRead::parse(&json!({ "from": 2 })).unwrap_err();
        assert!(missing.contains("`file_read`") && missing.contains("path"), "{missing}");
        let negative = FileRead::parse(&json!({ "path": "a", "from": -1 })).unwrap_err();
        assert!(negative.contains("do not fit its schema"), "{negative}");
        let write = FileWrite::parse(&json!({ "path": "a.csv", "content": "x,y\n" })).unwrap();
        assert_eq!(write.content, "x,y\n");
        assert!(FileWrite::parse(&json!({ "path": "a.csv" })).unwrap_err().contains("content"));
        let edit = FileEdit::parse(&json!({ "path": "a", "old": "x", "new": "" })).unwrap();
        assert_eq!((edit.old.as_str(), edit.new.as_str()), ("x", ""));
        assert!(FileEdit::parse(&json!({ "path": "a", "old": "x" })).is_err(), "`new` is required");
        assert!(FileList::parse(&serde_json::Value::Null).is_ok());
    }

    #[test]
    fn the_schemas_name_each_argument() {
        let text = FileRead::spec().parameters.to_string();
        for argument in ["path", "from", "to"] {
            assert!(text.contains(&format!("\"{argument}\"")), "{text}");
        }
        assert!(text.contains("\"required\":[\"path\"]"), "only the path is required: {text}");
    }
}
