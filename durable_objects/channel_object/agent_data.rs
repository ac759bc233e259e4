//! What a channel turn reads in D1, in one round trip: its budget's standing,
//! its agent (the identity documents, the enabled skills, the links and the
//! agent's settings: `crate::agents::snapshot`, kept per isolate) and its
//! people's profiles. Each query and the reading of its rows stay in their
//! own capability's store; only the batching is here. With
//! `SHARED_READS_FRESH_MS` set (production: 30 s), the object reuses its
//! people's records for that long, or until an operator's edit in its
//! isolate, and every conversation of the agent in the isolate shares the
//! agent's reads: a turn then reads only today's spend and anyone new
//! (docs/scale.md, "The agent's reads, per isolate").

use std::cell::RefCell;

use worker::{D1Database, D1Result, Result};

use crate::agents::rules::AgentSettings;
use crate::agents::snapshot::Snapshot;
use crate::budget::rules::{Budgets, Scope, Unsent};
use crate::budget::store as spend;
use crate::budget::usage::Spender;
use crate::identity::rules::IdentityTexts;
use crate::links::rules::Link;
use crate::log_line::LogLine;
use crate::people::rules::Profile;
use crate::people::store as people;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::skills::rules::SkillSummary;

/// The turn's agent, as D1 holds it now.
#[derive(Clone)]
pub(super) struct AgentData {
    /// The identity documents, rendered into the system prompt (so the
    /// prompt's size estimate, which decides compaction, counts them).
    pub identity: String,
    pub skills: Vec<SkillSummary>,
    /// Every link (the link tools pick the agent's own).
    pub links: Vec<Link>,
    pub settings: AgentSettings,
}

/// What a turn read: its agent, its people, and whether a budget is used up.
pub(super) struct TurnReads {
    pub agent: AgentData,
    /// The people writing in the turn, with their profiles where D1 has them.
    pub people: Vec<Profile>,
    pub over_budget: Option<Scope>,
}

/// What an object keeps of its people's records, and when it read them.
#[derive(Clone, Default)]
pub(super) struct Kept {
    at: i64,
    edits: u64,
    /// People's records, by the platform ids they were read for.
    records: Vec<people::Row>,
}

/// Reads the turn's budget standing (adding what the object holds
/// `unsent`), the agent of `conversation_key` and the profiles of
/// `speakers`: the agent's snapshot, today's spend and anyone `kept` does
/// not hold fresh, at once (a conversation with its own identity override,
/// or a deployment with more limit overrides than a snapshot keeps, reads
/// those after). A failed read of the agent fails the turn's reading, as the
/// identity's own read did; a standing that does not read lets the turn run,
/// and profiles that do not read leave the people as the messages say.
pub(super) async fn read(
    env: &worker::Env,
    database: &D1Database,
    kept: &RefCell<Option<Kept>>,
    budgets: &Budgets,
    spender: &Spender,
    unsent: Unsent,
    speakers: Vec<Profile>,
) -> Result<TurnReads> {
    let (now, edits) = (now_ms(), crate::runtime::config::edits());
    let fresh_ms = crate::runtime::config::load(env).shared_reads_fresh_ms;
    let mut fresh = kept.borrow().clone().filter(|kept| kept.edits == edits && now - kept.at < fresh_ms);
    let known = |person: &Profile| {
        fresh.as_ref().is_some_and(|kept| kept.records.iter().any(|row| people::record_key(row) == Some(&person.key)))
    };
    let unknown: Vec<Profile> = speakers.iter().filter(|person| !known(person)).cloned().collect();
    let conversation_key = spender.conversation_key.as_str();
    let unsharded = crate::runtime::d1::unsharded(env);
    // With D1 sharded, the spend and the people are read on their shards meanwhile.
    let statements: Vec<_> = match unsharded {
        true => [Some(spend::spent_statement(database, spender, now)?), people::read_statement(database, &unknown)?]
            .into_iter()
            .flatten()
            .collect(),
        false => Vec::new(),
    };
    let (snapshot, results, elsewhere, on_shards) = futures_util::join!(
        crate::agents::snapshot::of(env, database, conversation_key),
        batch_of(database, statements),
        spend::spent_on_shards(env, spender, now),
        people::records_on_shards(env, &unknown)
    );
    let (snapshot, results) = (snapshot?, results?);
    let (identity, limits) = own_reads(database, &snapshot, spender, now).await?;
    let mut fresh = fresh.take().unwrap_or(Kept { at: now, edits, records: Vec::new() });
    let mut results = results.iter();
    let spent = match unsharded {
        true => results.next().map(spend::rows_of).transpose(),
        false => Ok(None),
    };
    let records = results.next().map(people::records_in).unwrap_or(Ok(Vec::new()));
    match records.and_then(|records| Ok([records, on_shards?].concat())) {
        Ok(records) => fresh.records.extend(records),
        Err(error) => LogLine::warn("people_unread").conversation(conversation_key).reason(&error).emit(),
    }
    let standing = elsewhere.and_then(|mut rows| {
        rows.extend(spent?.unwrap_or_default());
        rows.extend(limits?);
        spend::verdict_of(rows, budgets, spender, unsent)
    });
    let over_budget = spend::used_up(standing, spender);
    let people = people::profiles_from(&fresh.records, speakers);
    *kept.borrow_mut() = Some(fresh);
    let agent = AgentData {
        identity: rendered(identity)?,
        skills: snapshot.skills.clone(),
        links: snapshot.links.clone(),
        settings: snapshot.settings.clone(),
    };
    Ok(TurnReads { agent, people, over_budget })
}

/// One batch of `statements` (none: no call).
async fn batch_of(database: &D1Database, statements: Vec<worker::D1PreparedStatement>) -> Result<Vec<D1Result>> {
    match statements.is_empty() {
        true => Ok(Vec::new()),
        false => crate::runtime::d1::read_batch(database, statements).await,
    }
}

/// What the turn reads itself that the snapshot does not keep: its
/// conversation's identity override, and its limits when the deployment has
/// more overrides than a snapshot keeps (one batch, only then). The limits
/// are an error to the standing alone.
async fn own_reads(
    database: &D1Database,
    snapshot: &Snapshot,
    spender: &Spender,
    now: i64,
) -> Result<(IdentityTexts, Result<Vec<spend::Row>>)> {
    let conversation_key = spender.conversation_key.as_str();
    let (identity, limits) = (snapshot.identity_for(conversation_key), snapshot.limits_for(spender));
    let mut statements = Vec::new();
    if identity.is_none() {
        statements.push(crate::identity::store::statement(database, conversation_key)?);
    }
    if limits.is_none() {
        statements.push(spend::verdict_statement(database, spender, now, false)?);
    }
    let results = batch_of(database, statements).await?;
    let mut results = results.iter();
    let identity = match identity {
        Some(texts) => texts,
        None => crate::identity::store::texts_of(results.next().ok_or_else(|| missing("identity"))?)?,
    };
    let limits = match limits {
        Some(rows) => Ok(rows),
        None => results.next().ok_or_else(|| missing("limits")).and_then(spend::rows_of),
    };
    Ok((identity, limits))
}

fn missing(what: &str) -> worker::Error {
    worker::Error::RustError(format!("D1 answered no result for the {what}"))
}

fn rendered(texts: IdentityTexts) -> Result<String> {
    texts.render().map_err(|error| worker::Error::RustError(error.to_string()))
}
