//! Approvals: a person's yes before a risky step runs. `rules` (pure) ids,
//! buttons, who may decide; `store` the D1 row and the decision; `buttons`
//! the presses each platform delivers.

pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod store;
