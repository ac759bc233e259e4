//! Whether an inbound wakes the channel (engage) or is only remembered (observe).

use crate::inbound::InboundEvent;

/// The decision for one inbound, and the rung of the ladder that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub engages: bool,
    pub reason: &'static str,
}

impl Decision {
    pub fn label(&self) -> &'static str {
        if self.engages {
            "engage"
        } else {
            "observe"
        }
    }
}

/// The explicit triggers: a direct message, a mention of the bot, a reply to it.
pub fn decide(event: &InboundEvent) -> Decision {
    let reason = if event.is_dm {
        Some("dm")
    } else if event.is_bot_mention {
        Some("mention")
    } else if event.reply_to_bot_message_id.is_some() {
        Some("reply to bot")
    } else {
        None
    };
    match reason {
        Some(reason) => Decision { engages: true, reason },
        None => Decision { engages: false, reason: "not addressed to the bot" },
    }
}
