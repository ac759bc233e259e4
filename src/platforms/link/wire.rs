//! What a link carries (pure).

/// The longest message one agent sends another, in characters; longer
/// replies are split, each piece a message (and a turn) of its own.
pub const MESSAGE_LIMIT: usize = 16_000;
