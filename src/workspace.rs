//! A conversation's workspace: files a worker writes, reads and edits (and
//! the conversation's attachments beside them, read-only), kept in R2 under
//! the conversation. `rules` (pure) the paths, quotas, reads and edits;
//! `arguments` (pure) the file tools' types; `store` the files in R2;
//! `tools` the file tools' calls; `api` the dashboard's view.

pub mod arguments;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tools;
