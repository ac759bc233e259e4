//! The web chat's messages (pure): the socket tags, the longest text a page
//! takes, and a chat line as the page shows it.

/// Sockets of web-chat pages.
pub const CHAT: &str = "chat";
/// Sockets of dashboard pages watching the conversation.
pub const WATCH: &str = "watch";
/// The longest text the page takes in one message.
pub const MESSAGE_LIMIT: usize = 16_000;

/// One line of the chat as the page shows it.
pub fn chat_message(id: &str, role: &str, author: &str, text: &str, at: i64) -> serde_json::Value {
    serde_json::json!({ "type": "message", "id": id, "role": role, "author": author, "text": text, "at": at })
}

/// Approve and Deny under a chat line, for the approval with this id (the
/// page sends the choice to `POST /api/chat/approvals/{id}`).
pub fn with_buttons(line: &mut serde_json::Value, approval: &str) {
    line["approval"] = serde_json::json!({ "id": approval, "open": true });
}

/// The chat id of a reply piece (`Piece::id` is `{conversation}/{turn}:{piece}`).
pub fn reply_id(outbox_id: &str) -> String {
    format!("out:{}", outbox_id.rsplit_once('/').map_or(outbox_id, |(_, entry)| entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_piece_is_named_by_its_place_in_the_outbox() {
        assert_eq!(reply_id("web:abc/turn-1:0"), "out:turn-1:0");
        assert_eq!(reply_id("bare"), "out:bare");
    }

    #[test]
    fn a_line_with_buttons_names_its_open_approval() {
        let mut line = chat_message("m1", "assistant", "edgebot", "May I?", 5);
        with_buttons(&mut line, "ap1");
        assert_eq!(line["approval"], serde_json::json!({ "id": "ap1", "open": true }));
        assert_eq!((line["type"].as_str(), line["at"].as_i64()), (Some("message"), Some(5)));
    }
}
