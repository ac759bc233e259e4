//! What a channel turn reads in D1, in one round trip: its budget's standing,
//! its agent (the identity documents, the enabled skills, the links and the
//! agent's settings) and its people's profiles. Each query and the reading of
//! its rows stay in their own capability's store; only the batching is here.
//! With `SHARED_READS_FRESH_MS` set (production: 30 s), the object reuses
//! what it read of the agent, the budget's limits and its people's records
//! for that long, or until an operator's edit in its isolate: a turn then
//! reads only today's spend and anyone new (docs/scale.md, "D1 shards").

use std::cell::RefCell;

use worker::{D1Database, Result};

use crate::agents::rules::AgentSettings;
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

/// What an object keeps of its turns' shared reads, and when it read them.
#[derive(Clone)]
pub(super) struct Kept {
    at: i64,
    edits: u64,
    agent: AgentData,
    /// The limits in force (the standing's rows but its spend).
    limits: Vec<spend::Row>,
    /// People's records, by the platform ids they were read for.
    records: Vec<people::Row>,
}

/// Reads the turn's budget standing (adding what the object holds
/// `unsent`), the agent of `conversation_key` and the profiles of
/// `speakers`, in one `batch` (six statements, one call to D1), reusing what
/// `kept` holds while it is fresh. A failed batch fails the turn's reading,
/// as the identity's own read did; links that do not read are left out (the
/// turn goes on without the link tools), a standing that does not read lets
/// the turn run, and profiles that do not read leave the people as the
/// messages say.
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
    let reuse = kept.borrow().clone().filter(|kept| kept.edits == edits && now - kept.at < fresh_ms);
    let known = |person: &Profile| {
        reuse.as_ref().is_some_and(|kept| kept.records.iter().any(|row| people::record_key(row) == Some(&person.key)))
    };
    let unknown: Vec<Profile> = speakers.iter().filter(|person| !known(person)).cloned().collect();
    let conversation_key = spender.conversation_key.as_str();
    let unsharded = crate::runtime::d1::unsharded(env);
    let mut statements = match (&reuse, unsharded) {
        (None, _) => agent_statements(database, spender, now, unsharded)?,
        (Some(_), true) => vec![spend::spent_statement(database, spender, now)?],
        (Some(_), false) => Vec::new(),
    };
    let people_at = statements.len();
    if unsharded {
        statements.extend(people::read_statement(database, &unknown)?);
    }
    // With D1 sharded, the standing's spend is read from the shards meanwhile.
    let read = async {
        match statements.is_empty() {
            true => Ok(Vec::new()),
            false => crate::runtime::d1::read_batch(database, statements).await,
        }
    };
    let (results, elsewhere, on_shards) =
        futures_util::join!(read, spend::spent_on_shards(env, spender, now), people::records_on_shards(env, &unknown));
    let results = results?;
    let (mut fresh, spent) = match reuse {
        Some(kept) => (kept, results.first().filter(|_| unsharded).map(spend::rows_of).transpose()),
        None => {
            let (fresh, spent) = agent_in(&results, conversation_key, now, edits)?;
            (fresh, Ok(Some(spent)))
        }
    };
    let records = results.get(people_at).map(people::records_in).unwrap_or(Ok(Vec::new()));
    match records.and_then(|records| Ok([records, on_shards?].concat())) {
        Ok(records) => fresh.records.extend(records),
        Err(error) => LogLine::warn("people_unread").conversation(conversation_key).reason(&error).emit(),
    }
    let standing = elsewhere.and_then(|mut rows| {
        rows.extend(spent?.unwrap_or_default());
        rows.extend(fresh.limits.iter().cloned());
        spend::verdict_of(rows, budgets, spender, unsent)
    });
    let over_budget = spend::used_up(standing, spender);
    let people = people::profiles_from(&fresh.records, speakers);
    let agent = fresh.agent.clone();
    *kept.borrow_mut() = Some(fresh);
    Ok(TurnReads { agent, people, over_budget })
}

/// The statements that read the agent and the limits (and, unsharded, the spend).
fn agent_statements(
    database: &D1Database,
    spender: &Spender,
    now: i64,
    unsharded: bool,
) -> Result<Vec<worker::D1PreparedStatement>> {
    let conversation_key = spender.conversation_key.as_str();
    let agent = crate::agents::agent_of(conversation_key);
    Ok(vec![
        crate::identity::store::statement(database, conversation_key)?,
        crate::skills::store::enabled_statement(database, agent)?,
        crate::links::store::list_statement(database),
        crate::agents::store::settings_statement(database, conversation_key)?,
        spend::verdict_statement(database, spender, now, unsharded)?,
    ])
}

/// The agent and the limits from [`agent_statements`]' results, and the standing's spend rows.
fn agent_in(
    results: &[worker::D1Result],
    conversation_key: &str,
    now: i64,
    edits: u64,
) -> Result<(Kept, Vec<spend::Row>)> {
    let [identity, skills, links, settings, standing, ..] = results else {
        return Err(worker::Error::RustError(format!("D1 answered {} results for 5 or 6 statements", results.len())));
    };
    let links = crate::links::store::links_in(links).unwrap_or_else(|error| {
        LogLine::warn("links_unreadable").conversation(conversation_key).reason(&error).emit();
        Vec::new()
    });
    let agent = AgentData {
        identity: rendered(crate::identity::store::texts_of(identity)?)?,
        skills: skills.results()?,
        links,
        settings: crate::agents::store::settings_in(settings)?,
    };
    // A standing that does not read lets the turn run.
    let rows = spend::rows_of(standing).unwrap_or_else(|error| {
        LogLine::warn("budget_unread").conversation(conversation_key).reason(&error).emit();
        Vec::new()
    });
    let (spent, limits) = rows.into_iter().partition(spend::Row::is_spend);
    Ok((Kept { at: now, edits, agent, limits, records: Vec::new() }, spent))
}

fn rendered(texts: IdentityTexts) -> Result<String> {
    texts.render().map_err(|error| worker::Error::RustError(error.to_string()))
}
