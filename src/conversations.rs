//! Conversations as the admin sees them: `store` the index of conversations
//! in D1; `archive` the history archive in D1; `api` the read-only views.

pub mod api;
pub mod archive;
pub mod store;
