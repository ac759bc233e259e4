//! The typed envelope every inter-process message travels in (the war-room
//! format): `v, id, ts, from, to, type, ref, body`.

use serde::{Deserialize, Serialize};

/// The envelope format version.
pub const ENVELOPE_VERSION: u8 = 1;
/// Bodies longer than this are cut, with a warning appended.
pub const BODY_CAP_BYTES: usize = 65_536;
const TRUNCATION_WARNING: &str = "\n[truncated: the body exceeded 65536 bytes]";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageType {
    Task,
    Done,
    Review,
    Pass,
    Fail,
    Fix,
    Error,
    Signoff,
    /// Progress from a running process, for the channel's status block.
    Status,
    /// An interactive worker finished a step and waits for a follow-up.
    Waiting,
    /// The channel stopped a process.
    Cancel,
    /// A process sends the conversation a file: the body is the file's id,
    /// a space, and its name (see [`Envelope::sent_file`]).
    File,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub v: u8,
    /// Unique per message; receivers de-duplicate on it.
    pub id: String,
    /// Milliseconds since the Unix epoch.
    pub ts: i64,
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// The message this one answers (a `done` refers to its `task`).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub body: String,
}

impl Envelope {
    /// Builds an envelope, cutting an oversized body at a character boundary.
    pub fn new(
        id: impl Into<String>,
        ts: i64,
        from: impl Into<String>,
        to: impl Into<String>,
        kind: MessageType,
        reference: Option<String>,
        body: impl Into<String>,
    ) -> Self {
        Envelope {
            v: ENVELOPE_VERSION,
            id: id.into(),
            ts,
            from: from.into(),
            to: to.into(),
            kind,
            reference,
            body: cap_body(body.into()),
        }
    }

    /// A process's report to its channel: `from` is `<kind>:<id>`, `ref` the
    /// process id, and the envelope id `<id>:<suffix>`, so the same report
    /// made again (a redelivered job) carries the same id.
    pub fn report(
        process_kind: &str,
        process_id: &str,
        suffix: &str,
        ts: i64,
        kind: MessageType,
        body: String,
    ) -> Self {
        Envelope::new(
            format!("{process_id}:{suffix}"),
            ts,
            format!("{process_kind}:{process_id}"),
            "channel",
            kind,
            Some(process_id.to_string()),
            body,
        )
    }
}

impl Envelope {
    /// The id of the file a `file` envelope sends (None for any other, or a
    /// body that does not start with a file id).
    pub fn sent_file(&self) -> Option<&str> {
        let id = self.body.split(' ').next()?;
        let is_id = id.len() == 17 && id.starts_with('f') && id[1..].bytes().all(|byte| byte.is_ascii_hexdigit());
        (self.kind == MessageType::File && is_id).then_some(id)
    }
}

fn cap_body(mut body: String) -> String {
    if body.len() <= BODY_CAP_BYTES {
        return body;
    }
    body.truncate(body.floor_char_boundary(BODY_CAP_BYTES - TRUNCATION_WARNING.len()));
    body.push_str(TRUNCATION_WARNING);
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_envelope_names_its_file_and_nothing_else_does() {
        let file = |kind, body: &str| Envelope::new("m", 1, "worker:w", "channel", kind, Some("w".into()), body);
        let sent = file(MessageType::File, "f0123456789abcdef summary.csv");
        assert_eq!(sent.sent_file(), Some("f0123456789abcdef"));
        assert_eq!(serde_json::to_value(&sent).unwrap()["type"], "file");
        assert_eq!(file(MessageType::Done, "f0123456789abcdef summary.csv").sent_file(), None);
        assert_eq!(file(MessageType::File, "../etc/passwd x").sent_file(), None);
        assert_eq!(file(MessageType::File, "f0123456789abcdeg x").sent_file(), None);
    }

    #[test]
    fn envelopes_serialise_in_the_war_room_shape() {
        let envelope = Envelope::new("m2", 5, "branch:b1", "channel", MessageType::Done, Some("m1".into()), "42");
        let json = serde_json::to_value(&envelope).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"v": 1, "id": "m2", "ts": 5, "from": "branch:b1", "to": "channel", "type": "done", "ref": "m1", "body": "42"})
        );
        assert_eq!(serde_json::from_value::<Envelope>(json).unwrap(), envelope);
    }

    #[test]
    fn oversized_bodies_are_cut_with_a_warning() {
        let envelope = Envelope::new("m", 0, "a", "b", MessageType::Done, None, "é".repeat(40_000));
        assert!(envelope.body.len() <= BODY_CAP_BYTES);
        assert!(envelope.body.ends_with(TRUNCATION_WARNING));
        let small = Envelope::new("m", 0, "a", "b", MessageType::Done, None, "short");
        assert_eq!(small.body, "short");
    }
}
