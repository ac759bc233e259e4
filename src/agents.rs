//! Agents: several bots in one deployment (issue 36). Each agent has its own
//! identity documents, memories, people notes, files and Telegram bot; the
//! agent `default` is the deployment as it was before agents, so its data
//! needed no move. `rules` (pure) names agents and reads a conversation's
//! agent off its key; `rooms` (pure) the rooms each agent answers and the
//! directory of rooms, bots and invitations; `store` keeps agents, their bots,
//! rooms and invitations in D1; `directory` keeps the directory per isolate;
//! `snapshot` what every turn of an agent reads alike, per isolate;
//! `api` is the admin API (`/api/agents`).

pub mod rooms;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod directory;
#[cfg(target_arch = "wasm32")]
pub mod snapshot;
#[cfg(target_arch = "wasm32")]
pub mod store;

pub use rules::{agent_of, platform_part, within, AgentId, DEFAULT};
