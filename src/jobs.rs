//! The `jobs` queue consumer: runs branches, worker steps and compactions.
//! Each message is acked on its own; a failing job is retried by the queue and,
//! after its retries, arrives on the dead-letter queue, whose consumer tells
//! the channel the work failed (so the user hears it).
//!
//! A batch's jobs run together, up to [`JOBS_AT_ONCE`]: most of a job's time
//! is spent waiting on a model or D1, and one at a time the consumers were the
//! first thing to saturate (docs/scale.md).

mod branch_step;
mod worker_step;

pub use worker_step::{cancel as cancel_worker, list as list_workers};

use futures_util::stream::{self, StreamExt};
use worker::{D1Database, Env, Message, MessageBatch, MessageExt};

use crate::channel::routes::ChannelRoute;
use crate::config::Config;
use crate::conversations::store::{self, Conversation};
use crate::files::tools as files;
use crate::llm::client::HttpModel;
use crate::llm::ChatModel;
use crate::llm::{ChatMessage, ChatRequest, Role};
use crate::log_line::LogLine;
use crate::process::compaction::{Compacted, CompactionJob};
use crate::process::envelope::Envelope;
use crate::process::Job;
use crate::prompt;
use crate::runtime::channel_stub;
use crate::runtime::config;
use crate::runtime::config::DEAD_LETTER_SUFFIX;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::status::rules::DeadLetter;

/// Jobs one consumer invocation runs at once: the open connections (fetch,
/// D1, Durable Object calls) an invocation may hold at the same time is 6,
/// and each job holds one at a time. wrangler.toml's `max_batch_size` matches.
const JOBS_AT_ONCE: usize = 6;

/// Runs a batch of jobs (or of dead letters), each acked or retried on its own.
pub async fn run_batch(batch: MessageBatch<serde_json::Value>, env: &Env) -> worker::Result<()> {
    if batch.queue() == config::INDEX_QUEUE_NAME {
        index_batch(&batch, env).await;
        return Ok(());
    }
    let config = config::load(env);
    let dead_letters = batch.queue().ends_with(DEAD_LETTER_SUFFIX);
    // An error here would abort the whole Worker: every failure is per message.
    let messages = match batch.messages() {
        Ok(messages) => messages,
        Err(error) => {
            LogLine::error("job_batch_unreadable").field("dead_letters", dead_letters).reason(&error).emit();
            batch.retry_all();
            return Ok(());
        }
    };
    // Each job is still acked or retried on its own, inside `handle`.
    stream::iter(&messages)
        .for_each_concurrent(JOBS_AT_ONCE, |message| handle(&config, env, message, dead_letters))
        .await;
    Ok(())
}

/// Writes a batch of the conversation index's rows in ONE D1 statement per
/// shard and acks a shard's rows, or retries them (each write is all or
/// nothing, and a replayed row never moves the index back): a shard that is
/// down holds back only its own rows. An unreadable row is dropped: the
/// object's next one carries the same counts.
async fn index_batch(batch: &MessageBatch<serde_json::Value>, env: &Env) {
    let Ok(messages) = batch.messages() else {
        LogLine::error("index_batch_unreadable").emit();
        batch.retry_all();
        return;
    };
    let shards = config::load(env).d1_shards;
    let mut by_shard: std::collections::BTreeMap<u32, (Vec<Conversation>, Vec<&Message<serde_json::Value>>)> =
        Default::default();
    for message in &messages {
        let row = serde_json::to_string(message.body()).and_then(|text| serde_json::from_str::<Conversation>(&text));
        match row {
            Ok(row) => {
                let group = by_shard.entry(crate::shards::shard_of(&row.conversation_key, shards)).or_default();
                group.0.push(row);
                group.1.push(message);
            }
            Err(_) => message.ack(),
        }
    }
    let now = now_ms();
    let writes = by_shard.into_iter().map(|(shard, (rows, messages))| async move {
        let binding = crate::shards::binding_of(shard, shards);
        let written = async { store::write_batch(&env.d1(&binding)?, &rows, now).await };
        match written.await {
            Ok(()) => messages.iter().for_each(|message| message.ack()),
            Err(error) => {
                LogLine::error("conversation_index_not_written")
                    .field("rows", rows.len())
                    .field("shard", binding)
                    .reason(&error)
                    .emit();
                messages.iter().for_each(|message| message.retry());
            }
        }
    });
    futures_util::future::join_all(writes).await;
    // Counted once the batch's writes are done (or failed), so a delivery seen
    // in `/api/ops` has reached D1.
    crate::ops::add(crate::ops::Op::QueueDelivery, messages.len() as u64);
}

async fn handle(config: &Config, env: &Env, message: &Message<serde_json::Value>, dead_letters: bool) {
    crate::ops::count(crate::ops::Op::QueueDelivery);
    // Read through text, like every other JSON the Worker reads: one deserializer per type.
    let job: Job = match serde_json::to_string(message.body()).and_then(|text| serde_json::from_str(&text)) {
        Ok(job) => job,
        Err(error) => {
            LogLine::error("job_unreadable").reason(&error).emit();
            if dead_letters {
                dead_letter(env, "unreadable", "", "").await;
            }
            message.ack();
            return;
        }
    };
    if dead_letters {
        let (kind, id, conversation) = match &job {
            Job::Branch(branch) => ("branch", &branch.id, &branch.conversation_key),
            Job::Worker(worker) => ("worker", &worker.id, &worker.conversation_key),
            Job::Compaction(compaction) => ("compaction", &compaction.id, &compaction.conversation_key),
        };
        dead_letter(env, kind, id, conversation).await;
    }
    let branch = match job {
        Job::Branch(branch) => branch,
        Job::Worker(job) => {
            let outcome = match dead_letters {
                true => worker_step::give_up(env, &job).await,
                false => worker_step::run_step(config, env, &job).await,
            };
            match outcome {
                Ok(()) => message.ack(),
                Err(error) => {
                    LogLine::warn("worker_step_failed")
                        .conversation(&job.conversation_key)
                        .id(&job.id)
                        .field("step", job.step.as_str())
                        .reason(&error)
                        .emit();
                    retry(message);
                }
            }
            return;
        }
        Job::Compaction(job) => {
            // A compaction out of retries is dropped: it costs only context,
            // and the next turn plans again.
            if dead_letters {
                message.ack();
                return;
            }
            match summarise(config, env, &job).await {
                Ok(()) => message.ack(),
                Err(error) => {
                    LogLine::warn("compaction_failed")
                        .conversation(&job.conversation_key)
                        .id(&job.id)
                        .reason(&error)
                        .emit();
                    retry(message);
                }
            }
            return;
        }
    };
    match branch_step::run(config, env, &branch, dead_letters).await {
        Ok(()) => message.ack(),
        Err(error) => {
            LogLine::warn("branch_failed").conversation(&branch.conversation_key).id(&branch.id).reason(&error).emit();
            retry(message);
        }
    }
}

/// A job out of retries: logged, and kept as the last dead letter for `/api/status`.
async fn dead_letter(env: &Env, kind: &str, id: &str, conversation: &str) {
    LogLine::warn("dead_letter").field("kind", kind).id(&id).conversation(conversation).emit();
    let letter = DeadLetter { at_ms: now_ms(), kind: kind.into(), id: id.into(), conversation: conversation.into() };
    if let Err(error) = crate::status::api::record(env, crate::status::api::DEAD_LETTER, letter.to_json()).await {
        LogLine::warn("status_not_recorded").field("kind", "dead_letter").reason(&error).emit();
    }
}

/// Summarises the job's messages with the compactor model and swaps them for
/// the summary (they stay in D1, flagged, as the archive), then tells the
/// channel object, whose copy of the history the turns read. A redelivery
/// after the summary was stored tells it again.
async fn summarise(config: &Config, env: &Env, job: &CompactionJob) -> Result<(), String> {
    store_compaction(config, env, job).await?;
    let report = Compacted { conversation_key: job.conversation_key.clone(), covered: job.message_ids.clone() };
    let body = serde_json::to_string(&report).map_err(|error| error.to_string())?;
    channel_stub::post(env, &job.conversation_key, ChannelRoute::HistoryCompacted, body)
        .await
        .map(|_| ())
        .map_err(|error| error.to_string())
}

async fn store_compaction(config: &Config, env: &Env, job: &CompactionJob) -> Result<(), String> {
    let database = crate::runtime::d1::shard_of(env, &job.conversation_key).map_err(|error| error.to_string())?;
    let rows = crate::conversations::archive::live_messages(&database, &job.conversation_key, &job.message_ids)
        .await
        .map_err(|error| error.to_string())?;
    if rows.is_empty() {
        return Ok(()); // already compacted by an earlier delivery
    }
    let transcript: String = rows.iter().map(|row| format!("{}: {}\n", row.author_name, row.content)).collect();
    let system = prompt::render("compactor_system", serde_json::json!({ "bot_name": config.bot_name }))
        .map_err(|error| error.to_string())?;
    let model = HttpModel::new(config, env, &config.compactor_model).map_err(|error| error.to_string())?;
    let request = ChatRequest {
        model: model.model_name().to_string(),
        messages: vec![ChatMessage::new(Role::System, system), ChatMessage::new(Role::User, transcript)],
        tools: Vec::new(),
    };
    let started = now_ms();
    let completion = model.complete(&request).await.map_err(|error| error.to_string())?;
    LogLine::info("compaction_finished")
        .conversation(&job.conversation_key)
        .id(&job.id)
        .duration_ms(now_ms() - started)
        .tokens(completion.usage)
        .emit();
    let spender = crate::budget::usage::Spender::conversation(&job.conversation_key);
    if let Err(error) = crate::budget::usage::record(env, &spender, "compactor", model.spent(), now_ms()).await {
        LogLine::warn("usage_not_recorded")
            .conversation(&job.conversation_key)
            .field("process", "compactor")
            .reason(&error)
            .emit();
    }
    let summary = completion.content.ok_or("the compactor answered nothing")?;
    let covered: Vec<String> = rows.iter().map(|row| row.id.clone()).collect();
    crate::conversations::archive::store_summary(
        &database,
        &job.id,
        &job.conversation_key,
        &summary,
        &covered,
        now_ms(),
    )
    .await
    .map_err(|error| error.to_string())
}

/// Posts an envelope to the conversation's channel object.
/// The `send_file` tool of a branch or worker (`process`: its kind and id):
/// the file is kept and announced to the channel, which sends it.
pub(crate) async fn send_file(
    config: &Config,
    env: &Env,
    db: &D1Database,
    conversation_key: &str,
    process: (&str, &str),
    arguments: &crate::files::arguments::SendFileArguments,
) -> String {
    let produced = match crate::llm::tool::given(&arguments.path) {
        Some(path) => from_workspace(env, db, conversation_key, process, path).await,
        None => files::produce(config, env, db, conversation_key, process, arguments, now_ms()).await,
    };
    let envelope = match produced {
        Ok(envelope) => envelope,
        Err(error) => return format!("error: {error}"),
    };
    match deliver(env, conversation_key, &envelope).await {
        Ok(()) => format!("sent {}: the person gets it after the channel's next reply", envelope.body),
        Err(error) => format!("error: {error}"),
    }
}

/// `send_file` with a `path`: a workspace file (an attachment too), sent
/// under its own name; text is redacted like any text leaving the Worker.
async fn from_workspace(
    env: &Env,
    db: &D1Database,
    conversation_key: &str,
    process: (&str, &str),
    path: &str,
) -> Result<Envelope, String> {
    let path = crate::workspace::rules::WorkspacePath::parse(path)?;
    let workspace =
        crate::workspace::store::Workspace::open(env, conversation_key).map_err(|error| error.to_string())?;
    let mut bytes = workspace.read(&path).await?;
    if let Ok(text) = std::str::from_utf8(&bytes) {
        bytes = crate::runtime::config::redactor().redact(text).into_owned().into_bytes();
    }
    let name = path.as_str().rsplit('/').next().unwrap_or_default();
    files::produce_bytes(env, db, conversation_key, process, name, bytes, now_ms()).await
}

pub(crate) async fn deliver(env: &Env, conversation_key: &str, envelope: &Envelope) -> worker::Result<()> {
    channel_stub::post(env, conversation_key, ChannelRoute::ProcessEvent, serde_json::to_string(envelope)?).await?;
    Ok(())
}

/// Sends a delivered job back for another attempt, counted.
fn retry(message: &Message<serde_json::Value>) {
    crate::ops::count(crate::ops::Op::QueueRetry);
    message.retry();
}
