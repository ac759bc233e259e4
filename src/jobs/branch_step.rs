//! Runs a branch from its queue message and reports its conclusion to the
//! channel. The report's id is derived from the job's, so a redelivered job's
//! report is recognised by the channel as the same one.

use serde_json::Value;
use worker::{D1Database, Env};

use crate::jobs::deliver;

use crate::approvals::rules::Kind;
use crate::approvals::store as approvals;
use crate::approvals::store::Approval;
use crate::budget::rules::Person;
use crate::budget::usage;
use crate::config::Config;
use crate::conversations::archive as history;
use crate::files::store as files;
use crate::inbound::InboundEvent;
use crate::jobs::worker_step;
use crate::llm::client::HttpModel;
use crate::llm::LlmError;
use crate::llm::ToolSpec;
use crate::log_line::LogLine;
use crate::mcp::toolbox::Toolbox;
use crate::memory::store as memory;
use crate::people::store as people;
use crate::process::branch::{compose_messages, run_branch, BranchJob, BranchTools};
use crate::process::envelope::{Envelope, MessageType};
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::Metered;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::tasks::store as tasks;

/// Thinks (or, out of retries, gives up) and reports. An error means the
/// queue should retry.
pub async fn run(config: &Config, env: &Env, branch: &BranchJob, dead_letters: bool) -> Result<(), String> {
    let database = env.d1(DATABASE_BINDING).map_err(|error| error.to_string())?;
    let envelope = if dead_letters {
        // Out of retries: the user is told instead of waiting forever.
        report(branch, MessageType::Error, "the branch failed after several attempts".into())
    } else if let Some(scope) = over_budget(config, &database, branch).await {
        report(branch, MessageType::Error, format!("the branch was not run: today's {} budget is spent", scope.name()))
    } else {
        // A failed read is retried by the queue, like a failed model call.
        let identity = identity(&database, branch).await?;
        match think(config, env, &database, branch, &identity).await {
            Ok(conclusion) => report(branch, MessageType::Done, conclusion),
            Err(error) if error.is_retryable() => return Err(error.to_string()),
            Err(error) => report(branch, MessageType::Error, format!("the branch failed: {error}")),
        }
    };
    deliver(env, &branch.conversation_key, &envelope).await.map_err(|error| error.to_string())
}

async fn over_budget(
    config: &Config,
    database: &D1Database,
    branch: &BranchJob,
) -> Option<crate::budget::rules::Scope> {
    crate::budget::store::over_budget(database, &config.budgets, &usage::Spender::of(&branch.origin)).await
}

/// The conversation's identity block as it is now: a branch forks the
/// channel's context, so it thinks as the same character (override included).
async fn identity(database: &D1Database, branch: &BranchJob) -> Result<String, String> {
    let texts =
        crate::identity::store::load(database, &branch.conversation_key).await.map_err(|error| error.to_string())?;
    texts.render().map_err(|error| error.to_string())
}

async fn think(
    config: &Config,
    env: &Env,
    database: &D1Database,
    branch: &BranchJob,
    identity: &str,
) -> Result<String, LlmError> {
    let model = HttpModel::new(config, env, &config.branch_model)?;
    let messages =
        compose_messages(branch, &config.bot_name, identity).map_err(|error| LlmError::Config(error.to_string()))?;
    let tools = EdgeTools {
        config,
        env,
        db: database,
        conversation_key: &branch.conversation_key,
        branch_id: &branch.id,
        people: &branch.people,
        origin: &branch.origin,
        mcp: Toolbox::open(config, env, database, true).await,
    };
    let started = now_ms();
    let (conclusion, spent) = run_branch(&model, model.model_name(), &tools, messages).await?;
    let line = LogLine::info("branch_finished").conversation(&branch.conversation_key).id(&branch.id);
    line.duration_ms(now_ms() - started).tokens(spent).emit();
    let spender = usage::Spender::of(&branch.origin);
    if let Err(error) = usage::record(database, &spender, "branch", model.spent(), now_ms()).await {
        let line = LogLine::warn("usage_not_recorded").conversation(&branch.conversation_key);
        line.field("process", "branch").reason(&error).emit();
    }
    Ok(conclusion)
}

fn report(branch: &BranchJob, kind: MessageType, body: String) -> Envelope {
    Envelope::report("branch", &branch.id, "report", now_ms(), kind, body)
}

/// The branch's tools as they act on D1 (and the memory store).
struct EdgeTools<'a> {
    config: &'a Config,
    env: &'a Env,
    db: &'a D1Database,
    conversation_key: &'a str,
    branch_id: &'a str,
    /// The people writing in the turn that started the branch: the only
    /// profiles its person tools may change.
    people: &'a [crate::people::rules::Profile],
    /// The message the branch thinks about (whoever wrote it proposes its tasks).
    origin: &'a InboundEvent,
    /// Tools of MCP servers open to branches, those that need no approval.
    mcp: Toolbox<'a>,
}

impl BranchTools for EdgeTools<'_> {
    fn extra_tools(&self) -> Vec<ToolSpec> {
        self.mcp.specs()
    }

    async fn call(&self, name: &str, arguments: &Value) -> String {
        let result = match name {
            "memory_save" | "memory_recall" | "memory_delete" => {
                memory::tool(self.config, self.env, self.db, self.conversation_key, name, arguments).await
            }
            "person_note" | "person_forget" => {
                return people::tool(self.db, self.people, name, arguments)
                    .await
                    .unwrap_or_else(|error| format!("error: {error}"));
            }
            _ => self.conversation_tool(name, arguments).await,
        };
        result.unwrap_or_else(|error| format!("error: {error}"))
    }
}

impl EdgeTools<'_> {
    async fn conversation_tool(&self, name: &str, arguments: &Value) -> worker::Result<String> {
        let argument = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("").trim().to_string();
        let (db, key) = (self.db, self.conversation_key);
        Ok(match name {
            "channel_recall" => {
                let found = history::search(db, key, &argument("query"), 10).await?;
                if found.is_empty() {
                    "nothing found".to_string()
                } else {
                    found.iter().map(|row| format!("{}: {}\n", row.author_name, row.content)).collect()
                }
            }
            "task_create" => match tasks::propose(db, key, arguments).await? {
                Ok(task) => {
                    self.ask_approval(&task).await?;
                    format!(
                        "task {} created; it waits for a person's approval (buttons in the conversation) before a \
                         worker takes it",
                        task.id
                    )
                }
                Err(why) => format!("error: {why}"),
            },
            "task_list" | "task_update" => tasks::branch_tool(db, key, name, arguments).await?,
            "attachment_read" => files::read(self.env, db, key, &argument("id")).await,
            "attachment_recall" => files::recall(db, key).await,
            "send_file" => {
                crate::jobs::send_file(self.config, self.env, db, key, ("branch", self.branch_id), arguments).await
            }
            "worker_inspect" => {
                let id = argument("id");
                let workers = worker_step::list(db, key).await?;
                let shown: Vec<_> = workers.iter().filter(|worker| id.is_empty() || worker.id == id).collect();
                serde_json::to_string(&shown)?
            }
            other => match self.mcp.call(other, arguments).await {
                Some(result) => result,
                None => format!("error: there is no tool named `{other}`"),
            },
        })
    }

    /// A proposed task waits for a person: its approval is recorded and
    /// asked in the conversation, with the same buttons as a tool call's.
    async fn ask_approval(&self, task: &tasks::Task) -> worker::Result<()> {
        let asker = Person::of(self.conversation_key, &self.origin.author);
        let approval = Approval::new(
            self.conversation_key,
            Kind::Task,
            &task.id.to_string(),
            None,
            (&task.title, &task.description),
            asker.as_ref(),
            None,
        );
        approvals::record(self.db, &approval)?.run_counted().await?;
        approvals::ask(self.env, &approval, self.branch_id).await
    }
}
