//! The link tools, offered only to an agent that has links:
//! `send_agent_message` (to a linked agent, in the envelope format) and, in a
//! link conversation, `conclude_link` (ends it and hands the outcome to the
//! conversation the other side opened it from).

use worker::{D1Database, Env};

use crate::channel::turn::ToolHost;
use crate::inbound::ReplyAddress;
use crate::links::arguments::{
    ConcludeLink, ConcludeLinkArguments, LinkToolSet, SendAgentMessage, SendAgentMessageArguments,
};
use crate::links::deliver::{hand_outcome, hand_over, tell_closed};
use crate::links::rules::{self, agent_of, envelope, envelope_text, message_type, parse_key, Link, Refusal};
use crate::links::store::{self as links, Counted};
use crate::llm::tool::{answer, Run, Tool};
use crate::llm::ToolSpec;
use crate::process::envelope::MessageType;

/// The link tools as a turn's host: the links configured, read once per turn.
pub struct LinkTools<'a> {
    pub env: &'a Env,
    pub db: &'a D1Database,
    pub conversation_key: &'a str,
    pub reply_address: &'a ReplyAddress,
    pub links: Vec<Link>,
    pub now_ms: i64,
}

impl LinkTools<'_> {
    /// The agent this conversation belongs to.
    fn agent(&self) -> &str {
        agent_of(self.conversation_key)
    }
}

impl ToolHost for LinkTools<'_> {
    async fn call(&self, name: &str, arguments: &serde_json::Value) -> Option<String> {
        if !rules::has_links(&self.links, self.agent()) {
            return None;
        }
        LinkToolSet::call(self, name, arguments).await.map(answer)
    }

    /// `send_agent_message` when the agent has links; `conclude_link` too in a link conversation.
    fn extra_specs(&self) -> Vec<ToolSpec> {
        if !rules::has_links(&self.links, self.agent()) {
            return Vec::new();
        }
        let mut specs = vec![SendAgentMessage::spec()];
        if parse_key(self.conversation_key).is_some() {
            specs.push(ConcludeLink::spec());
        }
        specs
    }
}

impl Run<SendAgentMessage> for LinkTools<'_> {
    async fn run(&self, arguments: SendAgentMessageArguments) -> String {
        answer(self.send(arguments).await)
    }
}

impl Run<ConcludeLink> for LinkTools<'_> {
    async fn run(&self, arguments: ConcludeLinkArguments) -> String {
        answer(self.conclude(arguments).await)
    }
}

fn failed(error: worker::Error) -> String {
    format!("the link could not be reached: {error}")
}

impl LinkTools<'_> {
    async fn send(&self, arguments: SendAgentMessageArguments) -> Result<String, String> {
        let message = arguments.message.trim();
        if message.is_empty() {
            return Err("`message` must be a non-empty string".into());
        }
        let agent = self.agent();
        let to = arguments.to.trim();
        let link = rules::may_send(&self.links, agent, to).map_err(|refusal| refusal.to_string())?;
        let pair = links::pair(agent, to);
        // From a link conversation the exchange goes on, never reopens (a loop ends at the cap).
        if parse_key(self.conversation_key).is_none() {
            links::open(self.db, &pair, agent, self.conversation_key, self.reply_address, self.now_ms)
                .await
                .map_err(failed)?;
        }
        let send_id = format!("{}:{}:{to}", self.conversation_key, self.now_ms);
        let turn = match links::count(self.db, &pair, &send_id, self.now_ms).await.map_err(failed)? {
            Counted::Turn(turn) => turn,
            Counted::Repeat => return Ok(format!("already sent to {to}")),
            Counted::CapReached => {
                tell_closed(self.env, agent, to, &pair, self.now_ms).await.map_err(failed)?;
                return Err(Refusal::AtCap(agent.into(), to.into()).to_string());
            }
            Counted::Closed => return Err(Refusal::AtCap(agent.into(), to.into()).to_string()),
        };
        let kind = message_type(link, agent, turn == 1);
        let text = envelope_text(&envelope(agent, to, kind, turn as u32, self.now_ms, message));
        hand_over(self.env, agent, to, &text, &format!("link:{send_id}"), self.now_ms).await.map_err(failed)?;
        Ok(match kind {
            MessageType::Task => format!("task sent to {to}: its outcome comes back to this conversation"),
            _ => format!("sent to {to}: its answer comes back in your link conversation with it"),
        })
    }

    async fn conclude(&self, arguments: ConcludeLinkArguments) -> Result<String, String> {
        let outcome = arguments.outcome.trim();
        if outcome.is_empty() {
            return Err("`outcome` must say what was done or found".into());
        }
        let (agent, peer) =
            parse_key(self.conversation_key).ok_or_else(|| Refusal::NotALinkConversation.to_string())?;
        let pair = links::pair(agent, peer);
        let exchange = links::exchange(self.db, &pair).await.map_err(failed)?;
        let Some(exchange) = exchange.filter(|exchange| exchange.closed_at.is_none()) else {
            return Err(format!("the link conversation with {peer} is already closed"));
        };
        if !links::close(self.db, &pair, Some(outcome), self.now_ms).await.map_err(failed)? {
            return Err(format!("the link conversation with {peer} is already closed"));
        }
        let opener = exchange.opened_by.clone();
        let text = envelope_text(&envelope(agent, &opener, MessageType::Done, 0, self.now_ms, outcome));
        match hand_outcome(self.env, &exchange, agent, &text, self.now_ms).await.map_err(failed)? {
            true => Ok(format!("concluded: the outcome goes back to {opener}")),
            false => Ok("concluded (the opener's conversation could not be found)".into()),
        }
    }
}
