//! Hands a turn's work to processes (starts branches and workers, routes
//! follow-ups, cancels) and gives up on processes gone silent.

use worker::{D1Database, Result};

use super::thinking::Thought;
use super::{envelopes, Channel};
use crate::channel::actions::Action;
use crate::channel::processes::{ProcessKind, ProcessStatus};
use crate::channel::state::TurnSnapshot;
use crate::inbound::InboundEvent;
use crate::log_line::LogLine;
use crate::process::branch::BranchJob;
use crate::process::envelope::{Envelope, MessageType};
use crate::process::worker_run::{WorkerInput, WorkerJob};
use crate::process::Job;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// Carries out the turn's delegations: queues a job for each branch and worker
/// started and each follow-up routed, and stops cancelled processes. Ids are
/// stable per turn, so a resumed turn's repeat is recognised and skipped.
pub(super) async fn delegate(
    object: &Channel,
    database: &D1Database,
    turn: &TurnSnapshot,
    origin: &InboundEvent,
    thought: &Thought,
) -> Result<()> {
    let sql = object.state.storage().counted_sql();
    let conversation_key = &origin.conversation_key;
    for (index, action) in thought.delegations.iter().enumerate() {
        let id = format!("{conversation_key}:{}:{index}", turn.id);
        let status =
            |kind, task: &str, interactive| ProcessStatus::started(kind, task, origin.clone(), interactive, now_ms());
        let (envelope, job) = match action {
            Action::Branch { question } => {
                if !object.step(|machine| machine.start_process(&id, status(ProcessKind::Branch, question, false)))? {
                    continue;
                }
                let job = Job::Branch(Box::new(BranchJob {
                    id: id.clone(),
                    conversation_key: conversation_key.clone(),
                    question: question.clone(),
                    history: thought.fork.clone(),
                    origin: origin.clone(),
                    people: thought.people.clone(),
                }));
                (task_envelope(&id, "branch", &id, question), Some(job))
            }
            Action::SpawnWorker { task, interactive } => {
                start_worker(object, &id, task, *interactive, origin.clone()).await?;
                continue;
            }
            Action::Route { id: worker, message } => {
                if object.step(|machine| machine.route_to_process(worker, now_ms()))?.is_err() {
                    continue;
                }
                let input = WorkerInput::FollowUp { message: message.clone() };
                let job = WorkerJob {
                    id: worker.clone(),
                    conversation_key: conversation_key.clone(),
                    step: id.clone(),
                    input,
                    person: crate::budget::rules::Person::of(conversation_key, &origin.author),
                };
                (task_envelope(&id, "worker", worker, message), Some(Job::Worker(job)))
            }
            Action::Cancel { id: process } => match cancel(object, database, &id, process, conversation_key).await? {
                Some(envelope) => (envelope, None),
                None => continue,
            },
            Action::Reply { .. } | Action::Skip { .. } | Action::Disengage | Action::React { .. } => continue,
        };
        envelopes::log(&sql, &envelope)?;
        if let Some(job) = job {
            crate::runtime::queue::enqueue(&object.env, &job).await?;
        }
    }
    Ok(())
}

/// Stops a process the model cancelled; the cancel envelope to log, or None
/// when there is no such process (or it already stopped).
async fn cancel(
    object: &Channel,
    database: &D1Database,
    id: &str,
    process: &str,
    conversation_key: &str,
) -> Result<Option<Envelope>> {
    let Ok(stopped) = object.step(|machine| machine.cancel_process(process))? else {
        return Ok(None);
    };
    if stopped.kind == ProcessKind::Worker {
        crate::jobs::cancel_worker(database, process, conversation_key).await?;
    }
    // A call it left waiting for approval will not run: its buttons go.
    if let Some(approval) = &stopped.approval {
        super::approvals::withdraw(object, &approval.id).await?;
    }
    let to = format!("{}:{process}", stopped.kind.label().to_lowercase());
    let envelope = Envelope::new(
        format!("{id}:cancel"),
        now_ms(),
        "channel",
        to,
        MessageType::Cancel,
        Some(process.to_string()),
        "",
    );
    Ok(Some(envelope))
}

/// Starts a worker in this conversation: records it in the channel state,
/// logs its task envelope and queues its first step. False when there is no
/// room for another worker (or one with this id is already recorded).
pub(super) async fn start_worker(
    object: &Channel,
    id: &str,
    task: &str,
    interactive: bool,
    origin: InboundEvent,
) -> Result<bool> {
    let now = now_ms();
    let conversation_key = origin.conversation_key.clone();
    let status_author = origin.author.clone();
    let status = ProcessStatus::started(ProcessKind::Worker, task, origin, interactive, now);
    if !object.step(|machine| machine.start_process(id, status))? {
        return Ok(false);
    }
    envelopes::log(&object.state.storage().counted_sql(), &task_envelope(id, "worker", id, task))?;
    let input = WorkerInput::Start { task: task.to_string(), interactive };
    let person = crate::budget::rules::Person::of(&conversation_key, &status_author);
    let job = WorkerJob { id: id.to_string(), conversation_key, step: "s1".into(), input, person };
    crate::runtime::queue::enqueue(&object.env, &Job::Worker(job)).await?;
    crate::platforms::web_chat::messenger::changed(&object.state, "processes");
    Ok(true)
}

/// The `task` envelope that hands work to a process.
fn task_envelope(id: &str, kind: &str, process: &str, body: &str) -> Envelope {
    Envelope::new(
        format!("{id}:task"),
        now_ms(),
        "channel",
        format!("{kind}:{process}"),
        MessageType::Task,
        Some(process.to_string()),
        body.to_string(),
    )
}

/// Processes silent past their timeout come back as failures (the person
/// hears it in the next turn); a worker given up on is also stopped, in case
/// it still runs.
pub(super) async fn give_up_on_silent_processes(object: &Channel, database: &D1Database, now: i64) -> Result<()> {
    let expired = object.step(|machine| machine.expire_processes(now, &object.config.channel))?;
    for (id, report) in expired {
        LogLine::warn("process_silent")
            .conversation(&report.origin.conversation_key)
            .id(&id)
            .field("kind", report.kind.label())
            .emit();
        if report.kind == ProcessKind::Worker {
            crate::jobs::cancel_worker(database, &id, &report.origin.conversation_key).await?;
        }
    }
    Ok(())
}
