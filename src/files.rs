//! Files people send and the bot keeps: `rules` (pure) what a file is, the
//! caps and where it lives; `download_link` (pure) signed links; `store` R2
//! and D1; `tools` the file tools' calls; `chat_api` the web chat's uploads
//! and downloads.

pub mod arguments;
pub mod download_link;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod chat_api;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tools;
