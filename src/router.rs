//! The Worker's routes: each entry of the route table ([`crate::routes`]) to
//! its handler, and the one place where an [`ApiError`] becomes a status and a
//! JSON body.

use matchit::Params;
use worker::{Env, Headers, Method, Request, Response, Result};

use crate::agents::api as agents;
use crate::api_error::ApiError;
use crate::routes::{self, Access, AgentRoute, Found, Route, SkillRoute, Verb};
use crate::runtime::failure::Answer;
use crate::security::percent_decode;

use crate::conversations::api as admin;
use crate::files::chat_api as chat_files;
use crate::identity::api as identity;
use crate::mcp::api as mcp_admin;
use crate::people::api as people;
use crate::platforms::discord::gateway_route::GatewayRoute;
use crate::platforms::slack::install::api as slack_install;
use crate::platforms::web_chat::buttons as web_chat_buttons;
use crate::platforms::webhooks;
use crate::runtime::config;
use crate::runtime::failure::internal;
use crate::runtime::incoming::Incoming;
use crate::schedules::store::{ACTIVE, PAUSED};
use crate::sessions::api::{self as sessions, Operator};
use crate::workspace::api as workspace;
use crate::{budget::api as budget, memory::api as memory, schedules::api as schedules, tasks::api as tasks};

pub async fn handle(request: Incoming, env: &Env) -> Result<Response> {
    // Loaded first, so every log line and error body knows the secrets to scrub.
    let refusal = config::refusal(env);
    let outcome = match refusal {
        // A configuration the Worker refuses: every request (health included)
        // says why, and nothing else runs.
        Some(refusal) => Err(ApiError::Misconfigured(refusal)),
        // A sandbox run's fetch, back through the `SELF` binding: never a route.
        None if crate::sandbox::egress::is_egress(&request) => {
            crate::sandbox::egress::serve(request.into_request(), env).await
        }
        None => route(request, env).await,
    };
    let response = outcome.or_else(|error| {
        let mut body = error.body();
        config::redactor().redact_json(&mut body);
        let mut response = Response::from_json(&body)?.with_status(error.status());
        if let Some(seconds) = error.retry_after_secs() {
            response.headers_mut().set("retry-after", &seconds.to_string())?;
        }
        Ok::<_, worker::Error>(response)
    })?;
    with_browser_headers(response)
}

/// The same response with [`crate::security::BROWSER_HEADERS`] added. The
/// headers are copied into a new set (one runtime call): a response from a
/// Durable Object has immutable ones. The browser headers' names and values
/// are made JS strings once per isolate, not copied out of wasm per response.
fn with_browser_headers(response: Response) -> Result<Response> {
    let headers = worker::web_sys::Headers::new_with_headers(&response.headers().0)?;
    BROWSER_HEADERS.with(|browser| {
        let settable: &SettableHeaders = wasm_bindgen::JsCast::unchecked_ref(&headers);
        browser.iter().try_for_each(|(name, value)| settable.set(name, value).map_err(worker::Error::from))
    })?;
    Ok(response.with_headers(Headers(headers)))
}

thread_local! {
    /// [`crate::security::BROWSER_HEADERS`] as JS strings.
    static BROWSER_HEADERS: Vec<(js_sys::JsString, js_sys::JsString)> = crate::security::BROWSER_HEADERS
        .iter()
        .map(|(name, value)| (js_sys::JsString::from(*name), js_sys::JsString::from(*value)))
        .collect();
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// A `Headers`, for `set` with JS strings made beforehand.
    #[wasm_bindgen(js_name = Headers)]
    type SettableHeaders;

    #[wasm_bindgen(catch, method)]
    fn set(
        this: &SettableHeaders,
        name: &js_sys::JsString,
        value: &js_sys::JsString,
    ) -> std::result::Result<(), wasm_bindgen::JsValue>;
}

/// Finds the request's route. A webhook is served from the request as it
/// came ([`Incoming`]); every other route gets a `worker::Request`.
async fn route(incoming: Incoming, env: &Env) -> Answer {
    let path = incoming.path();
    let (route, params) = match routes::find(verb(&incoming.method()), &path) {
        Found::Route(route, params) => (route, params),
        Found::WrongMethod => return Err(ApiError::MethodNotAllowed),
        Found::NotFound => return Err(ApiError::NotFound),
    };
    let param = |name: &str| params.get(name).unwrap_or_default();
    match route {
        Route::Webhook(platform) => return webhooks::receive(platform, incoming, env).await,
        Route::AgentTelegramWebhook => {
            return crate::platforms::telegram::webhook::receive_for_agent(incoming, env, param("agent")).await
        }
        _ => {}
    }
    let request = incoming.into_request();
    let operator = operator_of(route, &request, env).await?;
    if operator.is_some() && request.method() != Method::Get {
        config::note_edit();
    }
    match route {
        Route::Health => Response::from_json(&serde_json::json!({ "ok": true })).map_err(internal),
        Route::SignIn => sessions::sign_in(request, env).await,
        Route::Session => sessions::current(&request, env).await,
        Route::SignOut => sessions::sign_out(&request).await,
        Route::StartChat => sessions::start_chat(request, env).await,
        Route::CurrentChat => sessions::current_chat(&request, env).await,
        Route::ChatSocket => sessions::chat_socket(&request, env).await,
        Route::UploadChatFile => chat_files::upload(request, env).await,
        Route::DownloadFile => chat_files::download(&request, env, param("id")).await,
        Route::ChatApproval => web_chat_buttons::pressed(request, env, param("id")).await,
        Route::SlackInstall => slack_install::install(request, env).await,
        Route::SlackOAuthCallback => slack_install::callback(request, env).await,
        Route::McpEndpoint => crate::mcp_server::endpoint::serve(request, env).await,
        _ => {
            let operator = operator.as_ref().ok_or(ApiError::Unauthorized("this route is the operator's"))?;
            operators(route, request, env, &params, operator).await
        }
    }
}

/// The identity documents' routes, each about the agent `?agent=` names (the default when none).
async fn identity_routes(
    route: Route,
    request: Request,
    env: &Env,
    params: &Params<'_, '_>,
    operator: &Operator,
) -> Answer {
    let param = |name: &str| params.get(name).unwrap_or_default();
    let agent = agents::of_query(&request)?;
    match route {
        Route::IdentityDocuments => identity::documents(env, &agent, operator).await,
        Route::IdentityVersions => identity::versions(env, &agent, param("name"), operator).await,
        Route::SaveIdentity => identity::save_document(request, env, &agent, param("name"), operator).await,
        _ => identity::restore(env, &agent, param("name"), param("version"), operator).await,
    }
}

/// The operator's routes, each handed the operator's proof.
async fn operators(route: Route, request: Request, env: &Env, params: &Params<'_, '_>, operator: &Operator) -> Answer {
    let param = |name: &str| params.get(name).unwrap_or_default();
    match route {
        Route::Status => admin::status(env, operator).await,
        Route::Ops => admin::ops(operator).await,
        Route::Conversations => admin::conversations(&request, env, operator).await,
        Route::Settings => admin::settings(env, operator).await,
        Route::Bulletin => memory::bulletin(env, operator).await,
        Route::ChannelLive => sessions::watch_socket(&request, env, &percent_decode(param("key")), operator).await,
        Route::ChannelEvents => admin::channel_events(env, param("key"), operator).await,
        Route::ChannelMessages => admin::channel_messages(env, param("key"), operator).await,
        Route::ChannelOutbox => admin::channel_outbox(env, param("key"), operator).await,
        Route::ChannelEnvelopes => admin::channel_envelopes(&request, env, param("key"), operator).await,
        Route::ChannelUsage => admin::channel_usage(env, param("key"), operator).await,
        Route::ChannelProcesses => admin::channel_processes(env, param("key"), operator).await,
        Route::ChannelWorkers => admin::channel_workers(env, param("key"), operator).await,
        Route::ConversationWorkspace => workspace::list(env, param("key"), operator).await,
        Route::ForgetConversationWorkspace => workspace::forget(env, param("key"), operator).await,
        Route::ChannelRunCode => crate::sandbox::api::run(request, env, param("key"), operator).await,
        Route::ChannelIdentity => identity::conversation_override(env, param("key"), operator).await,
        Route::SetChannelIdentity => identity::set_conversation_override(request, env, param("key"), operator).await,
        Route::RemoveChannelIdentity => identity::remove_conversation_override(env, param("key"), operator).await,
        Route::IdentityDocuments | Route::IdentityVersions | Route::SaveIdentity | Route::RestoreIdentity => {
            identity_routes(route, request, env, params, operator).await
        }
        Route::Memories => memory::memories(&request, env, operator).await,
        Route::ImportMemories => memory::import_memories(request, env, operator).await,
        Route::DeleteMemory => memory::delete_memory(env, param("id"), operator).await,
        Route::ShareMemory => memory::share_memory(env, param("id"), true, operator).await,
        Route::UnshareMemory => memory::share_memory(env, param("id"), false, operator).await,
        Route::Schedules => schedules::schedules(&request, env, operator).await,
        Route::CreateSchedule => schedules::create_schedule(request, env, operator).await,
        Route::PauseSchedule => schedules::set_schedule_status(env, param("id"), PAUSED, operator).await,
        Route::ResumeSchedule => schedules::set_schedule_status(env, param("id"), ACTIVE, operator).await,
        Route::DeleteSchedule => schedules::delete_schedule(env, param("id"), operator).await,
        Route::ScheduleRuns => schedules::schedule_runs(env, param("id"), operator).await,
        Route::Spend => budget::spend(&request, env, operator).await,
        Route::SetSpendLimit => budget::set_spend_limit(request, env, param("scope"), param("subject"), operator).await,
        Route::RemoveSpendLimit => budget::remove_spend_limit(env, param("scope"), param("subject"), operator).await,
        Route::People => people::list(&request, env, operator).await,
        Route::Person => people::show(env, param("id"), operator).await,
        Route::UpdatePerson => people::update(request, env, param("id"), operator).await,
        Route::LinkPerson => people::link(request, env, param("id"), operator).await,
        Route::ForgetPersonNotes => people::clear_notes(env, param("id"), operator).await,
        Route::UpdatePeople => people::put_many(request, env, operator).await,
        Route::Tasks => tasks::tasks(&request, env, operator).await,
        Route::CreateTask => tasks::create_task(request, env, operator).await,
        Route::ApproveTask => tasks::move_task(request, env, param("id"), Some("ready"), operator).await,
        Route::MoveTask => tasks::move_task(request, env, param("id"), None, operator).await,
        Route::DeleteTask => tasks::delete_task(env, param("id"), operator).await,
        Route::StartGateway => admin::gateway(env, GatewayRoute::Start, operator).await,
        Route::StopGateway => admin::gateway(env, GatewayRoute::Stop, operator).await,
        Route::GatewayStatus => admin::gateway(env, GatewayRoute::Status, operator).await,
        Route::McpServers => mcp_admin::servers(env, operator).await,
        Route::SaveMcpServer => mcp_admin::save(request, env, param("name"), operator).await,
        Route::RemoveMcpServer => mcp_admin::remove(env, param("name"), operator).await,
        Route::RefreshMcpServer => mcp_admin::refresh(env, param("name"), operator).await,
        Route::Approvals => mcp_admin::list_approvals(env, operator).await,
        Route::SlackWorkspaces => slack_install::workspaces(env, operator).await,
        Route::Agents(agent_route) => agents_routes(agent_route, request, env, params, operator).await,
        Route::Skills(skill) => skill_routes(skill, request, env, params, operator).await,
        // Open routes are answered by `route`.
        Route::Health
        | Route::Webhook(_)
        | Route::SignIn
        | Route::Session
        | Route::SignOut
        | Route::StartChat
        | Route::CurrentChat
        | Route::ChatSocket
        | Route::UploadChatFile
        | Route::DownloadFile
        | Route::ChatApproval
        | Route::SlackInstall
        | Route::SlackOAuthCallback
        | Route::AgentTelegramWebhook
        | Route::McpEndpoint => Err(ApiError::NotFound),
    }
}

/// The agents' own routes and what belongs to agents: their links and
/// tool-server clients.
async fn agents_routes(
    route: AgentRoute,
    request: Request,
    env: &Env,
    params: &Params<'_, '_>,
    operator: &Operator,
) -> Answer {
    let param = |name: &str| params.get(name).unwrap_or_default();
    match route {
        AgentRoute::Links | AgentRoute::SaveLink | AgentRoute::RemoveLink => {
            crate::links::api::route(route, request, env, param("from"), param("to"), operator).await
        }
        AgentRoute::McpClients | AgentRoute::CreateMcpClient | AgentRoute::RevokeMcpClient => {
            crate::mcp_server::api::route(route, request, env, param("id"), operator).await
        }
        _ => agents::route(route, request, env, param("id"), operator).await,
    }
}

/// The skills' routes (`/api/agents/{agent}/skills…`).
async fn skill_routes(
    route: SkillRoute,
    request: Request,
    env: &Env,
    params: &Params<'_, '_>,
    operator: &Operator,
) -> Answer {
    use crate::skills::api as skills;
    let param = |name: &str| params.get(name).unwrap_or_default();
    let (agent, name) = (param("agent"), param("name"));
    match route {
        SkillRoute::List => skills::list(env, agent, operator).await,
        SkillRoute::Install => skills::install(request, env, agent, operator).await,
        SkillRoute::Get => skills::get(env, agent, name, operator).await,
        SkillRoute::Enable => skills::set_enabled(env, agent, name, true, operator).await,
        SkillRoute::Disable => skills::set_enabled(env, agent, name, false, operator).await,
        SkillRoute::Versions => skills::versions(env, agent, name, operator).await,
        SkillRoute::Restore => skills::restore(env, agent, name, param("version"), operator).await,
    }
}

/// The operator's proof for an operator route, asked for here, once, before
/// its handler runs (None for an open route). Each admin handler takes the
/// proof as an argument, so none can be reached without the check.
async fn operator_of(route: Route, request: &Request, env: &Env) -> std::result::Result<Option<Operator>, ApiError> {
    match route.access() {
        Access::Operator => sessions::authorize_operator(request, env).await.map(Some),
        Access::Anyone => Ok(None),
    }
}

/// The route table's verb for a request method; None for one no route uses.
fn verb(method: &Method) -> Option<Verb> {
    [Verb::Get, Verb::Post, Verb::Put, Verb::Delete]
        .into_iter()
        .find(|&verb| crate::runtime::http::method(verb) == *method)
}
