//! Bot Framework connector calls for Teams: every call carries the bot's
//! token, and goes only to a connector on the allow-list
//! (`TEAMS_SERVICE_URL_HOSTS`), whatever the reply address says.

use serde_json::{json, Value};
use worker::Method;

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::Refusal;
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::ops::Op;
use crate::platforms::messenger::{Buttons, Interrupted, Messenger, Piece, SendFailure, Streaming, API_TIMEOUT_MS};
use crate::platforms::teams::client::{bot_token, forget_token};
use crate::platforms::teams::rules::is_allowed_service_url;
use crate::platforms::teams::wire::{
    activities_url, approval_body, file_body, message_body, typing_body, FILE_HOSTS, MESSAGE_LIMIT,
};
use crate::platforms::Platform;
use crate::reply::reaction::Reaction;
use crate::runtime::http::{download, get_manual, send_json};

/// A streamed reply is edited about once a second (the connector allows a
/// bot a few operations a second per conversation).
const EDIT_EVERY_MS: u64 = 1_000;
/// A member list larger than this is not read further.
const READ_BODY_LIMIT: usize = 1_000_000;

/// Sends to Teams with the deployment's settings.
pub struct Teams<'a> {
    pub config: &'a Config,
}

impl<'a> Teams<'a> {
    /// The messenger for a reply; Teams needs only the settings.
    pub fn new(config: &'a Config, _state: &'a worker::State) -> Self {
        Teams { config }
    }
}

impl Teams<'_> {
    /// The connector and conversation of an address, if the connector is one
    /// the bot's token may go to.
    fn place<'b>(&'b self, address: &'b ReplyAddress) -> Result<(&'b str, &'b str), SendFailure> {
        let ReplyAddress::Teams { service_url, conversation_id, .. } = address else {
            return Err(SendFailure::permanent("not a Teams address".into()));
        };
        let service_url = if service_url.is_empty() { &self.config.teams_service_url } else { service_url };
        if !is_allowed_service_url(service_url, &self.config.teams_service_url_hosts) {
            return Err(SendFailure::permanent("the Teams serviceUrl is not on TEAMS_SERVICE_URL_HOSTS".into()));
        }
        Ok((service_url, conversation_id))
    }

    /// One connector call with the bot's token; its JSON answer (null when empty).
    async fn call(&self, method: Method, url: &str, body: &Value) -> Result<Value, SendFailure> {
        let authorization = format!("Bearer {}", bot_token(self.config).await?);
        let answer =
            send_json(Op::PlatformCall, method, url, &[("authorization", &authorization)], body, API_TIMEOUT_MS)
                .await
                .map_err(|failure| SendFailure::network("Teams", failure))?;
        if (200..300).contains(&answer.status) {
            return Ok(serde_json::from_slice(&answer.body).unwrap_or(Value::Null));
        }
        if answer.status == 401 {
            forget_token(); // revoked or rotated: the next call signs in again
        }
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        let detail = parsed.pointer("/error/code").and_then(Value::as_str).unwrap_or("no error code");
        let retry_after_ms = answer.retry_after_secs.map(|secs| (secs * 1000.0) as u64);
        Err(SendFailure::from_status("Teams", answer.status, detail, retry_after_ms))
    }

    /// A note only `user` sees: a personal chat between the bot and them is
    /// opened (or found: the connector answers the same one) and the note
    /// posted there. Teams has no message only one member of a chat sees.
    pub async fn tell_only(&self, address: &ReplyAddress, user: &str, text: &str) {
        let Ok((service_url, _)) = self.place(address) else { return };
        let ReplyAddress::Teams { tenant_id, .. } = address else { return };
        let mut opening = json!({
            "bot": { "id": format!("28:{}", self.config.teams_app_id) },
            "members": [{ "id": user }], "isGroup": false,
        });
        if let Some(tenant) = tenant_id {
            opening["tenantId"] = json!(tenant);
            opening["channelData"] = json!({ "tenant": { "id": tenant } });
        }
        let url = format!("{}/v3/conversations", service_url.trim_end_matches('/'));
        let Ok(opened) = self.call(Method::Post, &url, &opening).await else { return };
        let Some(conversation) = opened["id"].as_str() else { return };
        let _ = self.call(Method::Post, &activities_url(service_url, conversation, None), &message_body(text)).await;
    }

    /// Sends the typing indicator to the conversation of `event`; best effort.
    async fn typing(&self, event: &InboundEvent) {
        if let Ok((service_url, conversation)) = self.place(&event.reply_address) {
            let _ = self.call(Method::Post, &activities_url(service_url, conversation, None), &typing_body()).await;
        }
    }
}

/// Whether `url` is where Teams serves shared files (SharePoint, https only).
fn is_file_host(url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else { return false };
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    url.scheme() == "https"
        && url.port().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && FILE_HOSTS.iter().any(|parent| host.ends_with(&format!(".{parent}")))
}

impl Messenger for Teams<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let (service_url, conversation) = self.place(address)?;
        let body = match (piece.file, piece.buttons) {
            (Some(file), _) => file_body(piece.text, &file.file.name, &file.file.content_type, &file.bytes),
            (None, Buttons::Approval(id)) => approval_body(piece.text, Some(id)),
            _ => message_body(piece.text),
        };
        let url = activities_url(service_url, conversation, piece.reply_to);
        let answer = self.call(Method::Post, &url, &body).await?;
        Ok(answer["id"].as_str().unwrap_or_default().to_string())
    }

    async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        let (service_url, conversation) = self.place(address)?;
        let mut body = match piece.buttons {
            Buttons::Cleared => approval_body(piece.text, None),
            _ => message_body(piece.text),
        };
        body["id"] = json!(message_id);
        self.call(Method::Put, &activities_url(service_url, conversation, Some(message_id)), &body).await.map(|_| ())
    }

    async fn withdraw(&self, address: &ReplyAddress, message_id: &str) {
        if let Ok((service_url, conversation)) = self.place(address) {
            let url = activities_url(service_url, conversation, Some(message_id));
            let _ = self.call(Method::Delete, &url, &Value::Null).await;
        }
    }

    /// A file on the connector (an image pasted into a chat) with the bot's
    /// token; a file shared from SharePoint by its pre-authorised link, with
    /// no token. Nothing else.
    async fn download(&self, _address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        let url = attachment.url.as_deref().ok_or(Refusal::Unreachable)?;
        if is_allowed_service_url(url, &self.config.teams_service_url_hosts) {
            let token = bot_token(self.config).await.map_err(|_| Refusal::Unreachable)?;
            return download(url, &[("authorization", &format!("Bearer {token}"))]).await;
        }
        if is_file_host(url) {
            return download(url, &[]).await;
        }
        Err(Refusal::Unreachable)
    }

    /// Posted, then edited as it grows (`PUT …/activities/{id}`).
    fn streaming(&self) -> Streaming {
        match self.config.streams(Platform::Teams.as_str()) {
            true => Streaming::Messages { edit_every_ms: EDIT_EVERY_MS },
            false => Streaming::Off,
        }
    }

    /// The connector cannot look a sent activity up by anything edgebot
    /// chose: sent again, marked as a possible repeat.
    async fn interrupted(&self, _address: &ReplyAddress, _piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        Interrupted::Unsure
    }

    async fn show_working(&self, event: &InboundEvent) {
        self.typing(event).await;
    }

    /// Teams shows "typing" for a few seconds per activity.
    async fn renew_working(&self, event: &InboundEvent) {
        self.typing(event).await;
    }

    /// The indicator fades by itself (and the reply ends it).
    async fn clear_working(&self, _event: &InboundEvent) {}

    /// The conversation's roster (a channel's, for a reply chain), without this bot.
    async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
        let (service_url, conversation) = self.place(&event.reply_address).ok()?;
        let channel = conversation.split(";messageid=").next().unwrap_or(conversation);
        let url = activities_url(service_url, channel, None).replace("/activities", "/members");
        let token = bot_token(self.config).await.ok()?;
        let answer = get_manual(
            Op::PlatformCall,
            &url,
            &[("authorization", &format!("Bearer {token}"))],
            API_TIMEOUT_MS,
            READ_BODY_LIMIT,
        )
        .await
        .ok()?;
        let members: Vec<Value> = serde_json::from_slice(&answer.body).ok().filter(|_| answer.status == 200)?;
        let bot = format!("28:{}", self.config.teams_app_id);
        let others = members.iter().filter(|member| member["id"].as_str() != Some(bot.as_str())).count();
        Some(MembershipCount { others, truncated: false, fetched_at_ms: now_ms })
    }

    /// The Bot Framework gives a bot no way to react to a message.
    async fn react(&self, _event: &InboundEvent, _reaction: &Reaction) {}
}
