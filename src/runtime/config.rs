//! Reads [`Config`] from the Worker's vars and secrets.

use std::rc::Rc;

use worker::Env;

use crate::bindings;
use crate::config::Config;
use crate::redact::Redactor;

/// Name of the Durable Object binding for conversation channels.
pub const CHANNEL_BINDING: &str = bindings::CHANNEL.name;
/// Name of the Durable Object binding for the Discord Gateway connection.
pub const GATEWAY_BINDING: &str = bindings::GATEWAY.name;
/// Name of the Durable Object binding that counts failed sign-ins.
pub const SIGN_IN_BINDING: &str = bindings::SIGN_IN.name;
/// Name of the Queue binding for process jobs.
pub const JOBS_BINDING: &str = bindings::JOBS.name;
/// Name of the Queue binding for the conversation index.
pub const INDEX_QUEUE_BINDING: &str = bindings::INDEX_QUEUE.name;
/// The conversation index's queue (wrangler.toml): its batches are index rows, not jobs.
pub const INDEX_QUEUE_NAME: &str = "edgebot-index";
/// Queue names ending in this are dead-letter queues.
pub const DEAD_LETTER_SUFFIX: &str = "-dlq";
/// Name of the D1 binding.
pub const DATABASE_BINDING: &str = bindings::DATABASE.name;

thread_local! {
    /// Vars and secrets are fixed for an isolate's life (a deploy or a changed
    /// secret starts new isolates), so they are read once, not per webhook.
    static CONFIG: std::cell::OnceCell<Rc<Config>> = const { std::cell::OnceCell::new() };
    /// Why the configuration is refused, worked out with it ([`refusal`]).
    static REFUSAL: std::cell::OnceCell<Option<String>> = const { std::cell::OnceCell::new() };
    /// The configured secrets, made with the configuration.
    static REDACTOR: std::cell::OnceCell<Rc<Redactor>> = const { std::cell::OnceCell::new() };
    /// The configured secrets and those learnt since (agents' bot tokens and
    /// invitations, see `crate::agents::directory`); None until one is learnt.
    static LEARNT: std::cell::RefCell<Option<Rc<Redactor>>> = const { std::cell::RefCell::new(None) };
    /// Counts the operator's changes this isolate saw (admin API writes):
    /// what a channel object read before one is read again.
    static EDITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The number of operator changes this isolate has seen ([`note_edit`]).
pub fn edits() -> u64 {
    EDITS.with(std::cell::Cell::get)
}

/// Notes an operator's change (an admin API write): channel objects in this
/// isolate read their agent, limits and people again on their next turn.
pub fn note_edit() {
    EDITS.with(|edits| edits.set(edits.get() + 1));
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "cloudflare:workers")]
extern "C" {
    /// The Worker's bindings, as the runtime exports them to every module.
    #[wasm_bindgen(thread_local_v2, js_name = env)]
    static WORKER_ENV: Env;
}

pub fn load(env: &Env) -> Rc<Config> {
    CONFIG.with(|config| {
        config
            .get_or_init(|| {
                let config = Config::from_lookup(|name| {
                    env.secret(name)
                        .map(|value| value.to_string())
                        .or_else(|_| env.var(name).map(|value| value.to_string()))
                        .ok()
                });
                REDACTOR.with(|redactor| redactor.set(Rc::new(config.redactor())).ok());
                Rc::new(config)
            })
            .clone()
    })
}

/// Why the Worker refuses its configuration (None: it does not), worked out
/// once per isolate, as the configuration is read once ([`load`]): every
/// request asks.
pub fn refusal(env: &Env) -> Option<String> {
    REFUSAL.with(|refusal| refusal.get_or_init(|| load(env).refusal()).clone())
}

/// The Worker's bindings, for a part made from settings and state alone
/// (a messenger, through `outbound::for_address`) that must reach one: the
/// `send_email` binding, D1 for a Slack workspace's token. The runtime's own
/// export (`cloudflare:workers`), the same object every entry point is given.
pub fn bindings() -> Env {
    WORKER_ENV.with(Env::clone)
}

/// The redactor of the configured secrets. Every entry point loads the
/// configuration first; before that, only key shapes are known.
pub fn redactor() -> Rc<Redactor> {
    if let Some(learnt) = LEARNT.with(|learnt| learnt.borrow().clone()) {
        return learnt;
    }
    REDACTOR.with(|redactor| redactor.get().cloned()).unwrap_or_default()
}

/// Makes the redactor keep `secrets` out too, beside the configured ones and
/// those learnt before (a replaced bot token stays a secret in this isolate).
pub fn learn_secrets<'a>(env: &Env, secrets: impl IntoIterator<Item = (&'static str, &'a str)>) {
    load(env);
    let known = redactor();
    let learnt = Rc::new(known.with_more(secrets));
    LEARNT.with(|cell| *cell.borrow_mut() = Some(learnt));
}
