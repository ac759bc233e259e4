//! The channel object's routes: the one spelling of each, shared by the Worker
//! that calls the object and the object that serves it.

pub use crate::verb::Verb;

/// A request the channel object serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelRoute {
    /// A verified inbound message (webhooks, the Gateway, the web chat).
    Inbound,
    /// A branch's or worker's report.
    ProcessEvent,
    /// Copy history to D1 now (the admin API lists D1's copy).
    HistoryFlush,
    /// A compaction finished: drop what it covered.
    HistoryCompacted,
    /// Start a task board worker in this conversation.
    TaskStart,
    /// The cron found a schedule of this conversation overdue.
    ScheduleWake,
    /// The cron's sweeper found an acknowledged inbound of this conversation
    /// with no outcome past the bound: run what waits.
    SweepWake,
    /// Ask for an approval in the conversation (a message with buttons).
    ApprovalAsk,
    /// An approval was decided: show it on its message.
    ApprovalSettled,
    /// The dashboard's socket that says when the conversation changed.
    Live,
    /// The web chat's socket.
    ChatSocket,
    /// Admin views.
    Envelopes,
    Events,
    Processes,
    Outbox,
    Usage,
}

impl ChannelRoute {
    pub const ALL: [ChannelRoute; 16] = [
        ChannelRoute::Inbound,
        ChannelRoute::ProcessEvent,
        ChannelRoute::HistoryFlush,
        ChannelRoute::HistoryCompacted,
        ChannelRoute::TaskStart,
        ChannelRoute::ScheduleWake,
        ChannelRoute::SweepWake,
        ChannelRoute::ApprovalAsk,
        ChannelRoute::ApprovalSettled,
        ChannelRoute::Live,
        ChannelRoute::ChatSocket,
        ChannelRoute::Envelopes,
        ChannelRoute::Events,
        ChannelRoute::Processes,
        ChannelRoute::Outbox,
        ChannelRoute::Usage,
    ];

    pub fn path(self) -> &'static str {
        match self {
            ChannelRoute::Inbound => "/inbound",
            ChannelRoute::ProcessEvent => "/process-event",
            ChannelRoute::HistoryFlush => "/history/flush",
            ChannelRoute::HistoryCompacted => "/history/compacted",
            ChannelRoute::TaskStart => "/tasks/start",
            ChannelRoute::ScheduleWake => "/schedules/wake",
            ChannelRoute::SweepWake => "/sweep/wake",
            ChannelRoute::ApprovalAsk => "/approvals/ask",
            ChannelRoute::ApprovalSettled => "/approvals/settled",
            ChannelRoute::Live => "/live",
            ChannelRoute::ChatSocket => "/chat/socket",
            ChannelRoute::Envelopes => "/envelopes",
            ChannelRoute::Events => "/events",
            ChannelRoute::Processes => "/processes",
            ChannelRoute::Outbox => "/outbox",
            ChannelRoute::Usage => "/usage",
        }
    }

    pub fn verb(self) -> Verb {
        match self {
            ChannelRoute::Inbound
            | ChannelRoute::ProcessEvent
            | ChannelRoute::HistoryFlush
            | ChannelRoute::HistoryCompacted
            | ChannelRoute::TaskStart
            | ChannelRoute::ScheduleWake
            | ChannelRoute::SweepWake
            | ChannelRoute::ApprovalAsk
            | ChannelRoute::ApprovalSettled => Verb::Post,
            ChannelRoute::Live
            | ChannelRoute::ChatSocket
            | ChannelRoute::Envelopes
            | ChannelRoute::Events
            | ChannelRoute::Processes
            | ChannelRoute::Outbox
            | ChannelRoute::Usage => Verb::Get,
        }
    }

    /// The URL a stub is called with (the host is never looked at).
    pub fn url(self) -> String {
        format!("https://channel{}", self.path())
    }

    /// The route at `path`, whatever the method (the object answers 405 to the wrong one).
    pub fn at(path: &str) -> Option<ChannelRoute> {
        ChannelRoute::ALL.into_iter().find(|route| route.path() == path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_found_at_its_own_path_and_nothing_else_is() {
        for route in ChannelRoute::ALL {
            assert_eq!(ChannelRoute::at(route.path()), Some(route));
            assert!(route.url().ends_with(route.path()));
        }
        for stranger in ["", "/", "/inbound/", "/INBOUND", "/history", "inbound", "/live?x=1"] {
            assert_eq!(ChannelRoute::at(stranger), None, "{stranger}");
        }
    }
}
