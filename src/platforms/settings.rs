//! What each platform's settings say, for `GET /api/status` and the setup
//! banner: each platform's `settings.rs` reads its own, and these ask the
//! right one. Kept apart from [`Platform`] itself so that the enum, which the
//! route table and the pure rules name, does not depend on the settings.

use serde_json::Value;

use crate::config::Config;
use crate::platforms::{discord, email, plain_webhook, slack, teams, telegram, whatsapp, Platform};

impl Platform {
    /// What `/api/status` says of its settings (which are present, and
    /// whether it is ready); None when it has none to set (the web chat).
    pub fn settings_state(self, config: &Config) -> Option<Value> {
        match self {
            Platform::Telegram => Some(telegram::settings::state(config)),
            Platform::Slack => Some(slack::settings::state(config)),
            Platform::Discord => Some(discord::settings::state(config)),
            Platform::Web => None,
            Platform::Teams => Some(teams::settings::state(config)),
            Platform::WhatsApp => Some(whatsapp::settings::state(config)),
            Platform::Webhook => Some(plain_webhook::settings::state(config)),
            Platform::Email => Some(email::settings::state(config)),
            Platform::Link => None,
        }
    }

    /// The settings to set when it has none yet, for the setup banner.
    pub fn unconnected(self, config: &Config) -> Option<&'static str> {
        match self {
            Platform::Telegram => telegram::settings::unconnected(config),
            Platform::Slack => slack::settings::unconnected(config),
            Platform::Discord => discord::settings::unconnected(config),
            Platform::Web => None,
            Platform::Teams => teams::settings::unconnected(config),
            Platform::WhatsApp => whatsapp::settings::unconnected(config),
            Platform::Webhook => plain_webhook::settings::unconnected(config),
            Platform::Email => email::settings::unconnected(config),
            Platform::Link => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_with_settings_says_whether_it_is_ready_and_names_them_when_none_are_set() {
        let nothing = Config::from_lookup(|_| None);
        for platform in Platform::ALL {
            match platform.settings_state(&nothing) {
                Some(state) => {
                    assert_eq!(state["ready"], false, "{platform} is not ready with nothing set");
                    let named = platform.unconnected(&nothing).expect("its settings are named");
                    assert!(named.starts_with(platform.name()), "{named}");
                }
                None => assert_eq!(platform.unconnected(&nothing), None, "{platform} has nothing to set"),
            }
        }
    }
}
