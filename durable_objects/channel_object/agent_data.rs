//! What a channel turn reads in D1, in one round trip: its budget's standing,
//! its agent (the identity documents, the enabled skills, the links and the
//! agent's settings) and its people's profiles. Each query and the reading of
//! its rows stay in their own capability's store; only the batching is here.
//! Read each turn, never cached, so an operator's edit reaches the next turn.

use worker::{D1Database, Result};

use crate::agents::rules::AgentSettings;
use crate::budget::rules::{Budgets, Scope, Unsent};
use crate::budget::store as spend;
use crate::budget::usage::Spender;
use crate::identity::rules::IdentityTexts;
use crate::links::rules::Link;
use crate::log_line::LogLine;
use crate::people::rules::Profile;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::skills::rules::SkillSummary;

/// The turn's agent, as D1 holds it now.
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

/// Reads the turn's budget standing (adding what the object holds
/// `unsent`), the agent of `conversation_key` and the profiles of
/// `speakers`, in one `batch` (six statements, one call to D1). A failed
/// batch fails the turn's reading, as the identity's own read did; links
/// that do not read are left out (the turn goes on without the link tools),
/// a standing that does not read lets the turn run, and profiles that do not
/// read leave the people as the messages say.
pub(super) async fn read(
    env: &worker::Env,
    database: &D1Database,
    budgets: &Budgets,
    spender: &Spender,
    unsent: Unsent,
    speakers: Vec<Profile>,
) -> Result<TurnReads> {
    let conversation_key = spender.conversation_key.as_str();
    let agent = crate::agents::agent_of(conversation_key);
    let mut statements = vec![
        crate::identity::store::statement(database, conversation_key)?,
        crate::skills::store::enabled_statement(database, agent)?,
        crate::links::store::list_statement(database),
        crate::agents::store::settings_statement(database, conversation_key)?,
        spend::verdict_statement(database, spender, now_ms(), crate::runtime::d1::unsharded(env))?,
    ];
    statements.extend(crate::people::store::read_statement(database, &speakers)?);
    // With D1 sharded, the standing's spend is read from each shard meanwhile.
    let (results, elsewhere) = futures_util::join!(
        crate::runtime::d1::batch(database, statements),
        spend::spent_on_shards(env, spender, now_ms())
    );
    let results = results?;
    let [identity, skills, links, settings, standing, people @ ..] = results.as_slice() else {
        return Err(worker::Error::RustError(format!("D1 answered {} results for 5 or 6 statements", results.len())));
    };
    let links = crate::links::store::links_in(links).unwrap_or_else(|error| {
        LogLine::warn("links_unreadable").conversation(conversation_key).reason(&error).emit();
        Vec::new()
    });
    let standing = elsewhere.and_then(|mut rows| {
        rows.extend(spend::rows_of(standing)?);
        spend::verdict_of(rows, budgets, spender, unsent)
    });
    let over_budget = spend::used_up(standing, spender);
    let people = match people.first() {
        Some(rows) => crate::people::store::profiles_in(rows, speakers.clone()).unwrap_or_else(|error| {
            LogLine::warn("people_unread").conversation(conversation_key).reason(&error).emit();
            speakers
        }),
        None => speakers,
    };
    let agent = AgentData {
        identity: rendered(crate::identity::store::texts_of(identity)?)?,
        skills: skills.results()?,
        links,
        settings: crate::agents::store::settings_in(settings)?,
    };
    Ok(TurnReads { agent, people, over_budget })
}

fn rendered(texts: IdentityTexts) -> Result<String> {
    texts.render().map_err(|error| worker::Error::RustError(error.to_string()))
}
