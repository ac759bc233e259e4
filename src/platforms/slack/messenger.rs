//! Slack Web API calls.

use serde_json::{json, Value};
use worker::Method;

use crate::runtime::http::download;

use crate::runtime::http::get_manual;

use crate::runtime::http::post_json;

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::{is_platform_file_url, Refusal, SLACK_FILE_HOSTS};
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::ops::Op;
use crate::platforms::messenger::{
    Buttons, FileBody, Interrupted, Messenger, Piece, SendFailure, Streaming, API_TIMEOUT_MS, UPLOAD_TIMEOUT_MS,
};
use crate::platforms::slack::install::store::{token_for, TokenFor};
use crate::platforms::slack::wire::{
    approval_blocks, find_piece, piece_lookup, post_message_body, update_message_body, MESSAGE_LIMIT, WORKING_REACTION,
};
use crate::platforms::Platform;
use crate::reply::reaction::Reaction;
use crate::runtime::config;
use crate::runtime::http::send_form;
use std::cell::RefCell;
use std::rc::Rc;

/// Members read per page; a channel with more is a truncated read.
const MEMBERS_PAGE: u32 = 200;
/// A read answer larger than this is not read further.
const READ_BODY_LIMIT: usize = 1_000_000;
/// Clock skew allowed between the attempt's time and Slack's `ts`.
const LOOKUP_SLACK_SECS: i64 = 60;
/// A streamed reply is updated about once a second (`chat.update` is a
/// Tier 3 method: about 50 calls a minute).
const EDIT_EVERY_MS: u64 = 1_000;

/// Sends to Slack with the deployment's settings, in each workspace with
/// that workspace's bot token.
pub struct Slack<'a> {
    pub config: &'a Config,
    /// The last workspace's token looked up (a turn stays in one workspace),
    /// held in memory for this messenger's life only.
    tokens: RefCell<Option<(Option<String>, Rc<str>)>>,
}

impl<'a> Slack<'a> {
    /// The messenger for a reply ([`crate::platforms::outbound`]'s one way to
    /// make each); Slack needs only the settings, not the conversation's object.
    pub fn new(config: &'a Config, _state: &'a worker::State) -> Self {
        Slack::with(config)
    }

    /// The messenger outside a conversation (a button press answered).
    pub fn with(config: &'a Config) -> Self {
        Slack { config, tokens: RefCell::new(None) }
    }
}

/// The workspace a reply address is in (None: the single token's).
fn team_of(address: &ReplyAddress) -> Option<&str> {
    match address {
        ReplyAddress::Slack { team, .. } => team.as_deref(),
        _ => None,
    }
}

impl Slack<'_> {
    /// The `Authorization` header for calls into `team`: its own token when
    /// it installed the app, the single `SLACK_BOT_TOKEN` otherwise; an ended
    /// install (uninstalled, revoked) gets nothing, so nothing is sent there.
    async fn authorization(&self, team: Option<&str>) -> Result<String, SendFailure> {
        if let Some((known, token)) = self.tokens.borrow().as_ref() {
            if known.as_deref() == team {
                return Ok(format!("Bearer {token}"));
            }
        }
        let env = config::bindings();
        let found = token_for(&env, self.config, team)
            .await
            .map_err(|_| SendFailure::from_status("Slack", 503, "the workspace's token could not be read", None))?;
        let token: Rc<str> = match found {
            TokenFor::Token(token) => token.into(),
            TokenFor::Ended => return Err(SendFailure::permanent("the Slack workspace uninstalled the app".into())),
            TokenFor::None => return Err(SendFailure::permanent("no Slack token for this workspace".into())),
        };
        *self.tokens.borrow_mut() = Some((team.map(str::to_string), token.clone()));
        Ok(format!("Bearer {token}"))
    }

    async fn call(&self, team: Option<&str>, method: &str, body: &Value) -> Result<Value, SendFailure> {
        let url = format!("{}/{method}", self.config.slack_api_base);
        let authorization = self.authorization(team).await?;
        let answer = post_json(Op::PlatformCall, &url, &[("authorization", &authorization)], body, API_TIMEOUT_MS)
            .await
            .map_err(|failure| SendFailure::network("Slack", failure))?;
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if answer.status == 200 && parsed["ok"] == true {
            return Ok(parsed);
        }
        let retry_after_ms = answer.retry_after_secs.map(|secs| (secs * 1000.0) as u64);
        let detail = parsed["error"].as_str().unwrap_or("no error code");
        Err(SendFailure::from_status("Slack", answer.status, detail, retry_after_ms))
    }
}

impl Slack<'_> {
    /// A note only `user` sees in `channel` (a refused button press); best effort.
    pub async fn tell_only(&self, team: Option<&str>, channel: &str, user: &str, text: &str) {
        let _ = self.call(team, "chat.postEphemeral", &json!({ "channel": channel, "user": user, "text": text })).await;
    }

    /// Slack's upload flow: an upload URL for the file's name and size, the
    /// bytes to it (on Slack's file host only), then the upload completed
    /// into the conversation with the piece's text as its comment. The file's
    /// id stands for the message.
    async fn upload(&self, address: &ReplyAddress, piece: &Piece<'_>, file: &FileBody) -> Result<String, SendFailure> {
        let ReplyAddress::Slack { channel, thread_ts, team } = address else {
            return Err(SendFailure::permanent("not a Slack address".into()));
        };
        let team = team.as_deref();
        let name = &file.file.name;
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("filename", name)
            .append_pair("length", &file.bytes.len().to_string())
            .finish();
        let reserved = self.read(team, "files.getUploadURLExternal", &query).await;
        let reserved = reserved.ok_or_else(|| SendFailure::from_status("Slack", 503, "no upload URL", None))?;
        let (Some(upload_url), Some(file_id)) = (reserved["upload_url"].as_str(), reserved["file_id"].as_str()) else {
            return Err(SendFailure::permanent("Slack gave no upload URL".into()));
        };
        if !is_platform_file_url(upload_url, SLACK_FILE_HOSTS, &self.config.slack_api_base) {
            return Err(SendFailure::permanent("Slack's upload URL is not on its file host".into()));
        }
        let part = ("file", name.as_str(), file.bytes.as_slice());
        let uploaded = send_form(Op::PlatformCall, Method::Post, upload_url, &[], &[], part, UPLOAD_TIMEOUT_MS).await;
        match uploaded {
            Ok(answer) if answer.status == 200 => {}
            Ok(answer) => return Err(SendFailure::from_status("Slack", answer.status, "upload refused", None)),
            Err(failure) => return Err(SendFailure::network("Slack", failure)),
        }
        let mut complete = json!({
            "files": [{ "id": file_id, "title": name }], "channel_id": channel, "initial_comment": piece.text
        });
        if let Some(thread) = thread_ts {
            complete["thread_ts"] = json!(thread);
        }
        self.call(team, "files.completeUploadExternal", &complete).await?;
        Ok(file_id.to_string())
    }

    /// A read method (GET with a query string); None unless Slack answered ok.
    async fn read(&self, team: Option<&str>, method: &str, query: &str) -> Option<Value> {
        let url = format!("{}/{method}?{query}", self.config.slack_api_base);
        let authorization = self.authorization(team).await.ok()?;
        let answer =
            get_manual(Op::PlatformCall, &url, &[("authorization", &authorization)], API_TIMEOUT_MS, READ_BODY_LIMIT)
                .await
                .ok()?;
        let parsed: Value = serde_json::from_slice(&answer.body).ok()?;
        (answer.status == 200 && parsed["ok"] == true).then_some(parsed)
    }

    /// Adds or removes a reaction (by Slack emoji name) on the message a turn answers.
    async fn reaction(&self, method: &str, event: &InboundEvent, name: &str) {
        let ReplyAddress::Slack { channel, .. } = &event.reply_address else {
            return;
        };
        if event.is_command {
            return; // a slash command has no message to react to
        }
        let body = json!({ "channel": channel, "timestamp": event.message_id, "name": name });
        let _ = self.call(team_of(&event.reply_address), method, &body).await;
    }
}

impl Messenger for Slack<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        if let Some(file) = piece.file {
            return self.upload(address, piece, file).await;
        }
        let mut body = post_message_body(address, piece.text, piece.id);
        if let Buttons::Approval(id) = piece.buttons {
            body["blocks"] = approval_blocks(piece.text, Some(id));
        }
        let answer = self.call(team_of(address), "chat.postMessage", &body).await?;
        Ok(answer["ts"].as_str().unwrap_or_default().to_string())
    }

    async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        let mut body = update_message_body(address, message_id, piece.text, piece.id);
        if piece.buttons == Buttons::Cleared {
            body["blocks"] = approval_blocks(piece.text, None);
        }
        self.call(team_of(address), "chat.update", &body).await.map(|_| ())
    }

    async fn withdraw(&self, address: &ReplyAddress, message_id: &str) {
        if let ReplyAddress::Slack { channel, .. } = address {
            let _ = self.call(team_of(address), "chat.delete", &json!({ "channel": channel, "ts": message_id })).await;
        }
    }

    /// A file's `url_private_download`, on Slack's file host only, with the bot token.
    async fn download(&self, address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        let url = attachment.url.as_deref().ok_or(Refusal::Unreachable)?;
        if !is_platform_file_url(url, SLACK_FILE_HOSTS, &self.config.slack_api_base) {
            return Err(Refusal::Unreachable);
        }
        let authorization = self.authorization(team_of(address)).await.map_err(|_| Refusal::Unreachable)?;
        download(url, &[("authorization", &authorization)]).await
    }

    /// Posted, then updated as it grows. (Slack's own streaming methods for
    /// AI apps, `chat.startStream` and friends, need an assistant thread and
    /// take markdown, not the mrkdwn every other reply is rendered in.)
    fn streaming(&self) -> Streaming {
        match self.config.streams(Platform::Slack.as_str()) {
            true => Streaming::Messages { edit_every_ms: EDIT_EVERY_MS },
            false => Streaming::Off,
        }
    }

    /// Every piece carries its id in the message metadata: look for it, and
    /// send only what is not there. A lookup that fails cannot tell, nor can
    /// a file's (a shared file carries no metadata).
    async fn interrupted(&self, address: &ReplyAddress, piece: &Piece<'_>, since_ms: i64) -> Interrupted {
        if piece.file.is_some() {
            return Interrupted::Unsure;
        }
        let Some((method, query)) = piece_lookup(address, since_ms / 1000 - LOOKUP_SLACK_SECS) else {
            return Interrupted::Unsure;
        };
        match self.read(team_of(address), method, &query).await {
            Some(answer) => match find_piece(&answer, piece.id) {
                Some(ts) => Interrupted::Landed(ts),
                None => Interrupted::Resend,
            },
            None => Interrupted::Unsure,
        }
    }

    /// Slack bots have no typing indicator over the Web API: the :eyes:
    /// reaction on the message says the bot is on it.
    async fn show_working(&self, event: &InboundEvent) {
        self.reaction("reactions.add", event, WORKING_REACTION).await;
    }

    /// The reaction stays until it is taken away: nothing to renew.
    async fn renew_working(&self, _event: &InboundEvent) {}

    async fn clear_working(&self, event: &InboundEvent) {
        self.reaction("reactions.remove", event, WORKING_REACTION).await;
    }

    async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
        let ReplyAddress::Slack { channel, .. } = &event.reply_address else {
            return None;
        };
        let parsed = self
            .read(
                team_of(&event.reply_address),
                "conversations.members",
                &format!("channel={channel}&limit={MEMBERS_PAGE}"),
            )
            .await?;
        let members = parsed["members"].as_array()?.len();
        let truncated =
            parsed.pointer("/response_metadata/next_cursor").and_then(Value::as_str).is_some_and(|c| !c.is_empty());
        // Members include this bot (taken off here) and peer bots (the channel
        // takes off those it knows).
        Some(MembershipCount { others: members.saturating_sub(1), truncated, fetched_at_ms: now_ms })
    }

    async fn react(&self, event: &InboundEvent, reaction: &Reaction) {
        self.reaction("reactions.add", event, reaction.name()).await;
    }
}
