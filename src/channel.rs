//! The channel: the user-facing process of one conversation. This module holds
//! its pure logic; the Durable Object in durable_objects/ carries it out.

pub mod engagement;
pub mod turn;
