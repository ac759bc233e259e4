//! The HTTP methods routes use: the Worker's ([`crate::routes`]) and the
//! Durable Objects' (`channel::routes`, the Gateway object's).

/// The methods routes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Put,
    Delete,
}
