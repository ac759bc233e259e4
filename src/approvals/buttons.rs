//! An approval button pressed on any platform, decided: each platform reads
//! the press from its verified payload (its webhook checks signatures first,
//! see `platforms/{platform}/buttons.rs`), asks [`press`], and answers the
//! press its own way. A refused press is told to the presser alone (Slack's
//! ephemeral note, Discord's ephemeral answer, Telegram's alert, the web
//! chat's error); nobody else sees it.

use worker::Env;

use crate::api_error::ApiError;
use crate::approvals::rules::{parse_button, Click};
use crate::approvals::store as approvals;
use crate::runtime::config;

/// What a press came to: the approval's new text, or why it decided nothing.
/// None when the button is not an approval's.
pub async fn press(env: &Env, click: &Click) -> Result<Option<Result<String, String>>, ApiError> {
    let Some((choice, id)) = parse_button(&click.data) else {
        return Ok(None);
    };
    let config = config::load(env);
    // In a Slack workspace or Discord channel an agent claims, the approval is that agent's conversation's.
    let owned = crate::agents::directory::owned_key(env, &click.conversation).await?;
    let owned = owned.map(|conversation| Click { conversation, ..click.clone() });
    let decided = approvals::decide(&config, env, id, choice, owned.as_ref().unwrap_or(click)).await?;
    Ok(Some(decided))
}
