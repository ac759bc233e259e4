//! What a channel turn reads about its agent in D1, in one round trip: the
//! identity documents, the enabled skills, the links and the agent's
//! settings. Each query and the reading of its rows stay in their own
//! capability's store; only the batching is here. Read each turn, never
//! cached, so an operator's edit reaches the next turn.

use worker::{D1Database, Result};

use crate::agents::rules::AgentSettings;
use crate::identity::rules::IdentityTexts;
use crate::links::rules::Link;
use crate::log_line::LogLine;
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

/// Reads the agent of `conversation_key` in one `batch` (four statements, one
/// call to D1 instead of four). A failed batch fails the turn's reading, as
/// the identity's own read did; links that do not read are left out (the
/// turn goes on without the link tools, as before).
pub(super) async fn read(database: &D1Database, conversation_key: &str) -> Result<AgentData> {
    let agent = crate::agents::agent_of(conversation_key);
    let statements = vec![
        crate::identity::store::statement(database, conversation_key)?,
        crate::skills::store::enabled_statement(database, agent)?,
        crate::links::store::list_statement(database),
        crate::agents::store::settings_statement(database, conversation_key)?,
    ];
    let results = crate::runtime::d1::batch(database, statements).await?;
    let [identity, skills, links, settings] = results.as_slice() else {
        return Err(worker::Error::RustError(format!("D1 answered {} results for 4 statements", results.len())));
    };
    let links = crate::links::store::links_in(links).unwrap_or_else(|error| {
        LogLine::warn("links_unreadable").conversation(conversation_key).reason(&error).emit();
        Vec::new()
    });
    Ok(AgentData {
        identity: rendered(crate::identity::store::texts_of(identity)?)?,
        skills: skills.results()?,
        links,
        settings: crate::agents::store::settings_in(settings)?,
    })
}

fn rendered(texts: IdentityTexts) -> Result<String> {
    texts.render().map_err(|error| worker::Error::RustError(error.to_string()))
}
