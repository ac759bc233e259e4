//! The MCP tools one process step is offered: every configured server's
//! (from the cache while it is fresh), each with its client, and a note for
//! the process about a server it cannot use now.

use serde_json::Value;
use worker::{D1Database, Env};

use crate::config::Config;
use crate::llm::ToolSpec;
use crate::log_line::LogLine;
use crate::mcp::client::Client;
use crate::mcp::elicit::Asker;
use crate::mcp::rules::{self as mcp, OfferedTool};
use crate::mcp::servers::{record_down, server, servers, TOOLS_FRESH_MS};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// The MCP tools one process step is offered, with a client per server.
pub struct Toolbox<'a> {
    clients: Vec<Client<'a>>,
    offered: Vec<OfferedTool>,
    /// What the process is told of servers it cannot use now.
    pub notes: Vec<String>,
}

impl<'a> Toolbox<'a> {
    /// No server's tools (a step whose agent's snapshot says none is configured).
    pub fn none() -> Toolbox<'a> {
        Toolbox { clients: Vec::new(), offered: Vec::new(), notes: Vec::new() }
    }

    /// The servers' tools, from the cache while it is fresh; a stale list is
    /// refreshed, and a server that cannot be reached costs a note (its last
    /// known tools stay offered; a call to it says it is down). A branch gets
    /// only servers opened to branches, and only tools that need no approval.
    /// Only the servers `permits` (an agent's settings) are opened.
    pub async fn open(
        config: &'a Config,
        env: &'a Env,
        db: &'a D1Database,
        for_branch: bool,
        permits: impl Fn(&str) -> bool,
    ) -> Toolbox<'a> {
        let mut toolbox = Toolbox::none();
        let servers = match servers(db).await {
            Ok(servers) => servers,
            Err(error) => {
                LogLine::warn("mcp_servers_unread").reason(&error).emit();
                return toolbox;
            }
        };
        let now = now_ms();
        let opened =
            servers.into_iter().filter(|server| (!for_branch || server.settings.branches) && permits(&server.name));
        for server in opened {
            let mut client = Client::new(config, env, db, server);
            let fresh = client.server.tools_at.is_some_and(|at| now - at < TOOLS_FRESH_MS) && !client.server.stale;
            if client.server.is_down(now) {
                toolbox.notes.push(down_note(&client.server.name, client.server.last_error.as_deref()));
            } else if !fresh {
                match client.refresh().await {
                    Ok(tools) => client.server.tools = tools,
                    Err(failure) => {
                        let why = failure.to_string();
                        let _ = record_down(db, &client.server.name, &why).await;
                        LogLine::warn("mcp_server_down")
                            .field("server", client.server.name.as_str())
                            .reason(&why)
                            .emit();
                        toolbox.notes.push(down_note(&client.server.name, Some(&why)));
                    }
                }
            }
            let offered = client.server.offered();
            toolbox.offered.extend(offered.into_iter().filter(|tool| !for_branch || !tool.needs_approval));
            toolbox.clients.push(client);
        }
        toolbox
    }

    /// Whom the servers' questions (elicitation) go to: the person who started the work.
    pub fn ask(&mut self, asker: Asker) {
        for client in &mut self.clients {
            client.asker = Some(asker.clone());
        }
    }

    /// The tools as the model is offered them.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.offered
            .iter()
            .map(|tool| ToolSpec {
                name: tool.exposed_name.clone(),
                description: format!("[{} via MCP] {}", tool.server, tool.description),
                parameters: mcp::parameters(&tool.input_schema),
            })
            .collect()
    }

    pub fn tool(&self, exposed_name: &str) -> Option<&OfferedTool> {
        self.offered.iter().find(|tool| tool.exposed_name == exposed_name)
    }

    pub fn needs_approval(&self, exposed_name: &str) -> bool {
        self.tool(exposed_name).is_some_and(|tool| tool.needs_approval)
    }

    /// Runs an offered tool; None when `exposed_name` is not one.
    pub async fn call(&self, exposed_name: &str, arguments: &Value) -> Option<String> {
        let tool = self.tool(exposed_name)?;
        let client = self.clients.iter().find(|client| client.server.name == tool.server)?;
        if client.server.is_down(now_ms()) {
            return Some(format!("error: the MCP server {} is unreachable now; try later", tool.server));
        }
        Some(client.call(&tool.name, arguments).await)
    }

    /// Runs an offered tool; the model hears when there is none of that name
    /// (the caller's own tools were looked through first).
    pub async fn call_or_refuse(&self, exposed_name: &str, arguments: &Value) -> String {
        let answer = self.call(exposed_name, arguments).await;
        answer.unwrap_or_else(|| format!("error: there is no tool named `{exposed_name}`"))
    }
}

fn down_note(server: &str, why: Option<&str>) -> String {
    format!("The MCP server {server} cannot be reached now ({}); its tools may fail.", why.unwrap_or("no answer"))
}

/// Lists a server's tools now (the admin API's refresh, and after a save):
/// its view, with the failure if the list could not be read.
pub async fn refresh_now(config: &Config, env: &Env, db: &D1Database, name: &str) -> worker::Result<Option<Value>> {
    let Some(known) = server(db, name).await? else {
        return Ok(None);
    };
    let client = Client::new(config, env, db, known);
    if let Err(failure) = client.refresh().await {
        record_down(db, name, &failure.to_string()).await?;
    }
    Ok(server(db, name).await?.map(|server| server.view()))
}
