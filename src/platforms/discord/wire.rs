//! Discord HTTP interactions: Ed25519 verification, interaction parsing, and
//! the webhook calls that complete a deferred response.

use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;
use serde_json::{json, Value};
use thiserror::Error;

use crate::approvals::rules::{Click, Clicker};
use crate::inbound::{Author, InboundEvent, ReplyAddress};
use crate::platforms::Platform;
use crate::security::{decode_hex, is_fresh};

/// Discord's limit on one message's content.
pub const MESSAGE_LIMIT: usize = 2000;
/// A command's text option holds at most 6,000 characters; a longer text is cut on arrival.
pub const INBOUND_TEXT_LIMIT: usize = 6_000;
pub const SIGNATURE_HEADER: &str = "X-Signature-Ed25519";
pub const TIMESTAMP_HEADER: &str = "X-Signature-Timestamp";
/// The slash command edgebot registers.
pub const ASK_COMMAND: &str = "ask";
/// The message context command edgebot registers.
pub const ASK_ABOUT_MESSAGE_COMMAND: &str = "Ask edgebot";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum DiscordError {
    #[error("missing Discord signature or timestamp")]
    MissingSignature,
    #[error("stale Discord request timestamp")]
    Stale,
    #[error("invalid Discord signature")]
    WrongSignature,
    #[error("malformed Discord interaction: {0}")]
    Malformed(String),
    /// Autocomplete, modal submits and types Discord adds later: edgebot
    /// registers nothing that sends them, so one arriving is refused.
    #[error("Discord interaction type {0} is not handled")]
    UnhandledType(u8),
}

/// Verifies `X-Signature-Ed25519` over `timestamp + body` with the
/// application's public key (hex), and refuses timestamps five minutes off.
pub fn verify_signature(
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    public_key_hex: &str,
    now_secs: i64,
) -> Result<(), DiscordError> {
    let (Some(signature), Some(timestamp)) = (signature, timestamp) else {
        return Err(DiscordError::MissingSignature);
    };
    if !is_fresh(timestamp, now_secs) {
        return Err(DiscordError::Stale);
    }
    let key = decode_hex(public_key_hex)
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .and_then(|bytes| VerifyingKey::from_bytes(&bytes).ok())
        .ok_or(DiscordError::WrongSignature)?;
    let signature = decode_hex(signature)
        .and_then(|bytes| Signature::from_slice(&bytes).ok())
        .ok_or(DiscordError::WrongSignature)?;
    let mut message = Vec::with_capacity(timestamp.len() + body.len());
    message.extend_from_slice(timestamp.as_bytes());
    message.extend_from_slice(body);
    // Strict: refuses small-order keys and non-canonical signatures, as ed25519-compact did.
    key.verify_strict(&message, &signature).map_err(|_| DiscordError::WrongSignature)
}

/// What an interaction asks of the Worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interaction {
    /// Type 1: answer `{"type": 1}`.
    Ping,
    /// A command for the channel: answer `{"type": 5}` at once, complete later.
    Command(Box<InboundEvent>),
    /// A button or select: acknowledge with a deferred update (`{"type": 6}`),
    /// unless it is an approval's (the edge answers those).
    Component(Box<Click>),
    /// A command edgebot does not know (say, one registered by an older
    /// version): the person is told so, visible only to them.
    UnknownCommand,
    /// Type 5, MODAL_SUBMIT: edgebot opens no modal of its own, so it reads
    /// none; the person is told so (visible only to them), never left waiting.
    ModalSubmit,
}

#[derive(Debug, Deserialize)]
struct Payload {
    id: String,
    application_id: String,
    #[serde(rename = "type")]
    kind: u8,
    #[serde(default)]
    token: Option<String>,
    /// A command's data, or a component's (`custom_id`): read by kind.
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    guild_id: Option<String>,
    #[serde(default)]
    channel_id: Option<String>,
    #[serde(default)]
    member: Option<Member>,
    #[serde(default)]
    user: Option<User>,
}

#[derive(Debug, Deserialize)]
struct CommandData {
    #[serde(default)]
    name: String,
    /// 1 chat input (slash), 2 user, 3 message.
    #[serde(rename = "type", default)]
    kind: u8,
    #[serde(default)]
    options: Vec<CommandOption>,
    #[serde(default)]
    target_id: Option<String>,
    #[serde(default)]
    resolved: Option<Resolved>,
}

#[derive(Debug, Deserialize)]
struct CommandOption {
    name: String,
    #[serde(default)]
    value: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Resolved {
    #[serde(default)]
    messages: serde_json::Map<String, Value>,
}

#[derive(Debug, Deserialize)]
struct Member {
    user: User,
}

#[derive(Debug, Deserialize)]
struct User {
    id: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    global_name: Option<String>,
    #[serde(default)]
    bot: bool,
}

/// Parses an interaction body.
pub fn parse_interaction(body: &[u8]) -> Result<Interaction, DiscordError> {
    let payload: Payload = serde_json::from_slice(body).map_err(|error| DiscordError::Malformed(error.to_string()))?;
    match payload.kind {
        1 => return Ok(Interaction::Ping),
        3 => return component(payload),
        5 => return Ok(Interaction::ModalSubmit),
        2 => {}
        other => return Err(DiscordError::UnhandledType(other)),
    }
    let data: CommandData = payload
        .data
        .and_then(|data| serde_json::from_value(data).ok())
        .ok_or_else(|| DiscordError::Malformed("command without data".into()))?;
    let text = match data.kind {
        1 if data.name == ASK_COMMAND => data
            .options
            .iter()
            .find(|option| option.name == "text")
            .and_then(|option| option.value.as_ref())
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        3 => {
            let target = data.target_id.unwrap_or_default();
            let content = data
                .resolved
                .and_then(|resolved| resolved.messages.get(&target).cloned())
                .and_then(|message| message.get("content").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_default();
            format!("About this message: {content}")
        }
        _ => return Ok(Interaction::UnknownCommand),
    };
    let user = payload
        .member
        .map(|member| member.user)
        .or(payload.user)
        .ok_or_else(|| DiscordError::Malformed("interaction without a user".into()))?;
    let channel_id = payload.channel_id.ok_or_else(|| DiscordError::Malformed("no channel_id".into()))?;
    let token = payload.token.ok_or_else(|| DiscordError::Malformed("no token".into()))?;
    let scope = payload.guild_id.clone().unwrap_or_else(|| "dm".into());
    let event = InboundEvent::new(
        format!("discord:{scope}:{channel_id}"),
        payload.id.clone(),
        payload.id,
        Author { name: user.global_name.unwrap_or(user.username), id: user.id, is_bot: user.bot },
        text,
        ReplyAddress::Discord { application_id: payload.application_id, interaction_token: token, channel_id },
    );
    let is_dm = payload.guild_id.is_none();
    let event = InboundEvent { is_dm, is_command: true, ..event }.with_text_capped(INBOUND_TEXT_LIMIT);
    Ok(Interaction::Command(Box::new(event)))
}

/// A component interaction (a button pressed): who pressed it, where, and
/// what it carries. One without a user is nobody's (no decision takes it).
fn component(payload: Payload) -> Result<Interaction, DiscordError> {
    let nobody = User { id: String::new(), username: String::new(), global_name: None, bot: false };
    let user = payload.member.map(|member| member.user).or(payload.user).unwrap_or(nobody);
    let channel_id = payload.channel_id.unwrap_or_default();
    let data = payload.data.as_ref().and_then(|data| data["custom_id"].as_str()).unwrap_or_default();
    let scope = payload.guild_id.unwrap_or_else(|| "dm".into());
    Ok(Interaction::Component(Box::new(Click {
        clicker: Clicker {
            platform: Platform::Discord.as_str().into(),
            name: user.global_name.unwrap_or(user.username),
            user_id: user.id,
        },
        data: data.to_string(),
        conversation: format!("discord:{scope}:{channel_id}"),
        answer_to: None,
    })))
}

/// The immediate answer to an interaction.
pub fn immediate_response(interaction: &Interaction) -> Value {
    match interaction {
        Interaction::Ping => json!({ "type": 1 }),
        Interaction::Command(_) => json!({ "type": 5 }),
        Interaction::Component(_) => json!({ "type": 6 }),
        Interaction::UnknownCommand => json!({ "type": 4, "data": { "content": "unknown command", "flags": 64 } }),
        Interaction::ModalSubmit => {
            json!({ "type": 4, "data": { "content": crate::prompt::text("modal_refused"), "flags": 64 } })
        }
    }
}

/// The webhook call for a piece of a reply: the `original` one (a reply's
/// first piece, in the turn that answers the command) edits the deferred
/// response, every other is a follow-up message. Returns (method, path, body).
pub fn webhook_call(address: &ReplyAddress, original: bool, text: &str) -> Option<(&'static str, String, Value)> {
    let ReplyAddress::Discord { application_id, interaction_token, .. } = address else {
        return None;
    };
    let body = edit_body(text);
    Some(if original {
        ("PATCH", format!("/webhooks/{application_id}/{interaction_token}/messages/@original"), body)
    } else {
        ("POST", format!("/webhooks/{application_id}/{interaction_token}"), body)
    })
}

/// The path of a message this bot sent at `address` (to edit or delete it):
/// a channel message through the bot's own API, a command's through its
/// interaction webhook. The body of an edit is [`edit_body`].
pub fn message_path(address: &ReplyAddress, message_id: &str) -> Option<String> {
    match address {
        ReplyAddress::DiscordChannel { channel_id, .. } => {
            Some(format!("/channels/{channel_id}/messages/{message_id}"))
        }
        ReplyAddress::Discord { application_id, interaction_token, .. } => {
            Some(format!("/webhooks/{application_id}/{interaction_token}/messages/{message_id}"))
        }
        _ => None,
    }
}

/// The answer to an approval's button: the message updated to show the
/// decision (its buttons gone), or a note only the presser sees.
pub fn button_answer(decided: Result<&str, &str>) -> Value {
    match decided {
        Ok(text) => {
            json!({ "type": 7, "data": { "content": text, "components": [], "allowed_mentions": { "parse": [] } } })
        }
        Err(note) => {
            json!({ "type": 4, "data": { "content": note, "flags": 64, "allowed_mentions": { "parse": [] } } })
        }
    }
}

/// Approve and Deny buttons (message components: an action row of two
/// buttons whose custom ids carry [`crate::approvals::rules::button_data`]).
pub fn approval_components(approval_id: &str) -> Value {
    use crate::approvals::rules::{button_data, Choice};
    json!([{ "type": 1, "components": [
        { "type": 2, "style": 3, "label": "Approve", "custom_id": button_data(Choice::Approve, approval_id) },
        { "type": 2, "style": 4, "label": "Deny", "custom_id": button_data(Choice::Deny, approval_id) },
    ] }])
}

/// The body of an edit: new content, still mentioning nobody.
pub fn edit_body(text: &str) -> Value {
    json!({ "content": text, "allowed_mentions": { "parse": [] } })
}

/// The commands edgebot registers (PUT /applications/{id}/commands).
pub fn command_definitions() -> Value {
    json!([
        {
            "name": ASK_COMMAND, "type": 1, "description": "Ask edgebot something",
            "options": [{ "name": "text", "description": "Your question", "type": 3, "required": true }]
        },
        { "name": ASK_ABOUT_MESSAGE_COMMAND, "type": 3 }
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modal_submitted_is_answered_that_it_was_not_read() {
        let body = br#"{"id": "1", "application_id": "2", "type": 5, "token": "t", "data": {"custom_id": "x"}}"#;
        let interaction = parse_interaction(body).unwrap();
        assert_eq!(interaction, Interaction::ModalSubmit);
        let answer = immediate_response(&interaction);
        assert_eq!((answer["type"].as_u64(), answer["data"]["flags"].as_u64()), (Some(4), Some(64)));
        assert!(answer["data"]["content"].as_str().unwrap().contains("not read"));
    }
    use ed25519_dalek::{Signer, SigningKey};

    fn keys() -> SigningKey {
        SigningKey::from_bytes(&[7; 32])
    }

    use crate::security::encode_hex as hex;

    #[test]
    fn a_sent_message_is_edited_where_it_was_sent() {
        let channel = ReplyAddress::DiscordChannel { channel_id: "C1".into(), guild_id: Some("G1".into()) };
        assert_eq!(message_path(&channel, "99").unwrap(), "/channels/C1/messages/99");
        let command = ReplyAddress::Discord {
            application_id: "A1".into(),
            interaction_token: "tok".into(),
            channel_id: "C1".into(),
        };
        assert_eq!(message_path(&command, "99").unwrap(), "/webhooks/A1/tok/messages/99");
        assert_eq!(message_path(&ReplyAddress::Slack { channel: "C".into(), thread_ts: None, team: None }, "99"), None);
        assert_eq!(edit_body("hi")["allowed_mentions"]["parse"], json!([]));
    }

    #[test]
    fn signatures_verify_and_forgeries_do_not() {
        let keys = keys();
        let public = hex(keys.verifying_key().as_bytes());
        let body = br#"{"type":1}"#;
        let signature = hex(keys.sign(&[b"1700000000".as_slice(), body].concat()).to_bytes());
        assert_eq!(verify_signature(Some(&signature), Some("1700000000"), body, &public, 1_700_000_010), Ok(()));
        assert_eq!(
            verify_signature(Some(&signature), Some("1700000000"), br#"{"type":2}"#, &public, 1_700_000_010),
            Err(DiscordError::WrongSignature)
        );
        assert_eq!(
            verify_signature(Some(&signature), Some("1700000000"), body, &public, 1_700_001_000),
            Err(DiscordError::Stale)
        );
        assert_eq!(verify_signature(None, Some("1"), body, &public, 1), Err(DiscordError::MissingSignature));
        assert_eq!(
            verify_signature(Some("zz"), Some("1700000000"), body, &public, 1_700_000_000),
            Err(DiscordError::WrongSignature)
        );
        assert_eq!(
            verify_signature(Some(&signature), Some("1700000000"), body, "", 1_700_000_000),
            Err(DiscordError::WrongSignature),
            "an unset key accepts nothing"
        );
    }

    #[test]
    fn ping_component_and_commands() {
        assert_eq!(parse_interaction(br#"{"id":"1","application_id":"A","type":1}"#).unwrap(), Interaction::Ping);
        assert_eq!(immediate_response(&Interaction::Ping), json!({"type": 1}));
        let component = parse_interaction(br#"{"id":"2","application_id":"A","type":3,"token":"t"}"#).unwrap();
        assert_eq!(immediate_response(&component), json!({"type": 6}));

        // Shaped like Discord's documented chat-input interaction.
        let body = json!({
            "id": "786008729715212338", "application_id": "775799577604522054", "type": 2, "token": "A_UNIQUE_TOKEN",
            "guild_id": "290926798626357999", "channel_id": "645027906669510667", "version": 1,
            "member": {"user": {"id": "53908232506183680", "username": "Mason", "global_name": "Mason S", "bot": false}},
            "data": {"id": "771825006014889984", "name": "ask", "type": 1, "options": [{"name": "text", "type": 3, "value": "what is edgebot?"}]}
        });
        let Interaction::Command(event) = parse_interaction(body.to_string().as_bytes()).unwrap() else {
            panic!("a command")
        };
        assert_eq!(event.conversation_key, "discord:290926798626357999:645027906669510667");
        assert_eq!(event.text, "what is edgebot?");
        assert_eq!(event.author.name, "Mason S");
        assert!(event.is_command && !event.is_dm);
        assert_eq!(immediate_response(&Interaction::Command(event.clone())), json!({"type": 5}));
        let (method, path, _) = webhook_call(&event.reply_address, true, "x").unwrap();
        assert_eq!(
            (method, path.as_str()),
            ("PATCH", "/webhooks/775799577604522054/A_UNIQUE_TOKEN/messages/@original")
        );
        let (method, path, _) = webhook_call(&event.reply_address, false, "y").unwrap();
        assert_eq!((method, path.as_str()), ("POST", "/webhooks/775799577604522054/A_UNIQUE_TOKEN"));
    }

    #[test]
    fn the_registration_script_registers_these_commands() {
        let registered: Value = serde_json::from_str(include_str!("../../../scripts/discord-commands.json")).unwrap();
        assert_eq!(registered, command_definitions());
    }

    #[test]
    fn message_commands_ask_about_the_target_and_dms_have_their_own_key() {
        let body = json!({
            "id": "9", "application_id": "A", "type": 2, "token": "t", "channel_id": "C",
            "user": {"id": "U", "username": "ada"},
            "data": {"name": "Ask edgebot", "type": 3, "target_id": "M1",
                     "resolved": {"messages": {"M1": {"id": "M1", "content": "is this right?"}}}}
        });
        let Interaction::Command(event) = parse_interaction(body.to_string().as_bytes()).unwrap() else {
            panic!("a command")
        };
        assert_eq!(event.text, "About this message: is this right?");
        assert_eq!(event.conversation_key, "discord:dm:C");
        assert!(event.is_dm);
        assert!(matches!(parse_interaction(b"[]"), Err(DiscordError::Malformed(_))));
    }

    #[test]
    fn interaction_types_edgebot_does_not_handle_are_refused_and_unknown_commands_answered() {
        for kind in [4u8, 9] {
            let body = json!({"id": "9", "application_id": "A", "type": kind, "token": "t", "channel_id": "C"});
            assert_eq!(parse_interaction(body.to_string().as_bytes()), Err(DiscordError::UnhandledType(kind)));
        }
        let body = json!({"id": "9", "application_id": "A", "type": 2, "token": "t", "channel_id": "C",
                          "user": {"id": "U"}, "data": {"name": "old", "type": 1}});
        let interaction = parse_interaction(body.to_string().as_bytes()).unwrap();
        assert_eq!(interaction, Interaction::UnknownCommand);
        assert_eq!(immediate_response(&interaction)["data"]["flags"], 64, "only the asker sees it");
    }

    #[test]
    fn a_component_is_a_click_and_its_answer_updates_or_tells_the_presser_alone() {
        let components = approval_components("0123456789abcdef");
        assert_eq!(components[0]["components"][0]["custom_id"], "approve:0123456789abcdef");
        let body = json!({"id": "i1", "application_id": "A", "type": 3, "token": "t", "guild_id": "G",
            "channel_id": "C", "member": {"user": {"id": "U", "username": "ada"}},
            "data": {"custom_id": "deny:0123456789abcdef", "component_type": 2}});
        let Interaction::Component(click) = parse_interaction(body.to_string().as_bytes()).unwrap() else {
            panic!("not a component")
        };
        assert_eq!((click.clicker.user_id.as_str(), click.conversation.as_str()), ("U", "discord:G:C"));
        assert_eq!(click.data, "deny:0123456789abcdef");
        assert_eq!(button_answer(Ok("Denied"))["type"], 7);
        assert_eq!(button_answer(Ok("Denied"))["data"]["components"], json!([]));
        assert_eq!(button_answer(Err("not yours"))["data"]["flags"], 64);
    }
}
