//! A server's question (elicitation, form mode) asked of the person who
//! started the work, at the edge. The question is an approval of kind
//! `question` (`crate::approvals`): one D1 row, asked once in the
//! conversation with **Approve** (accept: the defaults, or what the person
//! wrote) and **Deny** (decline) buttons on every platform, decided once by
//! the asker alone, timed out by the conversation's alarm. A person's typed
//! answer (`typed_answer`, the next message in that conversation) is kept with
//! the row (`mcp_questions`) and decides it as accepted. The call that asked
//! holds the server's stream meanwhile and reads the row until it is decided
//! or the wait is over (then: `cancel`), and answers the server.
//!
//! The wait lives in the call: when the Worker stops mid-wait (a restart),
//! the server's stream and the call are gone while the row still waits. The
//! step's next attempt (the queue's redelivery) withdraws such questions
//! before it runs ([`withdraw_interrupted`]): their buttons go, the message
//! says the call was interrupted, and the call made again asks anew (once per
//! attempt). With no next attempt, the conversation's alarm times the
//! question out at its deadline (docs/mcp-and-approvals.md).

use serde::Deserialize;
use serde_json::{Map, Value};
use worker::{D1Database, Env};

use crate::agents::agent_of;
use crate::approvals::rules::{Clicker, Kind};
use crate::approvals::store::{self as approvals, Approval};
use crate::budget::rules::Person;
use crate::config::Config;
use crate::inbound::{InboundEvent, PersonKey};
use crate::log_line::LogLine;
use crate::mcp::form::{self, Action};
use crate::runtime::d1::{changes, Metered};
use crate::runtime::http::{now_ms, sleep_ms};
use crate::runtime::log::Emit;

/// How often the waiting call reads the question's row.
const POLL_MS: u64 = 1_000;
/// The longest a call waits for a person (within a queue consumer's wall
/// time; `APPROVAL_TIMEOUT_SECS` may make it shorter).
pub const MAX_WAIT_MS: i64 = 10 * 60_000;
/// The waiting call gives the alarm this long to time the question out before doing it itself.
const GRACE_MS: i64 = 5_000;

/// Who the work is for: a question goes to them, in their conversation.
#[derive(Debug, Clone)]
pub struct Asker {
    pub conversation_key: String,
    /// The worker whose call asks.
    pub process_id: String,
    /// The person whose message started the work (None: nobody to ask).
    pub person: Option<Person>,
}

/// Answers a server's `elicitation/create` request `request_id`: asks the
/// person and waits; returns the JSON-RPC message to POST back.
pub async fn answer(
    config: &Config,
    env: &Env,
    db: &D1Database,
    asker: Option<&Asker>,
    (server, tool): (&str, &str),
    request_id: &Value,
    params: &Value,
) -> Value {
    let form = match form::form(params) {
        Ok(form) => form,
        Err(why) => return form::refused(request_id, &why),
    };
    // A branch, or work nobody started: nobody may answer, so nobody is asked.
    let Some(asker) = asker.filter(|asker| asker.person.is_some()) else {
        return form::result(request_id, Action::Cancel, None);
    };
    let until = now_ms() + config.approval_timeout_ms.clamp(1_000, MAX_WAIT_MS);
    let key = format!("question:{server}:{request_id}:{}", now_ms());
    let approval = Approval::new(
        &asker.conversation_key,
        Kind::Question,
        &asker.process_id,
        Some(&key),
        (tool, &form.question(server)),
        asker.person.as_ref(),
        Some(until),
    );
    let asked = async {
        let kept = db
            .prepare(
                "INSERT INTO mcp_questions (approval_id, params, agent) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            )
            .bind(&[
                approval.id.as_str().into(),
                params.to_string().into(),
                agent_of(&asker.conversation_key).into(),
            ])?;
        crate::runtime::d1::batch(db, vec![approvals::record(db, &approval)?, kept]).await?;
        approvals::ask(env, &approval, &asker.process_id).await
    };
    if let Err(error) = asked.await {
        LogLine::warn("mcp_question_not_asked").id(&approval.id).reason(&error).emit();
        return form::result(request_id, Action::Cancel, None);
    }
    let (action, content) = wait(env, db, &approval, until).await;
    let content = match action {
        Action::Accept => match form.accepted(content) {
            Ok(content) => Some(content),
            // Approve on a form whose required fields have no default: nothing to send.
            Err(_) => return form::result(request_id, Action::Decline, None),
        },
        _ => None,
    };
    LogLine::info("mcp_question_answered").id(&approval.id).field("action", action.as_str()).emit();
    form::result(request_id, action, content)
}

/// Who withdrew a question whose call broke off, as its message says.
pub const INTERRUPTED: &str = "nobody (the call that asked was interrupted)";

/// Withdraws the questions `process_id`'s calls left waiting: at the start of
/// a step no call of this worker waits (a worker runs one step at a time),
/// so a question still waiting was asked by a call that broke off (the Worker
/// stopped mid-wait). Each is withdrawn and its message edited (buttons
/// gone); best effort, one D1 read when nothing waits.
pub async fn withdraw_interrupted(env: &Env, db: &D1Database, process_id: &str) {
    #[derive(Deserialize)]
    struct Waiting {
        id: String,
    }
    let waiting = db
        .prepare("SELECT id FROM approvals WHERE subject = ?1 AND kind = 'question' AND status = 'waiting'")
        .bind(&[process_id.into()]);
    let waiting: Vec<Waiting> = match waiting {
        Ok(statement) => match statement.all_counted().await.and_then(|result| result.results()) {
            Ok(rows) => rows,
            Err(error) => {
                LogLine::warn("mcp_questions_unread").id(&process_id).reason(&error).emit();
                return;
            }
        },
        Err(_) => return,
    };
    for question in waiting {
        match approvals::withdraw_as(env, &question.id, INTERRUPTED).await {
            Ok(Some((approval, text))) => {
                LogLine::info("mcp_question_withdrawn").id(&approval.id).field("why", "interrupted").emit();
                approvals::show(env, &approval, &text).await;
            }
            Ok(None) => {}
            Err(error) => LogLine::warn("mcp_question_not_withdrawn").id(&question.id).reason(&error).emit(),
        }
    }
}

/// Reads the question's row until it is decided (or times it out): the
/// action, and what the person wrote if anything.
async fn wait(env: &Env, db: &D1Database, approval: &Approval, until: i64) -> (Action, Map<String, Value>) {
    loop {
        sleep_ms(POLL_MS).await;
        let status = approvals::one(db, &approval.id).await.ok().flatten().map(|row| row.status);
        let action = match status.as_deref() {
            Some("approved") => Action::Accept,
            Some("denied") => Action::Decline,
            Some("waiting") | None if now_ms() < until + GRACE_MS => continue,
            Some("waiting") | None => {
                if let Ok(Some(text)) = approvals::time_out(env, &approval.id).await {
                    approvals::show(env, approval, &text).await;
                }
                Action::Cancel
            }
            Some(_) => Action::Cancel,
        };
        let typed = match action {
            Action::Accept => written(db, &approval.id).await,
            _ => Map::new(),
        };
        return (action, typed);
    }
}

#[derive(Deserialize)]
struct Kept {
    approval_id: String,
    params: String,
    answer: Option<String>,
}

async fn written(db: &D1Database, id: &str) -> Map<String, Value> {
    let kept = db.prepare("SELECT approval_id, params, answer FROM mcp_questions WHERE approval_id = ?1");
    let row: Option<Kept> = match kept.bind(&[id.into()]) {
        Ok(statement) => statement.first_counted().await.ok().flatten(),
        Err(_) => None,
    };
    row.and_then(|row| row.answer).and_then(|answer| serde_json::from_str(&answer).ok()).unwrap_or_default()
}

/// A message in a conversation where its sender's question waits is the
/// answer: checked against the form and, when it fits, kept and decided as
/// accepted. Returns what the sender is told (the question's new text, or
/// why the answer does not fit), or None when no question of theirs waits here.
pub async fn typed_answer(config: &Config, env: &Env, event: &InboundEvent) -> worker::Result<Option<String>> {
    let db = env.d1(crate::runtime::config::DATABASE_BINDING)?;
    let Some(person) = Person::of(&event.conversation_key, &event.author) else {
        return Ok(None);
    };
    let Ok(person) = PersonKey::parse(&person.key) else {
        return Ok(None);
    };
    let waiting = db
        .prepare(
            "SELECT q.approval_id, q.params, q.answer FROM mcp_questions q JOIN approvals a ON a.id = q.approval_id \
             WHERE a.conversation_key = ?1 AND a.status = 'waiting' AND a.asker_platform = ?2 AND a.asker_id = ?3 \
             ORDER BY a.created_at DESC LIMIT 1",
        )
        .bind(&[event.conversation_key.as_str().into(), person.platform().into(), person.user_id().into()])?;
    let Some(kept) = waiting.first_counted::<Kept>().await? else {
        return Ok(None);
    };
    let Ok(form) = form::form(&serde_json::from_str(&kept.params).unwrap_or_default()) else {
        return Ok(None);
    };
    let given = match form.read_reply(&event.text).and_then(|given| form.accepted(given.clone()).map(|_| given)) {
        Ok(given) => given,
        Err(why) => return Ok(Some(format!("That answer does not fit: {why}. Answer again, or press Deny."))),
    };
    let kept_answer = db
        .prepare("UPDATE mcp_questions SET answer = ?1 WHERE approval_id = ?2 AND answer IS NULL")
        .bind(&[Value::Object(given).to_string().into(), kept.approval_id.as_str().into()])?
        .run_counted()
        .await?;
    if changes(&kept_answer) == 0 {
        return Ok(Some("Your answer is on its way already.".into()));
    }
    let click = crate::approvals::rules::Click {
        clicker: Clicker {
            platform: person.platform().to_string(),
            user_id: person.user_id().to_string(),
            name: event.author.name.clone(),
        },
        data: String::new(),
        conversation: event.conversation_key.clone(),
        answer_to: None,
    };
    let decided =
        approvals::decide(config, env, &kept.approval_id, crate::approvals::rules::Choice::Approve, &click).await?;
    Ok(Some(decided.unwrap_or_else(|why| why)))
}
