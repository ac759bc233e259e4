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
/// Queue names ending in this are dead-letter queues.
pub const DEAD_LETTER_SUFFIX: &str = "-dlq";
/// Name of the D1 binding.
pub const DATABASE_BINDING: &str = bindings::DATABASE.name;

thread_local! {
    /// Vars and secrets are fixed for an isolate's life (a deploy or a changed
    /// secret starts new isolates), so they are read once, not per webhook.
    static CONFIG: std::cell::OnceCell<Rc<Config>> = const { std::cell::OnceCell::new() };
    /// The configured secrets, made with the configuration.
    static REDACTOR: std::cell::OnceCell<Rc<Redactor>> = const { std::cell::OnceCell::new() };
    /// The Worker's bindings, as the first entry point saw them: fixed for the
    /// isolate's life, like its vars. For a messenger that must read D1 (a
    /// Slack workspace's token) where it is made from settings alone.
    static ENV: std::cell::OnceCell<Env> = const { std::cell::OnceCell::new() };
}

pub fn load(env: &Env) -> Rc<Config> {
    ENV.with(|bindings| {
        bindings.get_or_init(|| env.clone());
    });
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

/// The bindings [`load`] was first given (None before any entry point ran).
pub fn bindings() -> Option<Env> {
    ENV.with(|bindings| bindings.get().cloned())
}

/// The redactor of the configured secrets. Every entry point loads the
/// configuration first; before that, only key shapes are known.
pub fn redactor() -> Rc<Redactor> {
    REDACTOR.with(|redactor| redactor.get().cloned()).unwrap_or_default()
}
