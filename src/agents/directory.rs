//! The directory of every agent's rooms, Telegram bots and web invitations,
//! kept per isolate (see [`crate::agents::rooms`]). Who may use it: the
//! inbound path (webhooks, the Gateway, the web chat's sign-in and sessions)
//! and the messengers. What it may cost: one D1 batch of three reads when
//! the isolate has none or it is older than [`FRESH_MS`](crate::agents::rooms::FRESH_MS), nothing otherwise,
//! so an unauthenticated caller cannot make an agent's webhook read D1 per
//! forged request. What it may read: the rooms, bots and invitations, opened
//! with `SLACK_TOKEN_KEY`. What it may send out: nothing; it teaches the log
//! redactor every secret it opened.

use std::cell::RefCell;
use std::rc::Rc;

use worker::{Env, Result};

use crate::agents::rooms::{room_of, Directory};
use crate::agents::store;
use crate::runtime::config::{self, DATABASE_BINDING};
use crate::runtime::http::now_ms;

thread_local! {
    /// The isolate's snapshot (None: not loaded, or dropped by an admin write).
    static CACHED: RefCell<Option<Rc<Directory>>> = const { RefCell::new(None) };
}

/// The directory, loaded when missing or older than [`FRESH_MS`](crate::agents::rooms::FRESH_MS).
pub async fn get(env: &Env) -> Result<Rc<Directory>> {
    let now = now_ms();
    if let Some(fresh) = CACHED.with(|cached| cached.borrow().clone()).filter(|cached| cached.is_fresh(now)) {
        return Ok(fresh);
    }
    let settings = config::load(env);
    let key = store::token_key(&settings).ok();
    let directory = Rc::new(store::directory(&env.d1(DATABASE_BINDING)?, key.as_ref(), now).await?);
    config::learn_secrets(env, directory.secrets());
    CACHED.with(|cached| *cached.borrow_mut() = Some(directory.clone()));
    Ok(directory)
}

/// Drops the isolate's snapshot: an admin write's change is seen at once
/// here (other isolates see it within [`FRESH_MS`](crate::agents::rooms::FRESH_MS)).
pub fn forget() {
    CACHED.with(|cached| *cached.borrow_mut() = None);
}

/// `key` as the agent's that claims its room (None: it stays as it is). Reads
/// the directory only for a Slack or Discord key that names no agent yet.
pub async fn owned_key(env: &Env, key: &str) -> Result<Option<String>> {
    if room_of(key).is_none() {
        return Ok(None);
    }
    Ok(get(env).await?.owned_key(key))
}
