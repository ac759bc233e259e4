//! The channel object's routes: the one spelling of each, shared by the Worker
//! that calls the object and the object that serves it.

pub use crate::verb::{ObjectRoute, Verb};

crate::named! {
    /// A request the channel object serves.
    pub enum ChannelRoute {
        /// A verified inbound message (webhooks, the Gateway, the web chat).
        Inbound = "/inbound",
        /// A branch's or worker's report.
        ProcessEvent = "/process-event",
        /// Copy history to D1 now (the admin API lists D1's copy).
        HistoryFlush = "/history/flush",
        /// A compaction finished: drop what it covered.
        HistoryCompacted = "/history/compacted",
        /// Start a task board worker in this conversation.
        TaskStart = "/tasks/start",
        /// The cron found a schedule of this conversation overdue.
        ScheduleWake = "/schedules/wake",
        /// The cron's sweeper found an acknowledged inbound of this conversation
        /// with no outcome past the bound: run what waits.
        SweepWake = "/sweep/wake",
        /// Ask for an approval in the conversation (a message with buttons).
        ApprovalAsk = "/approvals/ask",
        /// An approval was decided: show it on its message.
        ApprovalSettled = "/approvals/settled",
        /// The dashboard's socket that says when the conversation changed.
        Live = "/live",
        /// The web chat's socket.
        ChatSocket = "/chat/socket",
        /// Admin views.
        Envelopes = "/envelopes",
        Events = "/events",
        Processes = "/processes",
        Outbox = "/outbox",
        Usage = "/usage",
        /// A verified edit, deletion or reaction (`crate::inbound::HeardEvent`).
        Heard = "/heard",
        /// A post from outside (the MCP server's `post` tool), sent once per id.
        ExternalPost = "/external/post",
    }
}

impl ObjectRoute for ChannelRoute {
    const HOST: &'static str = "channel";

    fn verb(self) -> Verb {
        match self {
            ChannelRoute::Inbound
            | ChannelRoute::ProcessEvent
            | ChannelRoute::HistoryFlush
            | ChannelRoute::HistoryCompacted
            | ChannelRoute::TaskStart
            | ChannelRoute::ScheduleWake
            | ChannelRoute::SweepWake
            | ChannelRoute::ApprovalAsk
            | ChannelRoute::ApprovalSettled
            | ChannelRoute::Heard
            | ChannelRoute::ExternalPost => Verb::Post,
            ChannelRoute::Live
            | ChannelRoute::ChatSocket
            | ChannelRoute::Envelopes
            | ChannelRoute::Events
            | ChannelRoute::Processes
            | ChannelRoute::Outbox
            | ChannelRoute::Usage => Verb::Get,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_found_at_its_own_path_and_nothing_else_is() {
        crate::verb::assert_routes::<ChannelRoute>(&[
            "",
            "/",
            "/inbound/",
            "/INBOUND",
            "/history",
            "inbound",
            "/live?x=1",
        ]);
    }
}
