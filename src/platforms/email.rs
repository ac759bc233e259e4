//! Email through Cloudflare Email Routing: `wire` (pure) a routed mail read
//! into its person, thread and text; `rules` (pure) whether it is answered
//! (authentication, loops, the allow-list) and approvals by reply; `compose`
//! (pure) a reply's MIME; `settings` (pure) what `/api/status` says; `handler`
//! the Worker's `email` event; `buttons` an approval decided by reply;
//! `messenger` replies through the `send_email` binding. See docs/email.md.

pub mod compose;
pub mod rules;
pub mod settings;
pub mod wire;

#[cfg(target_arch = "wasm32")]
pub mod buttons;
#[cfg(target_arch = "wasm32")]
pub mod handler;
#[cfg(target_arch = "wasm32")]
pub mod messenger;
