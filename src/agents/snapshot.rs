//! What every turn of an agent reads alike, kept per isolate: the agent's
//! identity documents, enabled skills and settings, the links, which
//! conversations have an identity override, the budget limit overrides, and
//! whether any MCP server is configured.
//! Every conversation of the agent that an isolate serves shares one copy, so
//! at scale these reads cost D1 about once per isolate and agent per
//! `SHARED_READS_FRESH_MS` rather than once per quiet conversation's turn
//! (docs/scale.md, "The agent's reads, per isolate").
//!
//! Who may use it: a channel turn and a branch, for their own conversation.
//! What it may cost: one batch of seven reads when the isolate's copy is
//! missing, older than `SHARED_READS_FRESH_MS` (0, the default, reads every
//! time) or older than an operator's edit in this isolate; nothing otherwise.
//! What it may read: what the agent's prompt carries anyway; an override's
//! text and a table of limits too big to keep are read by the turn itself
//! ([`Snapshot::identity_for`], [`Snapshot::limits_for`]). What it may send
//! out: nothing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use worker::{D1Database, Env, Result};

use crate::agents::rules::AgentSettings;
use crate::budget::store::{self as spend, LimitOverride};
use crate::budget::usage::Spender;
use crate::identity::rules::IdentityTexts;
use crate::identity::store as identity;
use crate::links::rules::Link;
use crate::log_line::LogLine;
use crate::runtime::d1::read_batch;
use crate::runtime::log::Emit;
use crate::skills::rules::SkillSummary;

/// Limit overrides a snapshot keeps at most: past this, each turn reads its own.
const MOST_LIMITS: usize = 1_000;

/// An agent's shared reads, as one isolate read them.
pub struct Snapshot {
    at: i64,
    edits: u64,
    documents: Vec<identity::Row>,
    pub skills: Vec<SkillSummary>,
    /// Every link (the link tools pick the agent's own).
    pub links: Vec<Link>,
    pub settings: AgentSettings,
    /// The conversations with an identity override, sorted.
    overridden: Vec<String>,
    /// Every limit override (None: more than [`MOST_LIMITS`], or unreadable).
    limits: Option<Vec<LimitOverride>>,
    /// Whether any MCP server is configured (true when unreadable): a
    /// branch or worker of a deployment with none reads no server list.
    pub mcp_servers: bool,
}

impl Snapshot {
    /// The identity texts of a turn in `conversation_key`; None when the
    /// conversation has its own override, which the turn reads itself.
    pub fn identity_for(&self, conversation_key: &str) -> Option<IdentityTexts> {
        let key = conversation_key.to_string();
        self.overridden.binary_search(&key).is_err().then(|| identity::texts_from(&self.documents))
    }

    /// The limit rows of `spender`'s standing; None when the turn must read them.
    pub fn limits_for(&self, spender: &Spender) -> Option<Vec<spend::Row>> {
        let limits = self.limits.as_ref()?;
        Some(spend::limit_rows(limits, spender, self.settings.daily_micro_usd))
    }

    fn is_fresh(&self, now: i64, edits: u64, fresh_ms: i64) -> bool {
        self.edits == edits && now - self.at < fresh_ms
    }
}

thread_local! {
    /// Each agent's snapshot in this isolate.
    static KEPT: RefCell<HashMap<String, Rc<Snapshot>>> = RefCell::default();
}

/// The snapshot of `conversation_key`'s agent: this isolate's while fresh,
/// else read from `database` in one batch. A failed batch is an error (a turn
/// cannot run without its identity); links or limits that do not read are
/// logged and left out (the turn runs without the link tools, or reads its
/// limits itself).
pub async fn of(env: &Env, database: &D1Database, conversation_key: &str) -> Result<Rc<Snapshot>> {
    let agent = crate::agents::agent_of(conversation_key);
    let (now, edits) = (crate::runtime::http::now_ms(), crate::runtime::config::edits());
    let fresh_ms = crate::runtime::config::load(env).shared_reads_fresh_ms;
    let kept = KEPT.with(|kept| kept.borrow().get(agent).cloned());
    if let Some(snapshot) = kept.filter(|snapshot| snapshot.is_fresh(now, edits, fresh_ms)) {
        return Ok(snapshot);
    }
    let statements = vec![
        identity::documents_statement(database, agent)?,
        crate::skills::store::enabled_statement(database, agent)?,
        crate::links::store::list_statement(database),
        crate::agents::store::settings_statement(database, conversation_key)?,
        identity::overridden_statement(database),
        spend::overrides_statement(database, MOST_LIMITS + 1)?,
        crate::mcp::servers::any_statement(database),
    ];
    crate::ops::count(crate::ops::Op::AgentSnapshot);
    crate::ops::add(crate::ops::Op::D1SnapshotQuery, statements.len() as u64);
    let results = read_batch(database, statements).await?;
    let [documents, skills, links, settings, overridden, limits, mcp_servers] = results.as_slice() else {
        return Err(worker::Error::RustError(format!("D1 answered {} results for 7 statements", results.len())));
    };
    let unread = |what: &'static str, error: &worker::Error| {
        LogLine::warn(what).conversation(conversation_key).reason(error).emit();
    };
    let links = crate::links::store::links_in(links).unwrap_or_else(|error| {
        unread("links_unreadable", &error);
        Vec::new()
    });
    let limits = match limits.results::<LimitOverride>() {
        Ok(rows) => (rows.len() <= MOST_LIMITS).then_some(rows),
        Err(error) => {
            unread("budget_unread", &error);
            None
        }
    };
    let mut overridden = identity::overridden_in(overridden)?;
    overridden.sort();
    let snapshot = Rc::new(Snapshot {
        at: now,
        edits,
        documents: identity::rows_of(documents)?,
        skills: skills.results()?,
        links,
        settings: crate::agents::store::settings_in(settings)?,
        overridden,
        limits,
        mcp_servers: crate::mcp::servers::any_in(mcp_servers).unwrap_or(true),
    });
    KEPT.with(|kept| kept.borrow_mut().insert(agent.to_string(), snapshot.clone()));
    Ok(snapshot)
}

/// `spender`'s limit rows from their agent's snapshot, for a step outside a
/// channel turn (a branch, a worker); None (the step reads them with its
/// spend) when the snapshot or its limits cannot be had.
pub async fn limits(env: &Env, spender: &Spender) -> Option<Vec<spend::Row>> {
    let database = env.d1(crate::runtime::config::DATABASE_BINDING).ok()?;
    of(env, &database, &spender.conversation_key).await.ok()?.limits_for(spender)
}
