//! Configuration: every setting the Worker reads from its vars and secrets,
//! with the defaults a user gets when a setting is absent.

use crate::budget::metered::{Caps, MeteredTool};
use crate::budget::rules::{self as budget, parse_tokens, parse_usd, Budgets, Limit};
use crate::channel::engagement::Triggers;
use crate::channel::processes::{Timeouts, DEFAULT_BRANCH_TIMEOUT_MS, DEFAULT_WORKER_TIMEOUT_MS};
use crate::channel::state::ChannelSettings;
use crate::channel::sticky::DEFAULT_STICKY_WINDOW_MS;
use crate::llm::RetryPolicy;
use crate::redact::Redactor;
use crate::schedules::limits::{DEFAULT_MAX_CREATIONS_PER_TURN, DEFAULT_MAX_JOBS_PER_CONVERSATION};
use crate::secret::Secret;

pub const DEFAULT_TELEGRAM_API_BASE: &str = "https://api.telegram.org";
pub const DEFAULT_SLACK_API_BASE: &str = "https://slack.com/api";
pub const DEFAULT_DISCORD_API_BASE: &str = "https://discord.com/api/v10";
/// Where the Bot Framework publishes the keys its tokens are signed with.
pub const DEFAULT_TEAMS_OPENID_URL: &str = "https://login.botframework.com/v1/.well-known/openidconfiguration";
/// The client-credentials token endpoint; `{tenant}` is `TEAMS_TENANT_ID`.
pub const DEFAULT_TEAMS_TOKEN_URL: &str = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token";
/// A multi-tenant bot's tenant (a single-tenant bot sets its own).
pub const DEFAULT_TEAMS_TENANT_ID: &str = "botframework.com";
/// Teams' global connector: where a conversation known only by its key is answered.
pub const DEFAULT_TEAMS_SERVICE_URL: &str = "https://smba.trafficmanager.net/teams/";
/// The connectors the bot's token may be sent to.
pub const DEFAULT_TEAMS_SERVICE_URL_HOSTS: &str =
    "smba.trafficmanager.net,*.botframework.com,*.teams.microsoft.com,*.teams.microsoft.us";
pub const DEFAULT_WHATSAPP_API_BASE: &str = "https://graph.facebook.com/v21.0";
pub const DEFAULT_OPENAI_BASE_URL: &str = crate::llm::readiness::OPENAI_API;
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_SEARCH_BASE_URL: &str = "https://api.search.brave.com";
pub const DEFAULT_CHANNEL_MODEL: &str = "openai/gpt-4o-mini";
pub const DEFAULT_BOT_NAME: &str = "edgebot";
/// How many earlier messages of a conversation a turn's prompt carries.
pub const DEFAULT_HISTORY_LIMIT: u32 = 50;
pub const DEFAULT_LLM_TIMEOUT_MS: u64 = 60_000;
/// How long one exchange with an MCP server may take by default.
pub const DEFAULT_MCP_TIMEOUT_MS: u64 = 30_000;
/// How long `browse` waits for a page by default.
pub const DEFAULT_BROWSE_TIMEOUT_MS: u64 = 30_000;
pub const DEFAULT_LLM_MAX_ATTEMPTS: u32 = 3;
pub const DEFAULT_LLM_BACKOFF_MS: u64 = 500;
pub const DEFAULT_SEND_MAX_ATTEMPTS: u32 = 3;
/// An acknowledged inbound with no outcome this long after it arrived is
/// woken by the cron's sweeper (which runs every minute).
pub const DEFAULT_SWEEP_AFTER_MS: u64 = 120_000;
/// Group bursts: wait this long after the last message before a turn...
pub const DEFAULT_COALESCE_DEBOUNCE_MS: u64 = 1_500;
/// ...but never longer than this after the first.
pub const DEFAULT_COALESCE_MAX_WAIT_MS: u64 = 5_000;
/// The platforms that stream replies by default: all of them.
/// WhatsApp, the plain webhook and email are named too, but never stream (docs/whatsapp.md,
/// docs/webhook.md, docs/email.md).
pub const DEFAULT_STREAM_REPLIES: &str = "web,telegram,slack,discord,teams,whatsapp,webhook,email,link";
/// Guest web-chat sessions per client address per UTC day.
pub const DEFAULT_WEB_CHAT_SESSIONS_PER_CLIENT_PER_DAY: u32 = 10;

/// The variables that hold secrets (docs/configuration.md).
pub const SECRET_VARIABLES: [&str; 17] = [
    "ADMIN_TOKEN",
    "WEB_CHAT_TOKEN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "SEARCH_API_KEY",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_WEBHOOK_SECRET",
    "SLACK_SIGNING_SECRET",
    "SLACK_BOT_TOKEN",
    "DISCORD_BOT_TOKEN",
    "TEAMS_APP_PASSWORD",
    "WHATSAPP_ACCESS_TOKEN",
    "WHATSAPP_APP_SECRET",
    "WHATSAPP_VERIFY_TOKEN",
    "WEBHOOK_SECRET",
    "SLACK_CLIENT_SECRET",
    "SLACK_TOKEN_KEY",
];

/// The shortest `ADMIN_TOKEN` or `WEB_CHAT_TOKEN` the Worker starts with: a
/// session signing key is derived from each, so a shorter one is refused.
pub const MIN_SECRET_CHARS: usize = 16;
/// Failed token checks one client may make per window before it gets 429s.
pub const DEFAULT_SIGN_IN_CLIENT_LIMIT: u32 = 10;
/// Failed token checks all clients together may make per window.
pub const DEFAULT_SIGN_IN_LIMIT: u32 = 100;
/// The window the failures are counted over.
pub const DEFAULT_SIGN_IN_WINDOW_SECS: u64 = 15 * 60;

/// The settings, read once per request from the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub bot_name: String,
    pub admin_token: Secret,
    /// The web chat's invitation: whoever holds it may talk to the agent
    /// (signed-in operators always may). Empty: operators only.
    pub web_chat_token: Secret,
    pub telegram_bot_token: Secret,
    pub telegram_bot_username: String,
    pub telegram_webhook_secret: Secret,
    pub telegram_api_base: String,
    pub slack_signing_secret: Secret,
    pub slack_bot_token: Secret,
    /// The bot's own user id (`U…`); event payloads usually carry it too.
    pub slack_bot_user_id: String,
    pub slack_api_base: String,
    /// "Add to Slack": the app's client id (`SLACK_CLIENT_ID`, public).
    pub slack_client_id: String,
    /// The app's client secret (`SLACK_CLIENT_SECRET`), sent to `oauth.v2.access` only.
    pub slack_client_secret: Secret,
    /// Seals installed workspaces' bot tokens in D1 (`SLACK_TOKEN_KEY`: 32 bytes, base64).
    pub slack_token_key: Secret,
    /// Workspaces (team ids) that may install; empty: any (`SLACK_INSTALL_TEAMS`).
    pub slack_install_teams: Vec<String>,
    pub discord_public_key: String,
    pub discord_application_id: String,
    pub discord_bot_token: Secret,
    pub discord_api_base: String,
    /// WhatsApp Cloud API: the system user's token, the app's secret (signatures), the
    /// webhook's verify token, the app id (subscriptions) and the Graph API base.
    pub whatsapp_access_token: Secret,
    pub whatsapp_app_secret: Secret,
    pub whatsapp_verify_token: Secret,
    pub whatsapp_app_id: String,
    pub whatsapp_api_base: String,
    /// The plain webhook: the shared signing secret, and where replies are POSTed.
    pub webhook_secret: Secret,
    pub webhook_callback_url: String,
    /// The default time zone of scheduled jobs (an IANA name).
    pub timezone: String,
    /// The shortest interval a recurring job may have.
    pub schedule_min_interval_ms: i64,
    /// Active and paused jobs a conversation may hold at once.
    pub schedule_max_jobs_per_conversation: u32,
    /// Jobs one channel turn may create.
    pub schedule_max_creations_per_turn: u32,
    /// Daily spending limits per person, per conversation, per deployment.
    pub budgets: Budgets,
    /// Guest web-chat sessions one client address may start per UTC day.
    pub web_chat_sessions_per_client_per_day: u32,
    /// How often a worker, and a conversation per UTC day, may run code.
    pub run_code_caps: Caps,
    /// How often a worker, and a conversation per UTC day, may browse.
    pub browse_caps: Caps,
    /// The bot's Microsoft app id: the audience of the tokens Teams sends.
    pub teams_app_id: String,
    /// The app's client secret, for the bot's own token.
    pub teams_app_password: Secret,
    pub teams_tenant_id: String,
    /// The Bot Framework's OpenID metadata (where its signing keys are).
    pub teams_openid_url: String,
    /// The token endpoint (`{tenant}` filled in).
    pub teams_token_url: String,
    /// The connector for conversations known only by their key.
    pub teams_service_url: String,
    /// The connectors (`serviceUrl` hosts) the bot's token may go to.
    pub teams_service_url_hosts: Vec<String>,
    /// Whether the Gateway object holds a connection (DISCORD_GATEWAY=on).
    pub discord_gateway: bool,
    /// The Gateway URL; empty means ask Discord (`GET /gateway/bot`).
    pub discord_gateway_url: String,
    /// Gateway shards to run (DISCORD_SHARDS); 0 follows Discord's recommendation.
    pub discord_shards: u32,
    pub openai_base_url: String,
    pub openai_api_key: Secret,
    pub anthropic_base_url: String,
    pub anthropic_api_key: Secret,
    pub channel_model: String,
    /// The model branches think with (defaults to the channel's).
    pub branch_model: String,
    /// The model that writes compaction summaries (defaults to the channel's).
    pub compactor_model: String,
    /// The model workers run on (defaults to the channel's).
    pub worker_model: String,
    /// The model that writes the memory bulletin (defaults to the channel's).
    pub cortex_model: String,
    /// The model that describes an image to a channel model that cannot see
    /// it (`VISION_MODEL`; unset: the person is told the bot cannot see it).
    pub vision_model: Option<String>,
    /// What transcribes voice notes: `openai/<model>` (`/audio/transcriptions`
    /// at `OPENAI_BASE_URL`) or `workers-ai/<model>`; unset: not transcribed.
    pub transcribe_model: Option<String>,
    /// Hosts `http_fetch` may reach even though they are private (tests only).
    pub fetch_allowed_hosts: Vec<String>,
    /// Who may approve any call on their platform (`APPROVERS`: `slack:U123,telegram:42`).
    pub approvers: Vec<String>,
    /// How long a call waits for approval (`APPROVAL_TIMEOUT_SECS`).
    pub approval_timeout_ms: i64,
    /// How long one exchange with an MCP server may take (`MCP_TIMEOUT_MS`).
    pub mcp_timeout_ms: u64,
    /// How long `browse` waits for a page to load and be read (`BROWSE_TIMEOUT_MS`).
    pub browse_timeout_ms: u64,
    /// The platforms whose replies show while the model writes them
    /// (`STREAM_REPLIES`, comma-separated; `off` for none).
    pub stream_replies: Vec<String>,
    /// The Brave Search API key; `web_search` is offered only when it is set.
    pub search_api_key: Secret,
    pub search_base_url: String,
    /// `local` (the offline default), `openai/<model>` or `workers-ai/<model>`.
    pub embedding_model: String,
    /// Where memory vectors live: `d1` (exact scan, the default) or `vectorize`.
    pub vector_backend: String,
    /// The channel model's context window, for compaction.
    pub context_window_tokens: u64,
    pub history_limit: u32,
    /// D1 shards holding conversations' rows (`crate::shards`): a power of two up to 64.
    pub d1_shards: u32,
    /// How long a channel object reuses the memory bulletin before reading it again.
    pub bulletin_cache_ms: i64,
    /// How long a channel object reuses its turns' shared reads (0: none; production 30 s).
    pub shared_reads_fresh_ms: i64,
    pub llm_timeout_ms: u64,
    pub llm_retry: RetryPolicy,
    pub send_max_attempts: u32,
    /// How long an acknowledged inbound may go without an outcome before the
    /// sweeper wakes its conversation.
    pub sweep_after_ms: i64,
    pub channel: ChannelSettings,
    /// The limits on failed sign-ins and token checks.
    pub sign_in: crate::sessions::limit::Limits,
    /// What a conversation's workspace may hold (`WORKSPACE_MAX_*`).
    pub workspace_quotas: crate::workspace::rules::Quotas,
    /// `run_code`'s limits (`SANDBOX_WALL_MS`, `SANDBOX_CPU_MS`, `SANDBOX_MAX_INPUT_BYTES`).
    pub sandbox: crate::sandbox::rules::Limits,
    /// `run_code` may fetch through the fetch guard (`SANDBOX_NETWORK = "guarded"`; default `off`).
    pub sandbox_network: bool,
    /// Who may write to the bot by email (`EMAIL_ALLOW`: addresses and domains,
    /// comma-separated, lowercased); empty: nobody.
    pub email_allow: Vec<String>,
}

impl Config {
    /// The caps of a metered tool.
    pub fn caps(&self, tool: MeteredTool) -> Caps {
        match tool {
            MeteredTool::RunCode => self.run_code_caps,
            MeteredTool::Browse => self.browse_caps,
        }
    }

    /// For tests: the configuration these settings make (every other one unset).
    #[cfg(test)]
    pub fn of(vars: &[(&str, &str)]) -> Config {
        Config::from_lookup(|name| vars.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string()))
    }

    /// Builds the configuration from a lookup of variable names; empty values
    /// count as absent.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let text = |name: &str, default: &str| {
            lookup(name).filter(|value| !value.trim().is_empty()).unwrap_or_else(|| default.to_string())
        };
        let secret = |name: &str| Secret::new(text(name, ""));
        let number = |name: &str, default: u64| text(name, "").trim().parse().unwrap_or(default);
        // A scope's daily budget: BUDGET_{SCOPE}_TOKENS_PER_DAY and BUDGET_{SCOPE}_USD_PER_DAY.
        let daily_limit = |scope: &str, tokens: u64, usd: f64| Limit {
            tokens: parse_tokens(lookup(&format!("BUDGET_{scope}_TOKENS_PER_DAY")).as_deref(), tokens),
            micro_usd: parse_usd(lookup(&format!("BUDGET_{scope}_USD_PER_DAY")).as_deref(), usd),
        };
        // A cap of 0 would be read as "none" by some and "nothing" by others: it takes the default.
        let positive = |name: &str, default: u32| {
            u32::try_from(number(name, default.into())).ok().filter(|&cap| cap > 0).unwrap_or(default)
        };
        let bot_name = text("BOT_NAME", DEFAULT_BOT_NAME);
        // BOT_NAME is an implicit alias; BOT_ALIASES adds more (comma-separated).
        let aliases = std::iter::once(bot_name.clone())
            .chain(text("BOT_ALIASES", "").split(',').map(|alias| alias.trim().to_string()))
            .filter(|alias| !alias.is_empty())
            .collect();
        let debounce_ms = number("COALESCE_DEBOUNCE_MS", DEFAULT_COALESCE_DEBOUNCE_MS) as i64;
        Config {
            admin_token: secret("ADMIN_TOKEN"),
            web_chat_token: secret("WEB_CHAT_TOKEN"),
            telegram_bot_token: secret("TELEGRAM_BOT_TOKEN"),
            telegram_bot_username: text("TELEGRAM_BOT_USERNAME", &bot_name),
            telegram_webhook_secret: secret("TELEGRAM_WEBHOOK_SECRET"),
            telegram_api_base: text("TELEGRAM_API_BASE", DEFAULT_TELEGRAM_API_BASE).trim_end_matches('/').to_string(),
            slack_signing_secret: secret("SLACK_SIGNING_SECRET"),
            slack_bot_token: secret("SLACK_BOT_TOKEN"),
            slack_bot_user_id: text("SLACK_BOT_USER_ID", ""),
            slack_api_base: text("SLACK_API_BASE", DEFAULT_SLACK_API_BASE).trim_end_matches('/').to_string(),
            slack_client_id: text("SLACK_CLIENT_ID", ""),
            slack_client_secret: secret("SLACK_CLIENT_SECRET"),
            slack_token_key: secret("SLACK_TOKEN_KEY"),
            slack_install_teams: text("SLACK_INSTALL_TEAMS", "")
                .split(',')
                .map(|team| team.trim().to_string())
                .filter(|team| !team.is_empty())
                .collect(),
            discord_public_key: text("DISCORD_PUBLIC_KEY", ""),
            discord_application_id: text("DISCORD_APPLICATION_ID", ""),
            discord_bot_token: secret("DISCORD_BOT_TOKEN"),
            discord_api_base: text("DISCORD_API_BASE", DEFAULT_DISCORD_API_BASE).trim_end_matches('/').to_string(),
            teams_app_id: text("TEAMS_APP_ID", ""),
            teams_app_password: secret("TEAMS_APP_PASSWORD"),
            teams_tenant_id: text("TEAMS_TENANT_ID", DEFAULT_TEAMS_TENANT_ID),
            teams_openid_url: text("TEAMS_OPENID_URL", DEFAULT_TEAMS_OPENID_URL),
            teams_token_url: text("TEAMS_TOKEN_URL", DEFAULT_TEAMS_TOKEN_URL)
                .replace("{tenant}", &text("TEAMS_TENANT_ID", DEFAULT_TEAMS_TENANT_ID)),
            teams_service_url: text("TEAMS_SERVICE_URL", DEFAULT_TEAMS_SERVICE_URL),
            teams_service_url_hosts: text("TEAMS_SERVICE_URL_HOSTS", DEFAULT_TEAMS_SERVICE_URL_HOSTS)
                .split(',')
                .map(|host| host.trim().to_ascii_lowercase())
                .filter(|host| !host.is_empty())
                .collect(),
            whatsapp_access_token: secret("WHATSAPP_ACCESS_TOKEN"),
            whatsapp_app_secret: secret("WHATSAPP_APP_SECRET"),
            whatsapp_verify_token: secret("WHATSAPP_VERIFY_TOKEN"),
            whatsapp_app_id: text("WHATSAPP_APP_ID", ""),
            whatsapp_api_base: text("WHATSAPP_API_BASE", DEFAULT_WHATSAPP_API_BASE).trim_end_matches('/').to_string(),
            webhook_secret: secret("WEBHOOK_SECRET"),
            webhook_callback_url: text("WEBHOOK_CALLBACK_URL", ""),
            timezone: text("TIMEZONE", "UTC"),
            schedule_min_interval_ms: number("SCHEDULE_MIN_INTERVAL_MS", 60_000) as i64,
            schedule_max_jobs_per_conversation: positive(
                "SCHEDULE_MAX_JOBS_PER_CONVERSATION",
                DEFAULT_MAX_JOBS_PER_CONVERSATION,
            ),
            schedule_max_creations_per_turn: positive(
                "SCHEDULE_MAX_CREATIONS_PER_TURN",
                DEFAULT_MAX_CREATIONS_PER_TURN,
            ),
            budgets: Budgets {
                person: daily_limit(
                    "PERSON",
                    budget::DEFAULT_PERSON_TOKENS_PER_DAY,
                    budget::DEFAULT_PERSON_USD_PER_DAY,
                ),
                conversation: daily_limit(
                    "CONVERSATION",
                    budget::DEFAULT_CONVERSATION_TOKENS_PER_DAY,
                    budget::DEFAULT_CONVERSATION_USD_PER_DAY,
                ),
                // A Slack workspace's (many workspaces): none below the deployment's unless set.
                workspace: daily_limit(
                    "WORKSPACE",
                    budget::DEFAULT_DEPLOYMENT_TOKENS_PER_DAY,
                    budget::DEFAULT_DEPLOYMENT_USD_PER_DAY,
                ),
                deployment: daily_limit(
                    "DEPLOYMENT",
                    budget::DEFAULT_DEPLOYMENT_TOKENS_PER_DAY,
                    budget::DEFAULT_DEPLOYMENT_USD_PER_DAY,
                ),
            },
            run_code_caps: Caps {
                per_worker: positive("RUN_CODE_PER_WORKER", MeteredTool::RunCode.default_caps().per_worker),
                per_conversation_day: positive(
                    "RUN_CODE_PER_CONVERSATION_PER_DAY",
                    MeteredTool::RunCode.default_caps().per_conversation_day,
                ),
            },
            browse_caps: Caps {
                per_worker: positive("BROWSE_PER_WORKER", MeteredTool::Browse.default_caps().per_worker),
                per_conversation_day: positive(
                    "BROWSE_PER_CONVERSATION_PER_DAY",
                    MeteredTool::Browse.default_caps().per_conversation_day,
                ),
            },
            web_chat_sessions_per_client_per_day: positive(
                "WEB_CHAT_SESSIONS_PER_CLIENT_PER_DAY",
                DEFAULT_WEB_CHAT_SESSIONS_PER_CLIENT_PER_DAY,
            ),
            discord_gateway: text("DISCORD_GATEWAY", "off").eq_ignore_ascii_case("on"),
            discord_gateway_url: text("DISCORD_GATEWAY_URL", ""),
            discord_shards: number("DISCORD_SHARDS", 0).min(u64::from(u32::MAX)) as u32,
            openai_base_url: text("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL),
            openai_api_key: secret("OPENAI_API_KEY"),
            anthropic_base_url: text("ANTHROPIC_BASE_URL", DEFAULT_ANTHROPIC_BASE_URL),
            anthropic_api_key: secret("ANTHROPIC_API_KEY"),
            channel_model: text("CHANNEL_MODEL", DEFAULT_CHANNEL_MODEL),
            branch_model: text("BRANCH_MODEL", &text("CHANNEL_MODEL", DEFAULT_CHANNEL_MODEL)),
            compactor_model: text("COMPACTOR_MODEL", &text("CHANNEL_MODEL", DEFAULT_CHANNEL_MODEL)),
            worker_model: text("WORKER_MODEL", &text("CHANNEL_MODEL", DEFAULT_CHANNEL_MODEL)),
            cortex_model: text("CORTEX_MODEL", &text("CHANNEL_MODEL", DEFAULT_CHANNEL_MODEL)),
            vision_model: Some(text("VISION_MODEL", "")).filter(|model| !model.trim().is_empty()),
            transcribe_model: Some(text("TRANSCRIBE_MODEL", "")).filter(|model| !model.trim().is_empty()),
            fetch_allowed_hosts: text("FETCH_ALLOW_HOSTS", "")
                .split(',')
                .map(|host| host.trim().to_ascii_lowercase())
                .filter(|host| !host.is_empty())
                .collect(),
            approvers: text("APPROVERS", "")
                .split(',')
                .map(|entry| entry.trim().to_string())
                .filter(|entry| crate::inbound::PersonKey::parse(entry).is_ok())
                .collect(),
            approval_timeout_ms: number(
                "APPROVAL_TIMEOUT_SECS",
                crate::approvals::rules::DEFAULT_TIMEOUT_MS as u64 / 1000,
            )
            .clamp(1, 7 * 24 * 3600) as i64
                * 1000,
            mcp_timeout_ms: number("MCP_TIMEOUT_MS", DEFAULT_MCP_TIMEOUT_MS).max(500),
            browse_timeout_ms: number("BROWSE_TIMEOUT_MS", DEFAULT_BROWSE_TIMEOUT_MS).clamp(1_000, 120_000),
            workspace_quotas: crate::workspace::rules::Quotas {
                files: positive("WORKSPACE_MAX_FILES", crate::workspace::rules::DEFAULT_MAX_FILES),
                bytes: number("WORKSPACE_MAX_BYTES", crate::workspace::rules::DEFAULT_MAX_BYTES).max(1),
                file_bytes: number("WORKSPACE_MAX_FILE_BYTES", crate::workspace::rules::DEFAULT_MAX_FILE_BYTES).max(1),
            },
            sandbox: crate::sandbox::rules::Limits::new(
                number("SANDBOX_WALL_MS", crate::sandbox::rules::DEFAULT_WALL_MS),
                number("SANDBOX_CPU_MS", crate::sandbox::rules::DEFAULT_CPU_MS),
                number("SANDBOX_MAX_INPUT_BYTES", crate::sandbox::rules::DEFAULT_MAX_INPUT_BYTES),
            ),
            sandbox_network: text("SANDBOX_NETWORK", "off").trim().eq_ignore_ascii_case("guarded"),
            stream_replies: match text("STREAM_REPLIES", DEFAULT_STREAM_REPLIES).trim() {
                "off" | "none" => Vec::new(),
                list => {
                    list.split(',').map(|name| name.trim().to_ascii_lowercase()).filter(|n| !n.is_empty()).collect()
                }
            },
            search_api_key: secret("SEARCH_API_KEY"),
            search_base_url: text("SEARCH_BASE_URL", DEFAULT_SEARCH_BASE_URL).trim_end_matches('/').to_string(),
            embedding_model: text("EMBEDDING_MODEL", "local"),
            vector_backend: text("VECTOR_BACKEND", "d1").to_ascii_lowercase(),
            context_window_tokens: number(
                "CONTEXT_WINDOW_TOKENS",
                crate::process::compaction::DEFAULT_CONTEXT_WINDOW_TOKENS,
            ),
            history_limit: number("HISTORY_LIMIT", DEFAULT_HISTORY_LIMIT.into()).clamp(1, 500) as u32,
            d1_shards: number("D1_SHARDS", 1).min(u32::MAX.into()) as u32,
            shared_reads_fresh_ms: number("SHARED_READS_FRESH_MS", 0).min(3_600_000) as i64,
            bulletin_cache_ms: number(
                "BULLETIN_CACHE_MS",
                crate::channel::history_mirror::DEFAULT_BULLETIN_CACHE_MS as u64,
            ) as i64,
            llm_timeout_ms: number("LLM_TIMEOUT_MS", DEFAULT_LLM_TIMEOUT_MS).max(100),
            llm_retry: RetryPolicy {
                max_attempts: number("LLM_MAX_ATTEMPTS", DEFAULT_LLM_MAX_ATTEMPTS.into()).clamp(1, 10) as u32,
                base_backoff_ms: number("LLM_BACKOFF_MS", DEFAULT_LLM_BACKOFF_MS),
            },
            send_max_attempts: number("SEND_MAX_ATTEMPTS", DEFAULT_SEND_MAX_ATTEMPTS.into()).clamp(1, 10) as u32,
            sweep_after_ms: number("SWEEP_AFTER_MS", DEFAULT_SWEEP_AFTER_MS).max(1_000) as i64,
            channel: ChannelSettings {
                triggers: Triggers::parse(&text("ENGAGE_TRIGGERS", "dm,mention,reply")),
                stickiness: !text("STICKINESS", "on").eq_ignore_ascii_case("off"),
                sticky_window_ms: number("STICKY_WINDOW_MS", DEFAULT_STICKY_WINDOW_MS as u64) as i64,
                aliases,
                debounce_ms,
                max_wait_ms: (number("COALESCE_MAX_WAIT_MS", DEFAULT_COALESCE_MAX_WAIT_MS) as i64).max(debounce_ms),
                timeouts: Timeouts {
                    branch_ms: number("BRANCH_TIMEOUT_MS", DEFAULT_BRANCH_TIMEOUT_MS as u64).max(1_000) as i64,
                    worker_ms: number("WORKER_TIMEOUT_MS", DEFAULT_WORKER_TIMEOUT_MS as u64).max(1_000) as i64,
                },
            },
            sign_in: crate::sessions::limit::Limits {
                per_client: number("SIGN_IN_CLIENT_LIMIT", DEFAULT_SIGN_IN_CLIENT_LIMIT.into()).max(1) as u32,
                overall: number("SIGN_IN_LIMIT", DEFAULT_SIGN_IN_LIMIT.into()).max(1) as u32,
                window_ms: number("SIGN_IN_WINDOW_SECS", DEFAULT_SIGN_IN_WINDOW_SECS).max(1) as i64 * 1000,
            },
            email_allow: text("EMAIL_ALLOW", "")
                .split(',')
                .map(|entry| entry.trim().to_lowercase())
                .filter(|entry| !entry.is_empty())
                .collect(),
            bot_name,
        }
    }

    /// Why the Worker refuses to serve with this configuration, if it does:
    /// a token too short to derive a signing key from, or an invitation that
    /// is the admin token (every guest would be an operator). The message
    /// names the variable, never its value.
    pub fn refusal(&self) -> Option<String> {
        for (name, value) in [("ADMIN_TOKEN", &self.admin_token), ("WEB_CHAT_TOKEN", &self.web_chat_token)] {
            if value.is_set() && value.expose().chars().count() < MIN_SECRET_CHARS {
                return Some(format!(
                    "{name} is shorter than {MIN_SECRET_CHARS} characters: the Worker refuses to start until it is \
                     longer (or unset)"
                ));
            }
        }
        if !crate::shards::is_valid_count(self.d1_shards) {
            return Some(format!(
                "D1_SHARDS is {}: the Worker refuses to start until it is a power of two from 1 to {}",
                self.d1_shards,
                crate::shards::MAX_SHARDS
            ));
        }
        if self.admin_token.is_set() && self.admin_token == self.web_chat_token {
            return Some("WEB_CHAT_TOKEN equals ADMIN_TOKEN: the Worker refuses to start until they differ".into());
        }
        None
    }
}

impl Config {
    /// Every secret setting: its variable, its value and the base URL of the one
    /// API it may be sent to (None: it is never sent anywhere).
    pub fn secrets(&self) -> [(&'static str, &Secret, Option<&str>); SECRET_VARIABLES.len()] {
        [
            ("ADMIN_TOKEN", &self.admin_token, None),
            ("WEB_CHAT_TOKEN", &self.web_chat_token, None),
            ("OPENAI_API_KEY", &self.openai_api_key, Some(&self.openai_base_url)),
            ("ANTHROPIC_API_KEY", &self.anthropic_api_key, Some(&self.anthropic_base_url)),
            ("SEARCH_API_KEY", &self.search_api_key, Some(&self.search_base_url)),
            ("TELEGRAM_BOT_TOKEN", &self.telegram_bot_token, Some(&self.telegram_api_base)),
            ("TELEGRAM_WEBHOOK_SECRET", &self.telegram_webhook_secret, None),
            ("SLACK_SIGNING_SECRET", &self.slack_signing_secret, None),
            ("SLACK_BOT_TOKEN", &self.slack_bot_token, Some(&self.slack_api_base)),
            ("DISCORD_BOT_TOKEN", &self.discord_bot_token, Some(&self.discord_api_base)),
            ("TEAMS_APP_PASSWORD", &self.teams_app_password, Some(&self.teams_token_url)),
            ("WHATSAPP_ACCESS_TOKEN", &self.whatsapp_access_token, Some(&self.whatsapp_api_base)),
            ("WHATSAPP_APP_SECRET", &self.whatsapp_app_secret, None),
            ("WHATSAPP_VERIFY_TOKEN", &self.whatsapp_verify_token, None),
            ("WEBHOOK_SECRET", &self.webhook_secret, None),
            ("SLACK_CLIENT_SECRET", &self.slack_client_secret, Some(&self.slack_api_base)),
            ("SLACK_TOKEN_KEY", &self.slack_token_key, None),
        ]
    }

    /// The redactor that keeps these secrets in.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.secrets().map(|(name, value, home)| (name, value.expose(), home)))
    }

    /// Whether "Add to Slack" is on: the app's client id and secret and a
    /// well-formed token key are all set. Off, Slack runs on `SLACK_BOT_TOKEN`
    /// alone, exactly as without installs.
    pub fn slack_installs(&self) -> bool {
        !self.slack_client_id.is_empty()
            && self.slack_client_secret.is_set()
            && crate::platforms::slack::install::rules::TokenKey::parse(self.slack_token_key.expose()).is_some()
    }

    /// Whether replies on `platform` (`web`, `telegram`, `slack`, `discord`) stream.
    pub fn streams(&self, platform: &str) -> bool {
        self.stream_replies.iter().any(|name| name == platform)
    }

    /// What the dashboard's settings page shows: the effective non-secret
    /// settings and which secrets are set (never their values). Bindings and
    /// platform states are in `/api/status`.
    pub fn public_view(&self) -> serde_json::Value {
        let mut secrets_set: serde_json::Map<String, serde_json::Value> =
            self.secrets().iter().map(|(name, value, _)| (name.to_string(), value.is_set().into())).collect();
        secrets_set.insert("DISCORD_PUBLIC_KEY".into(), (!self.discord_public_key.is_empty()).into());
        serde_json::json!({
            "bot_name": self.bot_name,
            "aliases": self.channel.aliases,
            "models": {
                "channel": self.channel_model,
                "branch": self.branch_model,
                "worker": self.worker_model,
                "compactor": self.compactor_model,
                "cortex": self.cortex_model,
                "embedding": self.embedding_model,
                "vision": self.vision_model,
                "transcribe": self.transcribe_model,
            },
            "vector_backend": self.vector_backend,
            "timezone": self.timezone,
            "history_limit": self.history_limit,
            "d1_shards": self.d1_shards,
            "context_window_tokens": self.context_window_tokens,
            "engagement": {
                "stickiness": self.channel.stickiness,
                "sticky_window_ms": self.channel.sticky_window_ms,
                "coalesce_debounce_ms": self.channel.debounce_ms,
                "coalesce_max_wait_ms": self.channel.max_wait_ms,
            },
            "api_bases": {
                "openai": self.openai_base_url,
                "anthropic": self.anthropic_base_url,
                "telegram": self.telegram_api_base,
                "slack": self.slack_api_base,
                "discord": self.discord_api_base,
                "teams_openid": self.teams_openid_url,
                "teams_token": self.teams_token_url,
                "whatsapp": self.whatsapp_api_base,
            },
            "discord_gateway": self.discord_gateway,
            "stream_replies": self.stream_replies,
            "limits": {
                "schedule_max_jobs_per_conversation": self.schedule_max_jobs_per_conversation,
                "schedule_max_creations_per_turn": self.schedule_max_creations_per_turn,
                "budgets": {
                    "person": self.budgets.person,
                    "conversation": self.budgets.conversation,
                    "deployment": self.budgets.deployment,
                },
                "web_chat_sessions_per_client_per_day": self.web_chat_sessions_per_client_per_day,
                "workspace": {
                    "files": self.workspace_quotas.files,
                    "bytes": self.workspace_quotas.bytes,
                    "file_bytes": self.workspace_quotas.file_bytes,
                },
                "sandbox": {
                    "wall_ms": self.sandbox.wall_ms,
                    "cpu_ms": self.sandbox.cpu_ms,
                    "max_input_bytes": self.sandbox.max_input_bytes,
                    "network": if self.sandbox_network { "guarded" } else { "off" },
                },
            },
            "secrets_set": secrets_set,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn every_secret_setting_is_redacted_under_its_own_name_and_plain_settings_are_not() {
        let config = Config::from_lookup(|name| match SECRET_VARIABLES.contains(&name) {
            true => Some(format!("value-of-{name}")),
            false => Some(format!("plain-{name}")),
        });
        let mut names: Vec<&str> = config.secrets().iter().map(|(name, _, _)| *name).collect();
        names.sort_unstable();
        let mut expected = SECRET_VARIABLES.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected);
        let redactor = config.redactor();
        for name in SECRET_VARIABLES {
            let found: Vec<&str> = redactor.found_in(&format!("x value-of-{name} y")).iter().map(|s| s.name).collect();
            assert_eq!(found, [name], "each secret under its own name");
        }
        assert_eq!(redactor.scrub("value-of-SLACK_SIGNING_SECRET plain-BOT_NAME"), "[redacted] plain-BOT_NAME");
        let shown = format!("{config:?}");
        assert!(!shown.contains("value-of-"), "Debug shows no secret: {shown}");
    }

    #[test]
    fn the_public_view_says_which_secrets_are_set_and_never_shows_one() {
        let vars: HashMap<&str, &str> =
            [("TELEGRAM_BOT_TOKEN", "4242:very-secret"), ("TELEGRAM_WEBHOOK_SECRET", "hook-secret")].into();
        let view = Config::from_lookup(|name| vars.get(name).map(|value| value.to_string())).public_view();
        assert_eq!(view["secrets_set"]["TELEGRAM_BOT_TOKEN"], true);
        assert_eq!(view["secrets_set"]["SLACK_BOT_TOKEN"], false);
        let text = view.to_string();
        assert!(!text.contains("very-secret") && !text.contains("hook-secret"), "{text}");
    }

    #[test]
    fn absent_or_empty_settings_take_defaults() {
        let config = Config::from_lookup(|name| (name == "OPENAI_API_KEY").then(String::new));
        assert_eq!(config.bot_name, DEFAULT_BOT_NAME);
        assert_eq!(config.telegram_bot_username, DEFAULT_BOT_NAME);
        assert_eq!(config.channel_model, DEFAULT_CHANNEL_MODEL);
        assert!(!config.openai_api_key.is_set());
        assert_eq!(config.history_limit, DEFAULT_HISTORY_LIMIT);
        assert_eq!(config.llm_retry.max_attempts, DEFAULT_LLM_MAX_ATTEMPTS);
        assert_eq!(config.channel.aliases, vec![DEFAULT_BOT_NAME.to_string()]);
        assert_eq!(config.channel.triggers, Triggers::default());
        assert!(config.channel.stickiness);
        assert_eq!(config.channel.debounce_ms, 1_500);
        assert_eq!(config.channel.max_wait_ms, 5_000);
        assert_eq!(config.schedule_max_jobs_per_conversation, DEFAULT_MAX_JOBS_PER_CONVERSATION);
        assert_eq!(config.schedule_max_creations_per_turn, DEFAULT_MAX_CREATIONS_PER_TURN);
        assert_eq!(config.budgets, Budgets::default());
        assert_eq!(config.web_chat_sessions_per_client_per_day, DEFAULT_WEB_CHAT_SESSIONS_PER_CLIENT_PER_DAY);
        assert_eq!(config.caps(MeteredTool::RunCode), MeteredTool::RunCode.default_caps());
    }

    #[test]
    fn a_metered_tools_caps_are_set_one_by_one() {
        let config = Config::of(&[("BROWSE_PER_WORKER", "3"), ("RUN_CODE_PER_CONVERSATION_PER_DAY", "0")]);
        let browse = config.caps(MeteredTool::Browse);
        assert_eq!((browse.per_worker, browse.per_conversation_day), (3, 60));
        assert_eq!(config.caps(MeteredTool::RunCode), MeteredTool::RunCode.default_caps(), "0 takes the default");
    }

    #[test]
    fn limits_of_zero_take_defaults_and_only_unlimited_lifts_a_budget() {
        let vars: HashMap<&str, &str> = [
            ("SCHEDULE_MAX_JOBS_PER_CONVERSATION", "0"),
            ("SCHEDULE_MAX_CREATIONS_PER_TURN", "5"),
            ("BUDGET_PERSON_TOKENS_PER_DAY", "0"),
            ("BUDGET_PERSON_USD_PER_DAY", "2.5"),
            ("BUDGET_DEPLOYMENT_TOKENS_PER_DAY", "unlimited"),
            ("WEB_CHAT_SESSIONS_PER_CLIENT_PER_DAY", "-1"),
        ]
        .into();
        let config = Config::from_lookup(|name| vars.get(name).map(|value| value.to_string()));
        assert_eq!(config.schedule_max_jobs_per_conversation, DEFAULT_MAX_JOBS_PER_CONVERSATION);
        assert_eq!(config.schedule_max_creations_per_turn, 5);
        assert_eq!(config.budgets.person.tokens, Some(budget::DEFAULT_PERSON_TOKENS_PER_DAY));
        assert_eq!(config.budgets.person.micro_usd, Some(2_500_000));
        assert_eq!(config.budgets.deployment.tokens, None);
        assert_eq!(config.budgets.deployment.micro_usd, Budgets::default().deployment.micro_usd);
        assert_eq!(config.web_chat_sessions_per_client_per_day, DEFAULT_WEB_CHAT_SESSIONS_PER_CLIENT_PER_DAY);
    }

    fn with(vars: &[(&str, &str)]) -> Config {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        Config::from_lookup(|name| vars.get(name).map(|value| value.to_string()))
    }

    #[test]
    fn a_token_under_sixteen_characters_is_refused_by_name_and_never_shown() {
        assert_eq!(with(&[]).refusal(), None, "unset tokens are no refusal");
        assert_eq!(
            with(&[("ADMIN_TOKEN", "0123456789abcdef"), ("WEB_CHAT_TOKEN", "invitation-12345")]).refusal(),
            None
        );
        for (name, value) in [("ADMIN_TOKEN", "0123456789abcde"), ("WEB_CHAT_TOKEN", "short-invite")] {
            let refusal = with(&[(name, value)]).refusal().expect("refused");
            assert!(refusal.starts_with(name) && refusal.contains("16 characters"), "{refusal}");
            assert!(!refusal.contains(value), "{refusal}");
        }
        // Characters, not bytes: 15 two-byte letters are still too short.
        assert!(with(&[("ADMIN_TOKEN", &"é".repeat(15))]).refusal().is_some());
        let same = with(&[("ADMIN_TOKEN", "the-same-token-16"), ("WEB_CHAT_TOKEN", "the-same-token-16")]);
        assert!(same.refusal().unwrap().contains("equals ADMIN_TOKEN"));
        assert_eq!(with(&[("D1_SHARDS", "4")]).refusal(), None);
        for bad in ["3", "0", "128"] {
            assert!(with(&[("D1_SHARDS", bad)]).refusal().unwrap().contains("D1_SHARDS"), "{bad}");
        }
    }

    #[test]
    fn replies_stream_everywhere_by_default_and_stream_replies_chooses_or_turns_it_off() {
        let defaults = with(&[]);
        assert!(["web", "telegram", "slack", "discord"].iter().all(|platform| defaults.streams(platform)));
        let chosen = with(&[("STREAM_REPLIES", " Web, telegram ")]);
        assert!(chosen.streams("web") && chosen.streams("telegram") && !chosen.streams("slack"));
        for off in ["off", "none"] {
            assert!(!with(&[("STREAM_REPLIES", off)]).streams("web"), "{off}");
        }
    }

    #[test]
    fn every_platform_streams_by_default_so_a_new_one_joins_the_default_list() {
        let defaults = with(&[]);
        for platform in crate::platforms::Platform::ALL {
            assert!(defaults.streams(platform.as_str()), "{platform} is missing from DEFAULT_STREAM_REPLIES");
        }
    }

    #[test]
    fn sign_in_limits_have_defaults_and_settings() {
        let defaults = with(&[]).sign_in;
        assert_eq!((defaults.per_client, defaults.overall, defaults.window_ms), (10, 100, 900_000));
        let set = with(&[("SIGN_IN_CLIENT_LIMIT", "3"), ("SIGN_IN_LIMIT", "0"), ("SIGN_IN_WINDOW_SECS", "60")]).sign_in;
        assert_eq!((set.per_client, set.overall, set.window_ms), (3, 1, 60_000), "a zero limit is one");
    }

    #[test]
    fn given_settings_win_and_bad_numbers_fall_back() {
        let vars: HashMap<&str, &str> = [
            ("BOT_NAME", "Pip"),
            ("TELEGRAM_API_BASE", "http://127.0.0.1:9/"),
            ("LLM_MAX_ATTEMPTS", "2"),
            ("LLM_TIMEOUT_MS", "soon"),
            ("BOT_ALIASES", "pip bot, 핍,"),
            ("ENGAGE_TRIGGERS", "mention"),
            ("STICKINESS", "off"),
        ]
        .into();
        let config = Config::from_lookup(|name| vars.get(name).map(|value| value.to_string()));
        assert_eq!(config.bot_name, "Pip");
        assert_eq!(config.telegram_bot_username, "Pip");
        assert_eq!(config.telegram_api_base, "http://127.0.0.1:9");
        assert_eq!(config.llm_retry.max_attempts, 2);
        assert_eq!(config.llm_timeout_ms, DEFAULT_LLM_TIMEOUT_MS);
        assert_eq!(config.channel.aliases, vec!["Pip", "pip bot", "핍"]);
        assert_eq!(config.channel.triggers, Triggers { dm: false, mention: true, reply: false });
        assert!(!config.channel.stickiness);
    }

    #[test]
    fn approvers_are_platform_ids_and_the_waits_have_floors() {
        let vars = [("APPROVERS", "slack:U1, telegram:42,bogus,:7,web:"), ("APPROVAL_TIMEOUT_SECS", "0")];
        let config = Config::from_lookup(|name| vars.iter().find(|(key, _)| *key == name).map(|(_, v)| v.to_string()));
        assert_eq!(config.approvers, vec!["slack:U1".to_string(), "telegram:42".to_string()]);
        assert_eq!(config.approval_timeout_ms, 1_000);
        assert_eq!(config.mcp_timeout_ms, DEFAULT_MCP_TIMEOUT_MS);
        assert_eq!(config.browse_timeout_ms, DEFAULT_BROWSE_TIMEOUT_MS);
        let defaults = Config::from_lookup(|_| None);
        assert_eq!(defaults.approval_timeout_ms, crate::approvals::rules::DEFAULT_TIMEOUT_MS);
        assert!(defaults.approvers.is_empty());
    }

    #[test]
    fn slack_installs_need_the_client_id_the_secret_and_a_well_formed_key() {
        let key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
        let with = |vars: &[(&str, &str)]| {
            let vars = vars.to_vec();
            Config::from_lookup(move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
        };
        let all = [("SLACK_CLIENT_ID", "1.2"), ("SLACK_CLIENT_SECRET", "s3cr3t"), ("SLACK_TOKEN_KEY", key)];
        assert!(with(&all).slack_installs());
        for missing in 0..all.len() {
            let mut some = all.to_vec();
            some.remove(missing);
            assert!(!with(&some).slack_installs(), "without {}", all[missing].0);
        }
        let short_key = [all[0], all[1], ("SLACK_TOKEN_KEY", "c2hvcnQ=")];
        assert!(!with(&short_key).slack_installs(), "a key that is not 32 bytes");
        let teams = with(&[("SLACK_INSTALL_TEAMS", " T1, ,T2 ")]);
        assert_eq!(teams.slack_install_teams, vec!["T1".to_string(), "T2".to_string()]);
    }
}
