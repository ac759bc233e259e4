//! The Worker's routes: one table of (method, path pattern, route). The router
//! looks requests up here, and what it answers with a wrong method (405) or
//! an unknown path (404) follows from the same table, so a new route cannot
//! be forgotten in either list.
//!
//! Patterns are matched by `matchit` (axum's router): `{name}` is one path
//! segment, still percent-encoded.

use std::sync::OnceLock;

use matchit::{Params, Router};

use crate::platforms::Platform;
pub use crate::verb::Verb;

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Health,
    Status,
    Ops,
    /// A platform's webhook (`platforms/{platform}/webhook.rs`).
    Webhook(Platform),
    SignIn,
    Session,
    SignOut,
    StartChat,
    CurrentChat,
    ChatSocket,
    UploadChatFile,
    DownloadFile,
    Conversations,
    Settings,
    Bulletin,
    ChannelLive,
    ChannelEvents,
    ChannelMessages,
    ChannelOutbox,
    ChannelEnvelopes,
    ChannelUsage,
    ChannelProcesses,
    ChannelWorkers,
    ConversationWorkspace,
    ForgetConversationWorkspace,
    ChannelRunCode,
    ChannelIdentity,
    SetChannelIdentity,
    RemoveChannelIdentity,
    IdentityDocuments,
    IdentityVersions,
    SaveIdentity,
    RestoreIdentity,
    Memories,
    ImportMemories,
    DeleteMemory,
    ShareMemory,
    UnshareMemory,
    Schedules,
    CreateSchedule,
    PauseSchedule,
    ResumeSchedule,
    DeleteSchedule,
    ScheduleRuns,
    Spend,
    SetSpendLimit,
    RemoveSpendLimit,
    People,
    Person,
    UpdatePerson,
    LinkPerson,
    ForgetPersonNotes,
    UpdatePeople,
    Tasks,
    CreateTask,
    ApproveTask,
    MoveTask,
    DeleteTask,
    StartGateway,
    StopGateway,
    GatewayStatus,
    McpServers,
    SaveMcpServer,
    RemoveMcpServer,
    RefreshMcpServer,
    Approvals,
    ChatApproval,
    /// "Add to Slack": the install link and its OAuth callback.
    SlackInstall,
    SlackOAuthCallback,
    /// The Slack workspaces that installed the bot.
    SlackWorkspaces,
    /// Agents and what belongs to them (`src/agents/`, `src/links/`, `src/mcp_server/`).
    Agents(AgentRoute),
    /// An agent's own Telegram bot's webhook (`/webhooks/telegram/{agent}`).
    AgentTelegramWebhook,
    /// An agent's skills (`/api/agents/{agent}/skills…`).
    Skills(SkillRoute),
    /// edgebot as a remote MCP server (its clients' bearer tokens).
    McpEndpoint,
}

/// The agents' routes: the agents themselves (list, create, update, delete,
/// an agent's Telegram bot), the links between them (`crate::links::api`) and
/// the tool server's clients (`crate::mcp_server::api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentRoute {
    List,
    Create,
    Update,
    Delete,
    SetTelegram,
    Links,
    SaveLink,
    RemoveLink,
    McpClients,
    CreateMcpClient,
    RevokeMcpClient,
    SetRooms,
    CreateInvitation,
    RemoveInvitation,
}

/// The skills' routes, by what they do (`src/skills/api.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillRoute {
    List,
    Install,
    Get,
    Enable,
    Disable,
    Versions,
    Restore,
}

use Route::*;
use Verb::*;

/// Who may ask for a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone: the route checks what it needs itself (a webhook its platform's
    /// signature, the web chat its own session, sign-in the token).
    Anyone,
    /// The operator only: the router checks once, before the handler runs, and
    /// hands the handler the proof.
    Operator,
}

impl Route {
    /// Who may ask for this route. A route not named here is the operator's,
    /// so a new one is closed until it is opened on purpose.
    pub fn access(self) -> Access {
        match self {
            Health | Webhook(_) | SignIn | Session | SignOut | StartChat | CurrentChat | ChatSocket
            | UploadChatFile | DownloadFile | ChatApproval => Access::Anyone,
            // The callback checks its one-time state; the link hands one out.
            SlackInstall | SlackOAuthCallback => Access::Anyone,
            // Checks the agent's bot's secret token.
            AgentTelegramWebhook => Access::Anyone,
            // The endpoint checks its clients' bearer tokens.
            McpEndpoint => Access::Anyone,
            _ => Access::Operator,
        }
    }
}

/// Every route: method, path, what it is.
pub const TABLE: &[(Verb, &str, Route)] = &[
    (Get, "/health", Health),
    (Get, "/api/status", Status),
    (Get, "/api/ops", Ops),
    (Post, "/webhooks/telegram", Webhook(Platform::Telegram)),
    (Post, "/webhooks/slack", Webhook(Platform::Slack)),
    (Post, "/webhooks/discord", Webhook(Platform::Discord)),
    (Post, "/webhooks/teams", Webhook(Platform::Teams)),
    (Get, "/webhooks/whatsapp", Webhook(Platform::WhatsApp)),
    (Post, "/webhooks/whatsapp", Webhook(Platform::WhatsApp)),
    (Post, "/webhooks/plain", Webhook(Platform::Webhook)),
    (Post, "/api/session", SignIn),
    (Get, "/api/session", Session),
    (Delete, "/api/session", SignOut),
    (Post, "/api/chat/session", StartChat),
    (Get, "/api/chat/session", CurrentChat),
    (Get, "/api/chat/socket", ChatSocket),
    (Post, "/api/chat/files", UploadChatFile),
    (Get, "/api/files/{id}", DownloadFile),
    (Get, "/api/conversations", Conversations),
    (Get, "/api/conversations/{key}/workspace", ConversationWorkspace),
    (Delete, "/api/conversations/{key}/workspace", ForgetConversationWorkspace),
    (Get, "/api/settings", Settings),
    (Get, "/api/memory/bulletin", Bulletin),
    (Get, "/api/channels/{key}/live", ChannelLive),
    (Get, "/api/channels/{key}/events", ChannelEvents),
    (Get, "/api/channels/{key}/messages", ChannelMessages),
    (Get, "/api/channels/{key}/outbox", ChannelOutbox),
    (Get, "/api/channels/{key}/envelopes", ChannelEnvelopes),
    (Get, "/api/channels/{key}/usage", ChannelUsage),
    (Get, "/api/channels/{key}/processes", ChannelProcesses),
    (Get, "/api/channels/{key}/workers", ChannelWorkers),
    (Post, "/api/channels/{key}/run_code", ChannelRunCode),
    (Get, "/api/channels/{key}/identity", ChannelIdentity),
    (Put, "/api/channels/{key}/identity", SetChannelIdentity),
    (Delete, "/api/channels/{key}/identity", RemoveChannelIdentity),
    (Get, "/api/identity", IdentityDocuments),
    (Get, "/api/identity/{name}/versions", IdentityVersions),
    (Put, "/api/identity/{name}", SaveIdentity),
    (Post, "/api/identity/{name}/restore/{version}", RestoreIdentity),
    (Get, "/api/memories", Memories),
    (Post, "/api/memories", ImportMemories),
    (Delete, "/api/memories/{id}", DeleteMemory),
    (Post, "/api/memories/{id}/share", ShareMemory),
    (Post, "/api/memories/{id}/unshare", UnshareMemory),
    (Get, "/api/schedules", Schedules),
    (Post, "/api/schedules", CreateSchedule),
    (Post, "/api/schedules/{id}/pause", PauseSchedule),
    (Post, "/api/schedules/{id}/resume", ResumeSchedule),
    (Delete, "/api/schedules/{id}", DeleteSchedule),
    (Get, "/api/schedules/{id}/runs", ScheduleRuns),
    (Get, "/api/spend", Spend),
    (Put, "/api/spend/limits/{scope}/{subject}", SetSpendLimit),
    (Delete, "/api/spend/limits/{scope}/{subject}", RemoveSpendLimit),
    (Get, "/api/people", People),
    (Get, "/api/people/{id}", Person),
    (Put, "/api/people/{id}", UpdatePerson),
    (Post, "/api/people/{id}/link", LinkPerson),
    (Delete, "/api/people/{id}/notes", ForgetPersonNotes),
    (Put, "/api/people", UpdatePeople),
    (Get, "/api/tasks", Tasks),
    (Post, "/api/tasks", CreateTask),
    (Post, "/api/tasks/{id}/approve", ApproveTask),
    (Post, "/api/tasks/{id}/move", MoveTask),
    (Delete, "/api/tasks/{id}", DeleteTask),
    (Post, "/api/discord/gateway", StartGateway),
    (Delete, "/api/discord/gateway", StopGateway),
    (Get, "/api/discord/gateway", GatewayStatus),
    (Get, "/api/mcp/servers", McpServers),
    (Put, "/api/mcp/servers/{name}", SaveMcpServer),
    (Delete, "/api/mcp/servers/{name}", RemoveMcpServer),
    (Post, "/api/mcp/servers/{name}/refresh", RefreshMcpServer),
    (Get, "/api/approvals", Approvals),
    (Post, "/api/chat/approvals/{id}", ChatApproval),
    (Get, "/slack/install", SlackInstall),
    (Get, "/slack/oauth/callback", SlackOAuthCallback),
    (Get, "/api/slack/workspaces", SlackWorkspaces),
    (Get, "/api/agents", Agents(AgentRoute::List)),
    (Post, "/api/agents", Agents(AgentRoute::Create)),
    (Put, "/api/agents/{id}", Agents(AgentRoute::Update)),
    (Delete, "/api/agents/{id}", Agents(AgentRoute::Delete)),
    (Put, "/api/agents/{id}/telegram", Agents(AgentRoute::SetTelegram)),
    (Post, "/webhooks/telegram/{agent}", AgentTelegramWebhook),
    (Get, "/api/links", Agents(AgentRoute::Links)),
    (Post, "/api/links", Agents(AgentRoute::SaveLink)),
    (Delete, "/api/links/{from}/{to}", Agents(AgentRoute::RemoveLink)),
    (Get, "/api/agents/{agent}/skills", Skills(SkillRoute::List)),
    (Post, "/api/agents/{agent}/skills", Skills(SkillRoute::Install)),
    (Get, "/api/agents/{agent}/skills/{name}", Skills(SkillRoute::Get)),
    (Post, "/api/agents/{agent}/skills/{name}/enable", Skills(SkillRoute::Enable)),
    (Post, "/api/agents/{agent}/skills/{name}/disable", Skills(SkillRoute::Disable)),
    (Get, "/api/agents/{agent}/skills/{name}/versions", Skills(SkillRoute::Versions)),
    (Post, "/api/agents/{agent}/skills/{name}/restore/{version}", Skills(SkillRoute::Restore)),
    (Post, "/mcp", McpEndpoint),
    (Get, "/api/mcp-clients", Agents(AgentRoute::McpClients)),
    (Post, "/api/mcp-clients", Agents(AgentRoute::CreateMcpClient)),
    (Delete, "/api/mcp-clients/{id}", Agents(AgentRoute::RevokeMcpClient)),
    (Put, "/api/agents/{id}/rooms", Agents(AgentRoute::SetRooms)),
    (Post, "/api/agents/{id}/invitation", Agents(AgentRoute::CreateInvitation)),
    (Delete, "/api/agents/{id}/invitation", Agents(AgentRoute::RemoveInvitation)),
];

/// The routes at one path, by method.
#[derive(Default)]
struct AtPath(Vec<(Verb, Route)>);

/// The answer for a request.
#[derive(Debug)]
pub enum Found<'p> {
    Route(Route, Params<'static, 'p>),
    /// The path exists, not with this method.
    WrongMethod,
    NotFound,
}

fn router() -> &'static Router<AtPath> {
    static ROUTER: OnceLock<Router<AtPath>> = OnceLock::new();
    ROUTER.get_or_init(|| {
        let mut paths: Vec<(&str, AtPath)> = Vec::new();
        for &(verb, path, route) in TABLE {
            match paths.iter_mut().find(|(known, _)| *known == path) {
                Some((_, at)) => at.0.push((verb, route)),
                None => paths.push((path, AtPath(vec![(verb, route)]))),
            }
        }
        let mut router = Router::new();
        for (path, at) in paths {
            router.insert(path, at).expect("the route table's patterns do not conflict");
        }
        router
    })
}

/// The path of a URL as the runtime serialises a request's (WHATWG): after
/// the host, up to the query or fragment, left encoded (`/` when there is
/// none). What `worker::Request::path` gives, without making that request.
pub fn path_of(url: &str) -> &str {
    let Some(host) = url.find("://").map(|at| at + 3) else {
        return url.split(['?', '#']).next().filter(|path| path.starts_with('/')).unwrap_or("/");
    };
    let rest = &url[host..];
    match rest.find(['/', '?', '#']) {
        Some(at) if rest[at..].starts_with('/') => rest[at..].split(['?', '#']).next().unwrap_or("/"),
        _ => "/",
    }
}

/// The route for `verb` (None: a method no route uses) at `path`; a trailing
/// slash is ignored.
pub fn find(verb: Option<Verb>, path: &str) -> Found<'_> {
    let trimmed = path.trim_end_matches('/');
    let Ok(matched) = router().at(if trimmed.is_empty() { "/" } else { trimmed }) else {
        return Found::NotFound;
    };
    match matched.value.0.iter().find(|(method, _)| Some(*method) == verb) {
        Some(&(_, route)) => Found::Route(route, matched.params),
        None => Found::WrongMethod,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERBS: [Verb; 4] = [Get, Post, Put, Delete];

    #[test]
    fn a_path_is_what_follows_the_host_up_to_the_query() {
        assert_eq!(path_of("https://bot.example/webhooks/telegram"), "/webhooks/telegram");
        assert_eq!(path_of("http://127.0.0.1:8787/api/memories?q=a/b#top"), "/api/memories");
        assert_eq!(
            path_of("https://bot.example/api/conversations/telegram%3A42/events"),
            "/api/conversations/telegram%3A42/events"
        );
        assert_eq!(path_of("https://bot.example"), "/");
        assert_eq!(path_of("https://bot.example?x=/y"), "/", "a query's slash is not the path's");
        assert_eq!(path_of("/health?x=1"), "/health");
    }

    /// The pattern with each `{param}` filled in.
    fn filled(pattern: &str) -> String {
        pattern
            .split('/')
            .map(|segment| if segment.starts_with('{') { "telegram%3A42" } else { segment })
            .collect::<Vec<_>>()
            .join("/")
    }

    #[test]
    fn every_route_is_found_with_its_method_and_its_parameters() {
        for &(verb, pattern, route) in TABLE {
            let path = filled(pattern);
            match find(Some(verb), &path) {
                Found::Route(found, params) => {
                    assert_eq!(found, route, "{pattern}");
                    assert!(params.iter().all(|(_, value)| value == "telegram%3A42"), "{pattern}");
                    assert_eq!(params.len(), pattern.matches('{').count(), "{pattern}");
                }
                other => panic!("{verb:?} {pattern}: {other:?}"),
            }
            assert!(matches!(find(Some(verb), &format!("{path}/")), Found::Route(found, _) if found == route));
        }
    }

    #[test]
    fn only_health_webhooks_sign_in_and_the_web_chat_are_open_and_the_rest_is_the_operators() {
        let open: Vec<&str> =
            TABLE.iter().filter(|(_, _, route)| route.access() == Access::Anyone).map(|&(_, path, _)| path).collect();
        let expected = [
            "/health",
            "/webhooks/telegram",
            "/webhooks/slack",
            "/webhooks/discord",
            "/webhooks/teams",
            "/webhooks/whatsapp",
            "/webhooks/whatsapp",
            "/webhooks/plain",
            "/api/session",
            "/api/session",
            "/api/session",
            "/api/chat/session",
            "/api/chat/session",
            "/api/chat/socket",
            "/api/chat/files",
            "/api/files/{id}",
            "/api/chat/approvals/{id}",
            "/slack/install",
            "/slack/oauth/callback",
            "/webhooks/telegram/{agent}",
            "/mcp",
        ];
        assert_eq!(open, expected);
        for &(verb, path, route) in TABLE {
            let admin =
                path.starts_with("/api/") && !path.starts_with("/api/chat/") && !path.starts_with("/api/session");
            if admin && path != "/api/files/{id}" {
                assert_eq!(route.access(), Access::Operator, "{verb:?} {path}");
            }
        }
    }

    #[test]
    fn another_method_at_a_known_path_is_405_and_an_unknown_path_is_404() {
        for &(_, pattern, _) in TABLE {
            let path = filled(pattern);
            let served: Vec<Verb> = TABLE.iter().filter(|row| row.1 == pattern).map(|row| row.0).collect();
            for verb in VERBS.into_iter().filter(|verb| !served.contains(verb)) {
                assert!(matches!(find(Some(verb), &path), Found::WrongMethod), "{verb:?} {pattern}");
            }
            assert!(matches!(find(None, &path), Found::WrongMethod), "PATCH {pattern}");
        }
        // The case the outside check found: POST /api/ops.
        assert!(matches!(find(Some(Post), "/api/ops"), Found::WrongMethod));
        for unknown in
            ["/", "/api", "/api/nothing", "/api/channels/k", "/api/channels/k/secret", "/health/x", "/webhooks"]
        {
            assert!(matches!(find(Some(Get), unknown), Found::NotFound), "{unknown}");
        }
    }
}
