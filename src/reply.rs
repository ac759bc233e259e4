//! What a reply can carry out of the Worker: the model's Markdown rendered
//! for the platform with every link's target visible and no mass mention
//! ([`markup`]), secrets cut from what a reader sees over the whole turn
//! ([`pieces`]), reactions that are emoji and nothing else ([`reaction`]),
//! the pace a chat's calls keep under the platform's rate limits ([`pace`]),
//! and the states of a piece in the outbox ([`outbox`]).

pub mod live;
pub mod markup;
pub mod outbox;
pub mod pace;
pub mod pieces;
pub mod reaction;
