//! "Add to Slack" (many workspaces): `rules` (pure) the authorize link, the
//! callback, sealing bot tokens and which workspaces are heard; `store` the
//! installs and pending install links in D1; `api` the install link, the
//! OAuth callback and the operator's list of workspaces.

pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod store;
