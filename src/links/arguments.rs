//! The link tools as types (pure): their names and documented arguments; the
//! channel's edge runs them (`tools`).

crate::tool_set! {
    /// The link tools.
    pub LinkToolSet = [SendAgentMessage, ConcludeLink]
}

crate::tool! {
    /// `send_agent_message`: a message to a linked agent.
    pub SendAgentMessage = "send_agent_message",
    /// `send_agent_message`'s arguments.
    struct SendAgentMessageArguments {
        /// The id of the agent to write to (one you are linked with).
        pub to: String,
        /// The message: a whole task for a report, or your turn in a conversation.
        pub message: String,
    }
}

crate::tool! {
    /// `conclude_link`: ends this link conversation with its outcome.
    pub ConcludeLink = "conclude_link",
    /// `conclude_link`'s arguments.
    struct ConcludeLinkArguments {
        /// What was done or found, for the agent that opened the conversation.
        pub outcome: String,
    }
}
