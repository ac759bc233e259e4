//! Runs a branch from its queue message and reports its conclusion to the
//! channel. The report's id is derived from the job's, so a redelivered job's
//! report is recognised by the channel as the same one.

use serde_json::Value;
use worker::{D1Database, Env};

use crate::files::tools as files;
use crate::jobs::deliver;

use crate::agents::snapshot::{self, Snapshot};
use crate::approvals::rules::Kind;
use crate::approvals::store as approvals;
use crate::approvals::store::Approval;
use crate::budget::rules::Person;
use crate::budget::usage;
use crate::config::Config;
use crate::conversations::archive as history;
use crate::files::arguments::{AttachmentRead, AttachmentReadArguments, AttachmentRecall, SendFile, SendFileArguments};
use crate::inbound::InboundEvent;
use crate::jobs::worker_step;
use crate::llm::client::HttpModel;
use crate::llm::tool::{answer, given, NoArguments, Run};
use crate::llm::LlmError;
use crate::llm::ToolSpec;
use crate::log_line::LogLine;
use crate::mcp::toolbox::Toolbox;
use crate::memory::arguments::{MemoryDelete, MemoryDeleteArguments, MemoryRecall, MemoryRecallArguments};
use crate::memory::arguments::{MemorySave, MemorySaveArguments};
use crate::memory::tools::MemoryTools;
use crate::people::arguments::{PersonForget, PersonForgetArguments, PersonNote, PersonNoteArguments};
use crate::people::store as people;
use crate::people::store::ProfileChange;
use crate::process::branch::{compose_messages, run_branch, BranchJob, BranchToolSet, BranchTools};
use crate::process::envelope::{Envelope, MessageType};
use crate::process::tool_sets::{ChannelRecall, ChannelRecallArguments, WorkerInspect, WorkerInspectArguments};
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::Metered;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::tasks::arguments::{TaskCreate, TaskCreateArguments, TaskList, TaskUpdate, TaskUpdateArguments};
use crate::tasks::store as tasks;

/// Thinks (or, out of retries, gives up) and reports. An error means the
/// queue should retry.
pub async fn run(config: &Config, env: &Env, branch: &BranchJob, dead_letters: bool) -> Result<(), String> {
    let database = env.d1(DATABASE_BINDING).map_err(|error| error.to_string())?;
    let envelope = if dead_letters {
        // Out of retries: the user is told instead of waiting forever.
        report(branch, MessageType::Error, "the branch failed after several attempts".into())
    } else {
        // A failed read is retried by the queue, like a failed model call.
        let agent = snapshot::of(env, &database, &branch.conversation_key).await.map_err(|error| error.to_string())?;
        let spender = usage::Spender::of(&branch.origin);
        let limits = agent.limits_for(&spender);
        match crate::budget::store::over_budget(env, &config.budgets, &spender, limits).await {
            Some(scope) => report(
                branch,
                MessageType::Error,
                format!("the branch was not run: today's {} budget is spent", scope.name()),
            ),
            None => {
                let identity = identity(&database, &agent, branch).await?;
                match think(config, env, &database, branch, &agent, &identity).await {
                    Ok(conclusion) => report(branch, MessageType::Done, conclusion),
                    Err(error) if error.is_retryable() => return Err(error.to_string()),
                    Err(error) => report(branch, MessageType::Error, format!("the branch failed: {error}")),
                }
            }
        }
    };
    deliver(env, &branch.conversation_key, &envelope).await.map_err(|error| error.to_string())
}

/// The conversation's identity block as it is now: a branch forks the
/// channel's context, so it thinks as the same character (override included).
async fn identity(database: &D1Database, agent: &Snapshot, branch: &BranchJob) -> Result<String, String> {
    let texts = match agent.identity_for(&branch.conversation_key) {
        Some(texts) => texts,
        None => {
            crate::identity::store::load(database, &branch.conversation_key).await.map_err(|error| error.to_string())?
        }
    };
    texts.render().map_err(|error| error.to_string())
}

async fn think(
    config: &Config,
    env: &Env,
    database: &D1Database,
    branch: &BranchJob,
    agent: &Snapshot,
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
        mcp: match agent.mcp_servers {
            true => Toolbox::open(config, env, database, true, |server| agent.settings.permits_server(server)).await,
            false => Toolbox::none(),
        },
    };
    let started = now_ms();
    let (conclusion, spent) = run_branch(&model, model.model_name(), &tools, messages).await?;
    let line = LogLine::info("branch_finished").conversation(&branch.conversation_key).id(&branch.id);
    line.duration_ms(now_ms() - started).tokens(spent).emit();
    let spender = usage::Spender::of(&branch.origin);
    if let Err(error) = usage::record(env, &spender, "branch", model.spent(), now_ms()).await {
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
        match BranchToolSet::call(self, name, arguments).await {
            Some(result) => answer(result),
            None => self.mcp.call_or_refuse(name, arguments).await,
        }
    }
}

impl EdgeTools<'_> {
    fn memory(&self) -> MemoryTools<'_> {
        MemoryTools {
            config: self.config,
            env: self.env,
            db: self.db,
            conversation_key: self.conversation_key,
            source_message: &self.origin.message_id,
        }
    }

    /// A profile tool's answer.
    async fn profile(&self, person: &Option<String>, change: ProfileChange) -> String {
        answer(people::tool(self.env, self.people, given(person), &change).await)
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

/// What a failed read or write of a tool tells the model.
fn failed(result: worker::Result<String>) -> String {
    result.unwrap_or_else(|error| format!("error: {error}"))
}

impl Run<MemorySave> for EdgeTools<'_> {
    async fn run(&self, arguments: MemorySaveArguments) -> String {
        failed(self.memory().save(arguments).await)
    }
}

impl Run<MemoryRecall> for EdgeTools<'_> {
    async fn run(&self, arguments: MemoryRecallArguments) -> String {
        failed(self.memory().recall(arguments).await)
    }
}

impl Run<MemoryDelete> for EdgeTools<'_> {
    async fn run(&self, arguments: MemoryDeleteArguments) -> String {
        failed(self.memory().delete(arguments).await)
    }
}

impl Run<ChannelRecall> for EdgeTools<'_> {
    async fn run(&self, arguments: ChannelRecallArguments) -> String {
        let shard = crate::runtime::d1::shard_of(self.env, self.conversation_key);
        let found = match shard {
            Ok(shard) => history::search(&shard, self.conversation_key, arguments.query.trim(), 10).await,
            Err(error) => Err(error),
        };
        failed(found.map(|found| match found.is_empty() {
            true => "nothing found".to_string(),
            false => found.iter().map(|row| format!("{}: {}\n", row.author_name, row.content)).collect(),
        }))
    }
}

impl Run<TaskCreate> for EdgeTools<'_> {
    async fn run(&self, arguments: TaskCreateArguments) -> String {
        let created = async {
            Ok(match tasks::propose(self.db, self.conversation_key, &arguments).await? {
                Ok(task) => {
                    self.ask_approval(&task).await?;
                    format!(
                        "task {} created; it waits for a person's approval (buttons in the conversation) before a \
                         worker takes it",
                        task.id
                    )
                }
                Err(why) => format!("error: {why}"),
            })
        };
        failed(created.await)
    }
}

impl Run<TaskList> for EdgeTools<'_> {
    async fn run(&self, _arguments: NoArguments) -> String {
        let listed = tasks::list(self.db, Some(self.conversation_key), None).await;
        failed(listed.and_then(|tasks| Ok(serde_json::to_string(&tasks)?)))
    }
}

impl Run<TaskUpdate> for EdgeTools<'_> {
    async fn run(&self, arguments: TaskUpdateArguments) -> String {
        failed(tasks::update(self.db, Some(self.conversation_key), None, &arguments).await)
    }
}

impl Run<WorkerInspect> for EdgeTools<'_> {
    async fn run(&self, arguments: WorkerInspectArguments) -> String {
        let id = given(&arguments.id);
        let listed = worker_step::list(self.db, self.conversation_key).await.and_then(|workers| {
            let shown: Vec<_> = workers.iter().filter(|worker| id.is_none_or(|id| worker.id == id)).collect();
            Ok(serde_json::to_string(&shown)?)
        });
        failed(listed)
    }
}

impl Run<PersonNote> for EdgeTools<'_> {
    async fn run(&self, arguments: PersonNoteArguments) -> String {
        self.profile(&arguments.person.clone(), ProfileChange::Note(arguments)).await
    }
}

impl Run<PersonForget> for EdgeTools<'_> {
    async fn run(&self, arguments: PersonForgetArguments) -> String {
        self.profile(&arguments.person, ProfileChange::Forget).await
    }
}

impl Run<AttachmentRead> for EdgeTools<'_> {
    async fn run(&self, arguments: AttachmentReadArguments) -> String {
        files::read(self.env, self.db, self.conversation_key, arguments.id.trim()).await
    }
}

impl Run<AttachmentRecall> for EdgeTools<'_> {
    async fn run(&self, _arguments: NoArguments) -> String {
        files::recall(self.db, self.conversation_key).await
    }
}

impl Run<SendFile> for EdgeTools<'_> {
    async fn run(&self, arguments: SendFileArguments) -> String {
        let process = ("branch", self.branch_id);
        crate::jobs::send_file(self.config, self.env, self.db, self.conversation_key, process, &arguments).await
    }
}
