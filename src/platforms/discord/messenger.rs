//! Discord REST calls: interaction webhooks for commands, and the bot's own
//! channel messages, typing and reactions for what the Gateway heard.

use serde_json::{json, Value};
use worker::Method;

use crate::runtime::http::download;

use crate::runtime::http::get_manual;

use crate::runtime::http::send_form;

use crate::runtime::http::send_json;

use crate::runtime::http::HttpAnswer;

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::{is_platform_file_url, Refusal, DISCORD_FILE_HOSTS};
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::ops::Op;
use crate::platforms::discord::message::{create_message_body, reaction_path};
use crate::platforms::discord::wire::{approval_components, edit_body, message_path, webhook_call, MESSAGE_LIMIT};
use crate::platforms::messenger::{
    Buttons, Interrupted, Messenger, Piece, SendFailure, Streaming, API_TIMEOUT_MS, UPLOAD_TIMEOUT_MS,
};
use crate::platforms::Platform;
use crate::reply::reaction::Reaction;
use crate::runtime::http::HttpFailure;

/// A guild answer larger than this is not read further.
const GUILD_BODY_LIMIT: usize = 200_000;
/// A streamed reply is edited about once a second: Discord allows about five
/// edits per five seconds in a channel.
const EDIT_EVERY_MS: u64 = 1_000;

/// Sends to Discord with the deployment's settings.
pub struct Discord<'a> {
    pub config: &'a Config,
}

impl<'a> Discord<'a> {
    /// The messenger for a reply ([`crate::platforms::outbound`]'s one way to
    /// make each); Discord needs only the settings, not the conversation's object.
    pub fn new(config: &'a Config, _state: &'a worker::State) -> Self {
        Discord { config }
    }
}

impl Discord<'_> {
    /// A REST call. Interaction webhooks are authorised by their token; the
    /// bot's own calls carry the bot token (never logged).
    async fn call(&self, method: Method, path: &str, body: &Value, as_bot: bool) -> Result<Value, SendFailure> {
        let url = format!("{}{path}", self.config.discord_api_base);
        let authorization = format!("Bot {}", self.config.discord_bot_token.expose());
        let headers: &[(&str, &str)] = if as_bot { &[("authorization", &authorization)] } else { &[] };
        Self::answer(send_json(Op::PlatformCall, method, &url, headers, body, API_TIMEOUT_MS).await)
    }

    /// Reads a REST answer: a 2xx, or a failure that says whether (and when) to retry.
    fn answer(answer: Result<HttpAnswer, HttpFailure>) -> Result<Value, SendFailure> {
        let answer = answer.map_err(|failure| SendFailure::network("Discord", failure))?;
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if (200..300).contains(&answer.status) {
            return Ok(parsed);
        }
        let retry_after_ms =
            parsed["retry_after"].as_f64().or(answer.retry_after_secs).map(|secs| (secs * 1000.0).ceil() as u64);
        let detail = parsed["message"].as_str().unwrap_or("no message");
        Err(SendFailure::from_status("Discord", answer.status, detail, retry_after_ms))
    }
}

/// A GET as the bot (`/gateway/bot`, a guild's counts); None unless it answered JSON.
pub async fn bot_get(config: &Config, path: &str, body_limit: usize) -> Option<Value> {
    let url = format!("{}{path}", config.discord_api_base);
    let authorization = format!("Bot {}", config.discord_bot_token.expose());
    let answer = get_manual(Op::PlatformCall, &url, &[("authorization", &authorization)], API_TIMEOUT_MS, body_limit)
        .await
        .ok()?;
    serde_json::from_slice(&answer.body).ok()
}

impl Messenger for Discord<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// A channel message carries its nonce; a command's first piece edits
    /// the deferred response, the rest are follow-ups. A file goes as the
    /// message's one attachment, the same call made multipart.
    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let (method, path, mut body, as_bot) = match address {
            ReplyAddress::DiscordChannel { channel_id, .. } => {
                let body = create_message_body(piece.text, piece.reply_to, piece.id);
                (Method::Post, format!("/channels/{channel_id}/messages"), body, true)
            }
            _ => {
                let (method, path, body) = webhook_call(address, piece.index == 0 && !piece.follow_up, piece.text)
                    .ok_or_else(|| SendFailure::permanent("not a Discord address".into()))?;
                (if method == "PATCH" { Method::Patch } else { Method::Post }, path, body, false)
            }
        };
        if let Buttons::Approval(id) = piece.buttons {
            body["components"] = approval_components(id);
        }
        let answer = match piece.file {
            None => self.call(method, &path, &body, as_bot).await?,
            Some(file) => {
                body["attachments"] = json!([{ "id": 0, "filename": file.file.name }]);
                let url = format!("{}{path}", self.config.discord_api_base);
                let authorization = format!("Bot {}", self.config.discord_bot_token.expose());
                let headers: &[(&str, &str)] = if as_bot { &[("authorization", &authorization)] } else { &[] };
                let fields = [("payload_json", body.to_string())];
                let fields: Vec<(&str, &str)> = fields.iter().map(|(name, value)| (*name, value.as_str())).collect();
                let upload = ("files[0]", file.file.name.as_str(), file.bytes.as_slice());
                let answer =
                    send_form(Op::PlatformCall, method, &url, headers, &fields, upload, UPLOAD_TIMEOUT_MS).await;
                Self::answer(answer)?
            }
        };
        Ok(answer["id"].as_str().unwrap_or_default().to_string())
    }

    /// A channel message is edited as the bot; a command's through its
    /// interaction webhook (its token authorises it).
    async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        let path =
            message_path(address, message_id).ok_or_else(|| SendFailure::permanent("not a Discord address".into()))?;
        let as_bot = matches!(address, ReplyAddress::DiscordChannel { .. });
        let mut body = edit_body(piece.text);
        if piece.buttons == Buttons::Cleared {
            body["components"] = json!([]);
        }
        self.call(Method::Patch, &path, &body, as_bot).await.map(|_| ())
    }

    async fn withdraw(&self, address: &ReplyAddress, message_id: &str) {
        if let Some(path) = message_path(address, message_id) {
            let as_bot = matches!(address, ReplyAddress::DiscordChannel { .. });
            let _ = self.call(Method::Delete, &path, &Value::Null, as_bot).await;
        }
    }

    /// An attachment's URL, on Discord's CDN only.
    async fn download(&self, _address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        let url = attachment.url.as_deref().ok_or(Refusal::Unreachable)?;
        if !is_platform_file_url(url, DISCORD_FILE_HOSTS, &self.config.discord_api_base) {
            return Err(Refusal::Unreachable);
        }
        download(url, &[]).await
    }

    fn streaming(&self) -> Streaming {
        match self.config.streams(Platform::Discord.as_str()) {
            true => Streaming::Messages { edit_every_ms: EDIT_EVERY_MS },
            false => Streaming::Off,
        }
    }

    /// A channel message carries a nonce with `enforce_nonce`, and the first
    /// piece of a command edits the deferred response: sending either again is
    /// harmless. A command's follow-up can be neither deduplicated nor looked up.
    async fn interrupted(&self, address: &ReplyAddress, piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        match address {
            ReplyAddress::DiscordChannel { .. } => Interrupted::Resend,
            _ if piece.index == 0 => Interrupted::Resend,
            _ => Interrupted::Unsure,
        }
    }

    /// A command's deferred response already shows "edgebot is thinking…";
    /// in a channel the bot shows it is typing (Discord shows it for 10 s).
    async fn show_working(&self, event: &InboundEvent) {
        if let ReplyAddress::DiscordChannel { channel_id, .. } = &event.reply_address {
            let _ = self.call(Method::Post, &format!("/channels/{channel_id}/typing"), &Value::Null, true).await;
        }
    }

    async fn renew_working(&self, event: &InboundEvent) {
        self.show_working(event).await;
    }

    async fn clear_working(&self, _event: &InboundEvent) {}

    /// A guild's member count (guild-wide, so it can only over-count a
    /// channel's audience: the bot then stays quieter, never louder).
    /// Interactions and DMs carry no member list; the participants seen decide.
    async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
        let ReplyAddress::DiscordChannel { guild_id: Some(guild_id), .. } = &event.reply_address else {
            return None;
        };
        let guild = bot_get(self.config, &format!("/guilds/{guild_id}?with_counts=true"), GUILD_BODY_LIMIT).await?;
        let members = guild["approximate_member_count"].as_u64()? as usize;
        // Less this bot; the channel takes off the peer bots it knows.
        Some(MembershipCount { others: members.saturating_sub(1), truncated: false, fetched_at_ms: now_ms })
    }

    /// Commands have no message of the user's to react to; channel messages do.
    async fn react(&self, event: &InboundEvent, reaction: &Reaction) {
        let Some(emoji) = reaction.emoji() else {
            return; // a name Discord would need an id for
        };
        if let ReplyAddress::DiscordChannel { channel_id, .. } = &event.reply_address {
            let path = reaction_path(channel_id, &event.message_id, emoji);
            let _ = self.call(Method::Put, &path, &Value::Null, true).await;
        }
    }
}
