//! An approval decided by mail: the person replied APPROVE or DENY to the
//! mail that asked ([`crate::platforms::email::rules::approval_reply`]). A
//! refusal is mailed to the one who replied, alone; a decision's outcome is
//! the channel's to send, in the thread.

use worker::Env;

use crate::approvals::buttons::press;
use crate::approvals::rules::{Click, Clicker};
use crate::config::Config;
use crate::inbound::ReplyAddress;
use crate::platforms::email::compose::{compose, message_id, Outgoing};
use crate::platforms::email::messenger::send_raw;
use crate::platforms::email::wire::Mail;
use crate::platforms::Platform;
use crate::runtime::http::now_ms;

/// Presses the approval the reply names; false when `data` is no approval's
/// (the mail is then an ordinary message).
pub async fn pressed(env: &Env, config: &Config, mail: &Mail, data: String) -> worker::Result<bool> {
    let clicker = Clicker {
        platform: Platform::Email.as_str().to_string(),
        user_id: mail.from.clone(),
        name: if mail.from_name.is_empty() { mail.from.clone() } else { mail.from_name.clone() },
    };
    let click = Click { clicker, data, conversation: mail.conversation_key(), answer_to: None };
    let decided = press(env, &click).await.map_err(|error| worker::Error::RustError(format!("{error:?}")))?;
    match decided {
        None => Ok(false),
        Some(Ok(_)) => Ok(true),
        Some(Err(note)) => {
            answer(config, mail, &note).await;
            Ok(true)
        }
    }
}

/// Mails `note` back to the one who replied, in their thread; best effort.
async fn answer(config: &Config, mail: &Mail, note: &str) {
    let ReplyAddress::Email { to, from, subject, in_reply_to, references } = mail.reply_address() else { return };
    let own_id = message_id(&format!("note:{}", mail.message_id), note, &from);
    let raw = compose(&Outgoing {
        from: &from,
        bot_name: &config.bot_name,
        to: &to,
        subject: &subject,
        in_reply_to: &in_reply_to,
        references: &references,
        text: note,
        message_id: &own_id,
        now_ms: now_ms(),
        file: None,
    });
    let _ = send_raw(&from, &to, &raw, &own_id).await;
}
