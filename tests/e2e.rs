//! End-to-end tests: the built Worker runs in local workerd (`wrangler dev`)
//! with local D1 and Durable Objects; only the outside services (the model
//! provider, the platform APIs) are faked, as HTTP servers on 127.0.0.1.
//!
//! Run through `make test`, which builds the Worker and puts Node 22 on PATH.

mod agent_limits;
mod agent_rooms;
mod agents;
mod attacks_access;
mod attacks_bill;
mod attacks_memory;
mod attacks_reply;
mod browse;
mod channel_schema;
mod checkpoint;
mod commit;
mod conformance;
mod containment;
mod conversation_index;
mod d1_shards;
mod discord;
mod email;
mod exactly_once;
mod files;
mod first_run;
mod gateway;
mod gateway_shards;
mod harness;
mod heard;
mod history;
mod hostile;
mod identity;
mod leaks;
mod links;
mod mcp;
mod mcp_conformance;
mod mcp_server;
mod memory;
mod models;
mod never_silent;
mod outbound;
mod people;
mod plain_webhook;
mod processes;
mod recovery;
mod sandbox;
mod schedules;
mod skills;
mod slack;
mod slack_workspaces;
mod status;
mod streaming;
mod tasks;
mod teams;
mod telegram_dm;
mod telegram_group;
mod web;
mod web_files;
mod whatsapp;
mod workers;
mod workspace;
