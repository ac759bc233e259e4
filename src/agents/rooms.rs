//! The rooms agents answer and the directory of every agent's rooms, bots
//! and web invitations, pure.
//!
//! A room is a Slack workspace (its team id) or a Discord channel (its id).
//! Each is claimed by at most one agent; a room no agent claims is the
//! default agent's, so a deployment without claims answers as it always did.
//! An inbound from a claimed room becomes the claiming agent's: its
//! conversation key gains the agent's prefix ([`Directory::owned_key`]).
//!
//! The [`Directory`] is a snapshot the Worker keeps per isolate and reloads
//! (one D1 batch) when it is older than [`FRESH_MS`] or dropped by an admin
//! write, so the inbound path reads no D1 per message.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::agents::rules::{agent_of, platform_part, within, DEFAULT};

/// How long a loaded directory is used before it is read again (30 s): an
/// admin change reaches other isolates within this, its own isolate at once.
pub const FRESH_MS: i64 = 30_000;
/// The most rooms of one kind an agent may claim.
pub const MAX_ROOMS: usize = 200;
/// The room kinds, as `agent_rooms.platform` stores them.
pub const SLACK: &str = "slack";
pub const DISCORD: &str = "discord";

/// What an agent claims, as the admin API takes and shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rooms {
    /// Slack workspaces, by team id (`T…`, or `E…` for an Enterprise Grid).
    #[serde(default)]
    pub slack_teams: Vec<String>,
    /// Discord channels, by id (a snowflake: digits).
    #[serde(default)]
    pub discord_channels: Vec<String>,
}

/// Why rooms are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoomError {
    #[error("rooms are {{\"slack_teams\": [...], \"discord_channels\": [...]}}: {0}")]
    Shape(String),
    #[error("`{0}` is not a Slack team id (T or E, then up to 31 capital letters or digits)")]
    SlackTeam(String),
    #[error("`{0}` is not a Discord channel id (1 to 20 digits)")]
    DiscordChannel(String),
    #[error("at most {MAX_ROOMS} rooms of each kind")]
    TooMany,
}

/// Whether `id` is a Slack team id: `T` or `E`, then 1 to 31 of `A-Z0-9`.
pub fn is_slack_team(id: &str) -> bool {
    let mut bytes = id.bytes();
    matches!(bytes.next(), Some(b'T' | b'E'))
        && (2..=32).contains(&id.len())
        && bytes.all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit())
}

/// Whether `id` is a Discord channel id: 1 to 20 digits.
pub fn is_discord_channel(id: &str) -> bool {
    (1..=20).contains(&id.len()) && id.bytes().all(|byte| byte.is_ascii_digit())
}

/// Rooms from the admin API's JSON, checked, trimmed and without repeats.
pub fn check_rooms(value: &serde_json::Value) -> Result<Rooms, RoomError> {
    let given: Rooms = serde_json::from_value(value.clone()).map_err(|error| RoomError::Shape(error.to_string()))?;
    let tidy = |ids: Vec<String>, fine: fn(&str) -> bool, bad: fn(String) -> RoomError| {
        let mut kept: Vec<String> = Vec::new();
        for id in ids.into_iter().map(|id| id.trim().to_string()) {
            if !fine(&id) {
                return Err(bad(id));
            }
            if !kept.contains(&id) {
                kept.push(id);
            }
        }
        if kept.len() > MAX_ROOMS {
            return Err(RoomError::TooMany);
        }
        Ok(kept)
    };
    Ok(Rooms {
        slack_teams: tidy(given.slack_teams, is_slack_team, RoomError::SlackTeam)?,
        discord_channels: tidy(given.discord_channels, is_discord_channel, RoomError::DiscordChannel)?,
    })
}

impl Rooms {
    /// Each room as `(platform, id)`.
    pub fn claims(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let slack = self.slack_teams.iter().map(|team| (SLACK, team.as_str()));
        slack.chain(self.discord_channels.iter().map(|channel| (DISCORD, channel.as_str())))
    }

    /// Adds one stored claim.
    pub fn add(&mut self, platform: &str, room: &str) {
        match platform {
            SLACK => self.slack_teams.push(room.to_string()),
            DISCORD => self.discord_channels.push(room.to_string()),
            _ => {}
        }
    }
}

/// One stored claim: `platform`, `room`, `agent` (an `agent_rooms` row).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Claim {
    pub platform: String,
    pub room: String,
    pub agent: String,
}

/// The rooms `agent` wants that another agent holds already, as `platform:id`.
pub fn conflicts(held: &[Claim], agent: &str, wanted: &Rooms) -> Vec<String> {
    wanted
        .claims()
        .filter(|(platform, room)| {
            held.iter().any(|claim| claim.platform == *platform && claim.room == *room && claim.agent != agent)
        })
        .map(|(platform, room)| format!("{platform}:{room}"))
        .collect()
}

/// The room an unprefixed Slack or Discord conversation key stands in: the
/// workspace of `slack:{team}:{channel}[:{thread}]`, the channel of
/// `discord:{guild}:{channel}` (a DM's `discord:dm:{channel}` too). None for
/// any other key, and for a key that already names an agent.
pub fn room_of(key: &str) -> Option<(&'static str, &str)> {
    if platform_part(key) != key || agent_of(key) != DEFAULT {
        return None;
    }
    let mut parts = key.split(':');
    match (parts.next()?, parts.next()?, parts.next()?) {
        ("slack", team, _) if !team.is_empty() => Some((SLACK, team)),
        ("discord", _, channel) if !channel.is_empty() && parts.next().is_none() => Some((DISCORD, channel)),
        _ => None,
    }
}

/// An agent's own Telegram bot, opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bot {
    pub agent: String,
    pub username: String,
    pub token: String,
    pub secret: String,
}

/// Every agent's rooms, bots and web invitations, as loaded at `loaded_ms`.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    loaded_ms: i64,
    rooms: HashMap<(String, String), String>,
    bots: HashMap<String, Bot>,
    /// agent → its invitation.
    invitations: Vec<(String, String)>,
}

impl Directory {
    pub fn new(loaded_ms: i64, claims: Vec<Claim>, bots: Vec<Bot>, invitations: Vec<(String, String)>) -> Directory {
        let rooms = claims.into_iter().map(|claim| ((claim.platform, claim.room), claim.agent)).collect();
        let bots = bots.into_iter().map(|bot| (bot.agent.clone(), bot)).collect();
        Directory { loaded_ms, rooms, bots, invitations }
    }

    /// Whether it may still be used at `now_ms` (a clock that went back makes it stale).
    pub fn is_fresh(&self, now_ms: i64) -> bool {
        (0..FRESH_MS).contains(&(now_ms - self.loaded_ms))
    }

    /// The agent that claims the room `key` stands in (None: the default's).
    pub fn agent_for(&self, key: &str) -> Option<&str> {
        let (platform, room) = room_of(key)?;
        self.rooms.get(&(platform.to_string(), room.to_string())).map(String::as_str)
    }

    /// `key` as the claiming agent's (None when no agent claims its room).
    pub fn owned_key(&self, key: &str) -> Option<String> {
        self.agent_for(key).filter(|agent| *agent != DEFAULT).map(|agent| within(agent, key))
    }

    /// An agent's own Telegram bot.
    pub fn bot(&self, agent: &str) -> Option<&Bot> {
        self.bots.get(agent)
    }

    /// An agent's web invitation.
    pub fn invitation(&self, agent: &str) -> Option<&str> {
        self.invitations.iter().find(|(owner, _)| owner == agent).map(|(_, invitation)| invitation.as_str())
    }

    /// The agent whose invitation `token` is. Every invitation is compared,
    /// each in constant time (`subtle`), so the time taken says nothing of
    /// which one, if any, came close.
    pub fn invited(&self, token: &str) -> Option<&str> {
        let mut found = None;
        for (agent, invitation) in &self.invitations {
            if bool::from(invitation.as_bytes().ct_eq(token.as_bytes())) && !invitation.is_empty() {
                found = Some(agent.as_str());
            }
        }
        found
    }

    /// Every secret it holds, named for the log redactor: the bots' tokens
    /// and webhook secrets and the web invitations.
    pub fn secrets(&self) -> Vec<(&'static str, &str)> {
        let mut secrets = Vec::new();
        for bot in self.bots.values() {
            secrets.push(("AGENT_TELEGRAM_BOT_TOKEN", bot.token.as_str()));
            secrets.push(("AGENT_TELEGRAM_WEBHOOK_SECRET", bot.secret.as_str()));
        }
        secrets
            .extend(self.invitations.iter().map(|(_, invitation)| ("AGENT_WEB_CHAT_INVITATION", invitation.as_str())));
        secrets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(platform: &str, room: &str, agent: &str) -> Claim {
        Claim { platform: platform.into(), room: room.into(), agent: agent.into() }
    }

    fn bot(agent: &str) -> Bot {
        Bot {
            agent: agent.into(),
            username: format!("{agent}_bot"),
            token: format!("1:{agent}-token"),
            secret: format!("{agent}-secret"),
        }
    }

    fn directory(loaded_ms: i64) -> Directory {
        Directory::new(
            loaded_ms,
            vec![claim(SLACK, "T9", "ops"), claim(DISCORD, "1100", "ops"), claim(SLACK, "T7", "default")],
            vec![bot("ops")],
            vec![
                ("ops".into(), "ops-invitation-0123456789".into()),
                ("sales".into(), "sales-invitation-987654".into()),
            ],
        )
    }

    #[test]
    fn rooms_are_checked_trimmed_and_kept_once() {
        let rooms =
            check_rooms(&json!({ "slack_teams": [" T9 ", "T9", "E12AB"], "discord_channels": ["1100"] })).unwrap();
        assert_eq!(rooms.slack_teams, ["T9", "E12AB"]);
        assert_eq!(rooms.discord_channels, ["1100"]);
        assert_eq!(check_rooms(&json!({})).unwrap(), Rooms::default());
        for bad in ["t9", "T", "X9", "T9:C1", "T-9", &format!("T{}", "1".repeat(32))] {
            assert_eq!(check_rooms(&json!({ "slack_teams": [bad] })), Err(RoomError::SlackTeam(bad.into())), "{bad}");
        }
        for bad in ["", "C1", "12a", &"1".repeat(21)] {
            let refused = check_rooms(&json!({ "discord_channels": [bad] }));
            assert_eq!(refused, Err(RoomError::DiscordChannel(bad.into())), "{bad:?}");
        }
        assert!(matches!(check_rooms(&json!({ "slack": ["T9"] })), Err(RoomError::Shape(_))));
        assert!(matches!(check_rooms(&json!({ "slack_teams": "T9" })), Err(RoomError::Shape(_))));
        let many: Vec<String> = (0..=MAX_ROOMS).map(|n| n.to_string()).collect();
        assert_eq!(check_rooms(&json!({ "discord_channels": many })), Err(RoomError::TooMany));
    }

    #[test]
    fn a_room_held_by_another_agent_is_a_conflict_and_ones_own_is_not() {
        let held = [claim(SLACK, "T9", "ops"), claim(DISCORD, "1100", "sales")];
        let wanted = Rooms { slack_teams: vec!["T9".into(), "T1".into()], discord_channels: vec!["1100".into()] };
        assert_eq!(conflicts(&held, "ops", &wanted), ["discord:1100"]);
        assert_eq!(conflicts(&held, "sales", &wanted), ["slack:T9"]);
        assert!(conflicts(&held, "ops", &Rooms { slack_teams: vec!["T9".into()], ..Rooms::default() }).is_empty());
    }

    #[test]
    fn the_room_of_a_key_is_its_workspace_or_discord_channel_and_only_for_unprefixed_keys() {
        assert_eq!(room_of("slack:T9:C1"), Some((SLACK, "T9")));
        assert_eq!(room_of("slack:T9:C1:1795000000.000100"), Some((SLACK, "T9")));
        assert_eq!(room_of("discord:G1:1100"), Some((DISCORD, "1100")));
        assert_eq!(room_of("discord:dm:1100"), Some((DISCORD, "1100")));
        for none in ["slack::C1", "telegram:42", "web:abc", "agent:ops:slack:T9:C1", "link:ops:sales", "discord:G1"] {
            assert_eq!(room_of(none), None, "{none}");
        }
    }

    #[test]
    fn a_claimed_room_makes_the_key_its_agents_and_the_rest_stays_the_defaults() {
        let directory = directory(1_000);
        assert_eq!(directory.owned_key("slack:T9:C1").as_deref(), Some("agent:ops:slack:T9:C1"));
        assert_eq!(directory.owned_key("discord:G1:1100").as_deref(), Some("agent:ops:discord:G1:1100"));
        assert_eq!(directory.agent_for("slack:T1:C1"), None);
        for stays in ["slack:T1:C1", "discord:G1:1200", "slack:T7:C1", "agent:ops:slack:T9:C1", "telegram:42"] {
            assert_eq!(directory.owned_key(stays), None, "{stays}");
        }
    }

    #[test]
    fn a_directory_is_fresh_for_thirty_seconds_and_stale_when_the_clock_goes_back() {
        let directory = directory(100_000);
        assert!(directory.is_fresh(100_000) && directory.is_fresh(100_000 + FRESH_MS - 1));
        assert!(!directory.is_fresh(100_000 + FRESH_MS));
        assert!(!directory.is_fresh(99_999));
        assert!(!Directory::default().is_fresh(FRESH_MS + 1));
    }

    #[test]
    fn bots_invitations_and_their_secrets_are_found_by_agent() {
        let directory = directory(0);
        assert_eq!(directory.bot("ops").map(|bot| bot.token.as_str()), Some("1:ops-token"));
        assert!(directory.bot("sales").is_none() && directory.bot("default").is_none());
        assert_eq!(directory.invited("ops-invitation-0123456789"), Some("ops"));
        assert_eq!(directory.invited("sales-invitation-987654"), Some("sales"));
        for wrong in ["", "ops-invitation-012345678", "OPS-INVITATION-0123456789", "ops-invitation-01234567890"] {
            assert_eq!(directory.invited(wrong), None, "{wrong:?}");
        }
        assert_eq!(directory.invitation("sales"), Some("sales-invitation-987654"));
        let secrets: Vec<&str> = directory.secrets().into_iter().map(|(_, value)| value).collect();
        for secret in ["1:ops-token", "ops-secret", "ops-invitation-0123456789", "sales-invitation-987654"] {
            assert!(secrets.contains(&secret), "{secret}");
        }
    }
}
