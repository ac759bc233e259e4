//! People: who the bot talks to. `rules` (pure) says whose profile a turn
//! shows and what a branch may write; `arguments` (pure) its tools' arguments;
//! `humans` (pure) an operator's bulk list (`[[humans]]`); `homes` (pure)
//! which D1 shard holds a person's rows;
//! `store` keeps the records in D1 and carries out the tools; `api` the admin
//! views.

pub mod arguments;
pub mod homes;
pub mod humans;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
