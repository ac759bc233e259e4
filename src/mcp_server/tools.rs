//! What each tool of the MCP server does, for one authenticated client:
//! `ask` (one model call as the agent, over the memories the client may
//! read; priced), `post` (through the conversation's outbox, once per
//! idempotency key), `search_memories` (shared memories and those of the
//! client's conversations only) and `list_tasks` (the board of the client's
//! conversations). A tool that fails says why in its result (`isError`).

use std::collections::BTreeSet;

use serde_json::{json, Value};
use worker::{D1Database, Env};

use crate::budget::rules::Spend;
use crate::budget::usage::{self, Spender};
use crate::channel::routes::ChannelRoute;
use crate::config::Config;
use crate::llm::client::HttpModel;
use crate::llm::{ChatMessage, ChatModel, ChatRequest, Role};
use crate::mcp_server::rules::{
    post_entry_id, text_argument, tool_error, tool_result, ServerTool, MAX_IDEMPOTENCY_KEY, MAX_TEXT_CHARS,
};
use crate::mcp_server::store::Client;
use crate::memory::recall::{recall, RecallRequest};
use crate::memory::scope::Viewer;
use crate::memory::types::Memory;
use crate::runtime::channel_stub;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// Memories `ask` reads at most.
const ASK_SOURCES: u64 = 5;
/// The process name an `ask`'s spend is recorded under.
const ASK_PROCESS: &str = "mcp_ask";

/// A tool's result and what it cost (millionths of a dollar).
pub struct Ran {
    pub result: Value,
    pub micro_usd: u64,
    pub outcome: &'static str,
}

fn ok(result: Value, micro_usd: u64) -> Ran {
    Ran { result: tool_result(result), micro_usd, outcome: "ok" }
}

fn failed(message: &str) -> Ran {
    Ran { result: tool_error(message), micro_usd: 0, outcome: "error" }
}

pub async fn run(
    config: &Config,
    env: &Env,
    db: &D1Database,
    client: &Client,
    tool: ServerTool,
    arguments: &Value,
) -> Ran {
    let ran = match tool {
        ServerTool::Ask => ask(config, env, db, client, arguments).await,
        ServerTool::Post => post(env, client, arguments).await,
        ServerTool::SearchMemories => search_memories(config, env, db, client, arguments).await,
        ServerTool::ListTasks => list_tasks(db, client, arguments).await,
    };
    ran.unwrap_or_else(|error| {
        crate::log_line::LogLine::warn("mcp_server_tool_failed").reason(&error).emit();
        failed("the tool failed; try again later")
    })
}

/// The viewer keys whose memories a client may read: one no memory is saved
/// under (so it sees the shared ones), and each conversation in its scope.
fn viewer_keys(client: &Client) -> Vec<String> {
    let mut keys = vec![crate::agents::within(&client.agent, &format!("mcp-client:{}", client.id))];
    keys.extend(client.scope.conversations.iter().cloned());
    keys
}

/// The memories a client may read that match `query` (newest when empty), each seen once.
async fn memories_for(
    config: &Config,
    env: &Env,
    db: &D1Database,
    client: &Client,
    query: &str,
    limit: u64,
) -> worker::Result<Vec<Memory>> {
    let request = RecallRequest::new(Some(query).filter(|query| !query.is_empty()), None, None, None, Some(limit));
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    for key in viewer_keys(client) {
        for memory in recall(config, env, db, Viewer::Conversation(&key), &request).await? {
            if seen.insert(memory.id.clone()) {
                found.push(memory);
            }
        }
    }
    found.truncate(limit as usize);
    Ok(found)
}

fn shown(memory: &Memory) -> Value {
    json!({ "id": memory.id, "type": memory.memory_type.as_str(), "content": memory.content,
            "importance": memory.importance, "created_at": memory.created_at })
}

async fn search_memories(
    config: &Config,
    env: &Env,
    db: &D1Database,
    client: &Client,
    arguments: &Value,
) -> worker::Result<Ran> {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default().trim();
    if query.chars().count() > MAX_TEXT_CHARS {
        return Ok(failed("`query` is too long"));
    }
    let limit = arguments.get("limit").and_then(Value::as_u64).unwrap_or(10).clamp(1, 20);
    let found = memories_for(config, env, db, client, query, limit).await?;
    Ok(ok(json!({ "memories": found.iter().map(shown).collect::<Vec<_>>() }), 0))
}

async fn list_tasks(db: &D1Database, client: &Client, arguments: &Value) -> worker::Result<Ran> {
    let status = arguments.get("status").and_then(Value::as_str).map(str::trim).filter(|status| !status.is_empty());
    let mut tasks = Vec::new();
    for key in &client.scope.conversations {
        tasks.extend(crate::tasks::store::list(db, Some(key), status).await?);
    }
    let tasks: Vec<Value> = tasks
        .iter()
        .map(|task| {
            json!({ "id": task.id, "conversation": task.conversation_key, "title": task.title,
                    "description": task.description, "status": task.status, "priority": task.priority,
                    "created_at": task.created_at, "completed_at": task.completed_at })
        })
        .collect();
    Ok(ok(json!({ "tasks": tasks }), 0))
}

async fn post(env: &Env, client: &Client, arguments: &Value) -> worker::Result<Ran> {
    let read = || -> Result<(&str, &str, &str), String> {
        let conversation = text_argument(arguments, "conversation", 200)?;
        let text = text_argument(arguments, "text", MAX_TEXT_CHARS)?;
        let key = text_argument(arguments, "idempotency_key", MAX_IDEMPOTENCY_KEY)?;
        if key.chars().any(char::is_control) {
            return Err("`idempotency_key` may not hold control characters".into());
        }
        if !client.scope.has_conversation(conversation) {
            return Err(format!("this client may not post to `{conversation}`"));
        }
        Ok((conversation, text, key))
    };
    let (conversation, text, key) = match read() {
        Ok(read) => read,
        Err(why) => return Ok(failed(&why)),
    };
    let body = json!({ "conversation_key": conversation, "entry_id": post_entry_id(&client.id, key), "text": text });
    let request = channel_stub::request(ChannelRoute::ExternalPost, "", Some(body.to_string()), &[])?;
    let mut response = channel_stub::send(env, conversation, request).await?;
    if response.status_code() != 200 {
        let why = response.text().await.unwrap_or_default();
        return Ok(failed(&format!("not posted: {why}")));
    }
    let answer: Value = response.json().await?;
    let result = json!({ "conversation": conversation, "status": answer["status"],
                         "message_id": answer["message_id"], "repeat": answer["repeat"] });
    match answer["status"].as_str() {
        Some("sent") => Ok(ok(result, 0)),
        _ => Ok(Ran { result: tool_error(&format!("not sent: {result}")), micro_usd: 0, outcome: "not_sent" }),
    }
}

/// The system prompt of an `ask`: the agent answers from its memories only.
fn ask_prompt(agent: &str, sources: &[Memory]) -> String {
    let mut prompt = format!(
        "You are the agent `{agent}`. Another agent asks you a question through your tool server. \
         Answer briefly and truthfully from what you remember below; say so when you do not know. \
         Cite a memory by its id in brackets when you use it.\n\nWhat you remember:\n"
    );
    if sources.is_empty() {
        prompt.push_str("(nothing relevant)\n");
    }
    for memory in sources {
        prompt.push_str(&format!("- [{}] {}\n", memory.id, memory.content));
    }
    prompt
}

async fn ask(config: &Config, env: &Env, db: &D1Database, client: &Client, arguments: &Value) -> worker::Result<Ran> {
    let question = match text_argument(arguments, "question", MAX_TEXT_CHARS) {
        Ok(question) => question,
        Err(why) => return Ok(failed(&why)),
    };
    let sources = memories_for(config, env, db, client, question, ASK_SOURCES).await?;
    let model = match HttpModel::new(config, env, &config.channel_model) {
        Ok(model) => model,
        Err(error) => return Ok(failed(&format!("no model: {error}"))),
    };
    let request = ChatRequest {
        model: model.model_name().to_string(),
        messages: vec![
            ChatMessage::new(Role::System, ask_prompt(&client.agent, &sources)),
            ChatMessage::new(Role::User, question),
        ],
        tools: Vec::new(),
    };
    let completion = model.complete(&request).await;
    let spend: Spend = model.spent();
    let spender = Spender::conversation(&format!("mcp:{}", client.id));
    usage::record(env, &spender, ASK_PROCESS, spend, now_ms()).await?;
    let answer = match completion.map(|completion| completion.content.unwrap_or_default()) {
        Ok(answer) if !answer.trim().is_empty() => answer,
        Ok(_) => return Ok(Ran { micro_usd: spend.micro_usd, ..failed("the model gave no answer") }),
        Err(error) => {
            return Ok(Ran { micro_usd: spend.micro_usd, ..failed(&format!("the model did not answer: {error}")) })
        }
    };
    let cited: Vec<Value> = sources
        .iter()
        .map(|memory| json!({ "id": memory.id, "summary": memory.content.chars().take(200).collect::<String>() }))
        .collect();
    Ok(ok(json!({ "answer": answer, "sources": cited }), spend.micro_usd))
}
