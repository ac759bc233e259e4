//! The channel's `open_skill`: one of the agent's enabled skills, its
//! instructions and its files' listing, read from D1 when the model asks.
//! Who may: any turn of a conversation of the agent (the skills are the
//! agent's, installed by an operator); what it may read: that agent's enabled
//! skills only; what it costs: one D1 query, an answer of at most the
//! skill's capped size.

use crate::llm::tool::{answer, Run};
use crate::runtime::config::redactor;
use crate::schedules::tools::ChannelTools;
use crate::skills::arguments::{OpenSkill, OpenSkillArguments};
use crate::skills::rules::{agent_of, check_name, opened};
use crate::skills::store;

impl Run<OpenSkill> for ChannelTools<'_> {
    async fn run(&self, arguments: OpenSkillArguments) -> String {
        answer(open_skill(self, arguments.name.trim()).await)
    }
}

async fn open_skill(tools: &ChannelTools<'_>, name: &str) -> Result<String, String> {
    check_name(name).map_err(|error| error.to_string())?;
    let agent = agent_of(tools.conversation_key);
    let files = store::enabled_files(tools.db, agent, name).await.map_err(|error| error.to_string())?;
    let files = files.ok_or_else(|| format!("there is no enabled skill named {name:?} (the prompt lists them)"))?;
    // Checked for secrets when installed; scrubbed again like any tool output.
    let text = opened(name, &files).map_err(|error| error.to_string())?;
    Ok(redactor().redact(&text).into_owned())
}
