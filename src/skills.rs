//! Skills (issue 36): a folder with a `SKILL.md` (a name, a one-line
//! description, then instructions) and optional files, installed per agent by
//! an operator. `rules` (pure) names, paths, caps, the front matter, zips and
//! what `open_skill` answers; `arguments` (pure) the tool's type; `store` the
//! D1 rows a turn and a run read; `tools` the channel's `open_skill`; `api`
//! the admin routes.

pub mod arguments;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod tools;
