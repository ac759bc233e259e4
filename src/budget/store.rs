//! The budgets' edge: reads today's spend and the limits in force for a
//! turn (one D1 query), remembers who was told a budget ran out, serves the
//! admin API's spend views and limit overrides, and counts guest web-chat
//! sessions per client. The decisions are [`crate::budget::rules`]'s.

use serde::Deserialize;
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result, Env, Result};

use crate::budget::rules::{
    agent_limit, agent_of, day_of, decide, limit_in_force, subject_of, with_unsent, workspace_of, Budgets, Limit,
    Scope, Spend, Standing, Unsent, Verdict, DEPLOYMENT,
};
use crate::budget::usage::Spender;
use crate::runtime::d1::{changes, number, Metered};
use crate::shards::OTHER_SHARDS_FRESH_MS;

/// One row of the standing query: spent today, or a limit override.
#[derive(Clone, Deserialize)]
pub struct Row {
    kind: String,
    scope: String,
    tokens: Option<i64>,
    micro_usd: Option<i64>,
}

/// Whether the spender's turn may call the model today, from the day's
/// rollups and the operator's overrides (else the configured limits; an
/// agent's from its settings' `daily_micro_usd`): `limits` as an isolate
/// keeps them (`crate::agents::snapshot`) or else read now, with today's
/// spend from the shared database or each shard's, at once. The wide scopes'
/// rows are summed over their buckets and shards; `unsent` is what the
/// calling channel object holds that D1 does not have yet.
pub async fn verdict(
    env: &Env,
    budgets: &Budgets,
    spender: &Spender,
    limits: Option<Vec<Row>>,
    unsent: Unsent,
    now_ms: i64,
) -> Result<Verdict> {
    let shared = env.d1(crate::runtime::config::DATABASE_BINDING)?;
    let unsharded = crate::runtime::d1::unsharded(env);
    let statement = match (&limits, unsharded) {
        (None, _) => Some(verdict_statement(&shared, spender, now_ms, unsharded)?),
        (Some(_), true) => Some(spent_statement(&shared, spender, now_ms)?),
        (Some(_), false) => None,
    };
    let here = async {
        match statement {
            Some(statement) => rows_of(&statement.all_counted().await?),
            None => Ok(Vec::new()),
        }
    };
    let (here, elsewhere) = futures_util::join!(here, spent_on_shards(env, spender, now_ms));
    let mut rows = elsewhere?;
    rows.extend(here?);
    rows.extend(limits.unwrap_or_default());
    verdict_of(rows, budgets, spender, unsent)
}

/// The limits in force for `spender` and, when `with_spend` (one database
/// holds the spend too), today's spend: the query of [`verdict`] (a channel
/// turn sends it in the batch of its reads).
pub fn verdict_statement(
    db: &D1Database,
    spender: &Spender,
    now_ms: i64,
    with_spend: bool,
) -> Result<D1PreparedStatement> {
    let limits = format!(
        "SELECT 'limit' AS kind, scope, tokens, micro_usd FROM spend_limits WHERE ?1 IS NOT NULL AND {SUBJECTS} \
         UNION ALL SELECT 'setting' AS kind, 'agent' AS scope, NULL AS tokens, \
         json_extract(settings, '$.daily_micro_usd') AS micro_usd FROM agents WHERE id = ?6"
    );
    let sql = match with_spend {
        true => format!("{} UNION ALL {limits}", spent_sql()),
        false => limits,
    };
    db.prepare(sql).bind(&subject_values(spender, now_ms))
}

/// Whose rows a standing reads: `?2` the person, `?3` the conversation, `?4`
/// the deployment, `?5` the workspace, `?6` the agent.
const SUBJECTS: &str = "((scope = 'person' AND subject = ?2) OR (scope = 'conversation' AND subject = ?3) \
     OR (scope = 'deployment' AND subject = ?4) OR (scope = 'workspace' AND subject = ?5) \
     OR (scope = 'agent' AND subject = ?6))";
/// Today's (`?1`) spend of each scope of a standing.
fn spent_sql() -> String {
    format!(
        "SELECT 'spent' AS kind, scope, sum(input_tokens + output_tokens) AS tokens, sum(micro_usd) AS micro_usd \
         FROM spend_daily WHERE day = ?1 AND {SUBJECTS} GROUP BY scope"
    )
}

/// One limit override as an isolate keeps it (`crate::agents::snapshot`):
/// operators set few, so the whole table is read at once.
#[derive(Clone, Deserialize)]
pub struct LimitOverride {
    scope: String,
    subject: String,
    tokens: Option<i64>,
    micro_usd: Option<i64>,
}

/// Reads at most `most` overrides (a snapshot that gets `most` rows knows the
/// table may hold more, and has each turn read its own).
pub fn overrides_statement(db: &D1Database, most: usize) -> Result<D1PreparedStatement> {
    db.prepare("SELECT scope, subject, tokens, micro_usd FROM spend_limits ORDER BY scope, subject LIMIT ?1")
        .bind(&[number(most as i64)])
}

/// The limit rows of [`verdict_statement`] for `spender`, from every
/// override and the agent's own `daily_micro_usd` setting.
pub fn limit_rows(overrides: &[LimitOverride], spender: &Spender, agent_daily_micro_usd: Option<u64>) -> Vec<Row> {
    let person = spender.person.as_ref().map(|person| person.key.as_str());
    let mut rows: Vec<Row> = overrides
        .iter()
        .filter(|row| {
            Scope::parse(&row.scope).and_then(|scope| subject_of(scope, &spender.conversation_key, person)).as_deref()
                == Some(row.subject.as_str())
        })
        .map(|row| Row { kind: "limit".into(), scope: row.scope.clone(), tokens: row.tokens, micro_usd: row.micro_usd })
        .collect();
    rows.push(Row {
        kind: "setting".into(),
        scope: Scope::Agent.name().into(),
        tokens: None,
        micro_usd: agent_daily_micro_usd.map(|micro| micro.min(i64::MAX as u64) as i64),
    });
    rows
}

fn subject_values(spender: &Spender, now_ms: i64) -> [JsValue; 6] {
    let person = spender.person.as_ref().map_or(JsValue::NULL, |person| person.key.as_str().into());
    let workspace = workspace_of(&spender.conversation_key);
    [
        day_of(now_ms).into(),
        person,
        spender.conversation_key.as_str().into(),
        DEPLOYMENT.into(),
        workspace.as_deref().map_or(JsValue::NULL, JsValue::from),
        agent_of(&spender.conversation_key).into(),
    ]
}

/// Other shards' spend rows by (shard, day and subjects), with when they were read.
type OtherShards = std::collections::HashMap<(u32, String), (i64, Vec<Row>)>;

thread_local! {
    static OTHER_SHARDS: std::cell::RefCell<OtherShards> = Default::default();
}

/// Today's spend of `spender`'s scopes on the shards (none when the shared
/// database holds the spend: [`verdict_statement`] read it): its own shard's
/// now, the others' as read within [`OTHER_SHARDS_FRESH_MS`], all at once.
pub async fn spent_on_shards(env: &Env, spender: &Spender, now_ms: i64) -> Result<Vec<Row>> {
    let shards = crate::runtime::config::load(env).d1_shards;
    if shards <= 1 {
        return Ok(Vec::new());
    }
    let values = subject_values(spender, now_ms);
    let subjects = [&values[0], &values[1], &values[4], &values[5]].map(|value| value.as_string().unwrap_or_default());
    let subjects = subjects.join("\u{1f}");
    let home = crate::shards::shard_of(&spender.conversation_key, shards);
    let reads = (0..shards).map(|shard| {
        let (mut values, key) = (values.clone(), (shard, subjects.clone()));
        if shard != home {
            // Only the conversation's own shard holds its rows, and the rows kept
            // for other shards serve every conversation of these subjects.
            values[2] = JsValue::NULL;
        }
        async move {
            let cached = OTHER_SHARDS.with(|cache| cache.borrow().get(&key).cloned());
            match cached.filter(|(at, _)| shard != home && now_ms - at < OTHER_SHARDS_FRESH_MS) {
                Some((_, rows)) => Ok(rows),
                None => {
                    let database = env.d1(&crate::shards::binding_of(shard, shards))?;
                    let replica = crate::runtime::d1::replica(&database)?;
                    let rows = rows_of(&replica.prepare(spent_sql()).bind(&values)?.all_counted().await?)?;
                    if shard != home {
                        OTHER_SHARDS.with(|cache| {
                            let mut cache = cache.borrow_mut();
                            cache.retain(|_, (at, _)| now_ms - *at < OTHER_SHARDS_FRESH_MS);
                            cache.insert(key, (now_ms, rows.clone()));
                        });
                    }
                    Ok::<_, worker::Error>(rows)
                }
            }
        }
    });
    let mut rows = Vec::new();
    for read in futures_util::future::join_all(reads).await {
        rows.extend(read?);
    }
    Ok(rows)
}

/// The rows of a standing query.
pub fn rows_of(result: &D1Result) -> Result<Vec<Row>> {
    result.results()
}

impl Row {
    /// Whether the row is spend (not a limit), which changes with every turn.
    pub fn is_spend(&self) -> bool {
        self.kind == "spent"
    }
}

/// Today's spend of `spender`'s scopes alone (a turn that kept its limits).
pub fn spent_statement(db: &D1Database, spender: &Spender, now_ms: i64) -> Result<D1PreparedStatement> {
    db.prepare(spent_sql()).bind(&subject_values(spender, now_ms))
}

/// The verdict from the rows of [`verdict_statement`] and [`spent_on_shards`].
pub fn verdict_of(rows: Vec<Row>, budgets: &Budgets, spender: &Spender, unsent: Unsent) -> Result<Verdict> {
    let workspace = workspace_of(&spender.conversation_key);
    let mut scopes = vec![Scope::Conversation, Scope::Agent, Scope::Deployment];
    if spender.person.is_some() {
        scopes.push(Scope::Person);
    }
    if workspace.is_some() {
        scopes.push(Scope::Workspace);
    }
    let mut standings: Vec<Standing> = scopes
        .into_iter()
        .map(|scope| {
            let mine =
                |kind: &'static str| rows.iter().filter(move |row| row.kind == kind && row.scope == scope.name());
            let of = |kind: &'static str| mine(kind).next();
            let mut spent = Spend::default();
            for row in mine("spent") {
                spent.add(Spend {
                    input_tokens: row.tokens.unwrap_or(0).max(0) as u64,
                    output_tokens: 0,
                    micro_usd: row.micro_usd.unwrap_or(0).max(0) as u64,
                });
            }
            let configured = match scope {
                Scope::Agent => {
                    agent_limit(of("setting").and_then(|row| row.micro_usd).map(|micro| micro.max(0) as u64))
                }
                _ => budgets.of(scope),
            };
            Standing { scope, spent, limit: limit_in_force(configured, of("limit").map(override_of)) }
        })
        .collect();
    with_unsent(&mut standings, unsent);
    Ok(decide(&standings))
}

/// The budget `spender` has used up today, if any. A failed read lets the
/// step run (logged): a D1 hiccup must not silence the bot.
/// `limits` as [`verdict`] takes them.
pub async fn over_budget(env: &Env, budgets: &Budgets, spender: &Spender, limits: Option<Vec<Row>>) -> Option<Scope> {
    let now = crate::runtime::http::now_ms();
    used_up(verdict(env, budgets, spender, limits, Unsent::default(), now).await, spender)
}

/// The scope a verdict found used up; a verdict that could not be read lets
/// the step run (logged), as in [`over_budget`].
pub fn used_up(verdict: Result<Verdict>, spender: &Spender) -> Option<Scope> {
    match verdict {
        Ok(Verdict::Run) => None,
        Ok(Verdict::Over(scope)) => Some(scope),
        Err(error) => {
            use crate::runtime::log::Emit;
            let line = crate::log_line::LogLine::warn("budget_unread").conversation(&spender.conversation_key);
            line.reason(&error).emit();
            None
        }
    }
}

fn override_of(row: &Row) -> Limit {
    Limit {
        tokens: row.tokens.map(|tokens| tokens.max(0) as u64),
        micro_usd: row.micro_usd.map(|micro_usd| micro_usd.max(0) as u64),
    }
}

/// Who is told that `scope` ran out: the person for their own budget (once,
/// whichever conversation they are in), the conversation for its budget and
/// for its agent's (each agent's conversations apart: one person told by one
/// agent is still told by another), and for the deployment's each person (or
/// conversation) once.
pub fn recipient(scope: Scope, spender: &Spender) -> String {
    let person = spender.person.as_ref().map(|person| person.key.clone());
    match scope {
        Scope::Conversation | Scope::Agent => spender.conversation_key.clone(),
        Scope::Person | Scope::Workspace | Scope::Deployment => {
            person.unwrap_or_else(|| spender.conversation_key.clone())
        }
    }
}

/// Records that `recipient` was told `scope` ran out today; true the first
/// time only (the caller tells them then).
pub async fn tell_once(db: &D1Database, scope: Scope, recipient: &str, now_ms: i64) -> Result<bool> {
    let result = db
        .prepare(
            "INSERT INTO spend_notices (day, scope, recipient, told_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (day, scope, recipient) DO NOTHING",
        )
        .bind(&[day_of(now_ms).into(), scope.name().into(), recipient.into(), number(now_ms)])?
        .run_counted()
        .await?;
    Ok(changes(&result) > 0)
}

/// One subject's spend on a day (every shard's rows summed).
#[derive(Deserialize)]
struct Spent {
    scope: String,
    subject: String,
    name: String,
    input_tokens: i64,
    output_tokens: i64,
    micro_usd: i64,
    calls: i64,
}

/// An operator's override, or an agent's own limit (`kind` says which).
#[derive(Deserialize)]
struct Override {
    kind: String,
    scope: String,
    subject: String,
    tokens: Option<i64>,
    micro_usd: Option<i64>,
}

/// `day`'s spend per scope and subject: each shard sums its own rows, at once.
async fn spent_on(env: &Env, day: &str) -> Result<Vec<Spent>> {
    let sums = crate::runtime::d1::on_every_shard(env, |shard| async move {
        let sql = "SELECT scope, subject, max(name) AS name, sum(input_tokens) AS input_tokens, \
                   sum(output_tokens) AS output_tokens, sum(micro_usd) AS micro_usd, sum(calls) AS calls \
                   FROM spend_daily WHERE day = ?1 GROUP BY scope, subject";
        shard.prepare(sql).bind(&[day.into()])?.all_counted().await?.results::<Spent>()
    })
    .await?;
    let mut summed: std::collections::BTreeMap<(String, String), Spent> = Default::default();
    for rows in sums {
        for row in rows? {
            let key = (row.scope.clone(), row.subject.clone());
            match summed.get_mut(&key) {
                Some(sum) => {
                    sum.name = sum.name.clone().max(row.name);
                    sum.input_tokens += row.input_tokens;
                    sum.output_tokens += row.output_tokens;
                    sum.micro_usd += row.micro_usd;
                    sum.calls += row.calls;
                }
                None => {
                    summed.insert(key, row);
                }
            }
        }
    }
    Ok(summed.into_values().collect())
}

/// The day's spend per conversation and per person, and the deployment's,
/// with the limit in force for each (for the dashboard); a wide scope's
/// buckets (and shards) summed into one line. Each shard sums its own rows;
/// the limits come from the shared database.
pub async fn report(env: &Env, budgets: &Budgets, day: &str) -> Result<Value> {
    let mut rows = spent_on(env, day).await?;
    let overrides: Vec<Override> = env
        .d1(crate::runtime::config::DATABASE_BINDING)?
        .prepare(
            "SELECT 'limit' AS kind, scope, subject, tokens, micro_usd FROM spend_limits UNION ALL \
             SELECT 'setting' AS kind, 'agent' AS scope, id AS subject, NULL AS tokens, \
             json_extract(settings, '$.daily_micro_usd') AS micro_usd FROM agents",
        )
        .all_counted()
        .await?
        .results()?;
    let found = |kind: &str, row: &Spent| {
        overrides.iter().find(|found| found.kind == kind && found.scope == row.scope && found.subject == row.subject)
    };
    rows.sort_by_key(|row| std::cmp::Reverse((row.micro_usd, row.input_tokens + row.output_tokens)));
    rows.truncate(1000);
    let mut answer = json!({ "day": day, "conversations": [], "people": [], "workspaces": [], "agents": [], "deployment": Value::Null });
    for row in rows {
        let Some(scope) = Scope::parse(&row.scope) else { continue };
        let overridden = found("limit", &row).map(|limit| Limit {
            tokens: limit.tokens.map(|tokens| tokens.max(0) as u64),
            micro_usd: limit.micro_usd.map(|micro_usd| micro_usd.max(0) as u64),
        });
        let configured = match scope {
            Scope::Agent => agent_limit(
                found("setting", &row).and_then(|setting| setting.micro_usd).map(|micro| micro.max(0) as u64),
            ),
            _ => budgets.of(scope),
        };
        let limit = limit_in_force(configured, overridden);
        let entry = json!({
            "subject": row.subject,
            "name": row.name,
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "tokens": row.input_tokens + row.output_tokens,
            "usd": row.micro_usd as f64 / 1_000_000.0,
            "calls": row.calls,
            "limit": limit_view(limit),
            "overridden": overridden.is_some(),
        });
        match scope {
            Scope::Conversation => answer["conversations"].as_array_mut().map(|list| list.push(entry)),
            Scope::Person => answer["people"].as_array_mut().map(|list| list.push(entry)),
            Scope::Workspace => answer["workspaces"].as_array_mut().map(|list| list.push(entry)),
            Scope::Agent => answer["agents"].as_array_mut().map(|list| list.push(entry)),
            Scope::Deployment => {
                answer["deployment"] = entry;
                None
            }
        };
    }
    answer["configured"] = json!({
        "person": limit_view(budgets.person),
        "conversation": limit_view(budgets.conversation),
        "workspace": limit_view(budgets.workspace),
        "deployment": limit_view(budgets.deployment),
    });
    Ok(answer)
}

fn limit_view(limit: Limit) -> Value {
    json!({ "tokens": limit.tokens, "usd": limit.micro_usd.map(|micro_usd| micro_usd as f64 / 1_000_000.0) })
}

/// Sets an operator's daily limit for one subject (every day until removed),
/// and forgets today's notices for it, so a person told before is told again
/// if they run out of the raised limit.
pub async fn set_limit(db: &D1Database, scope: Scope, subject: &str, limit: Limit, now_ms: i64) -> Result<()> {
    let optional = |value: Option<u64>| value.map_or(JsValue::NULL, |value| JsValue::from_f64(value as f64));
    crate::runtime::d1::batch(
        db,
        vec![
            db.prepare(
                "INSERT INTO spend_limits (scope, subject, tokens, micro_usd, updated_at) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (scope, subject) DO UPDATE SET tokens = excluded.tokens, micro_usd = excluded.micro_usd, \
                 updated_at = excluded.updated_at",
            )
            .bind(&[
                scope.name().into(),
                subject.into(),
                optional(limit.tokens),
                optional(limit.micro_usd),
                number(now_ms),
            ])?,
            db.prepare(
                "DELETE FROM spend_notices WHERE day = ?1 AND scope = ?2 AND (recipient = ?3 OR ?2 IN ('deployment', 'agent'))",
            )
            .bind(&[day_of(now_ms).into(), scope.name().into(), subject.into()])?,
        ],
    )
    .await?;
    Ok(())
}

/// Removes an operator's limit (the configured one applies again).
pub async fn remove_limit(db: &D1Database, scope: Scope, subject: &str) -> Result<bool> {
    let result = db
        .prepare("DELETE FROM spend_limits WHERE scope = ?1 AND subject = ?2")
        .bind(&[scope.name().into(), subject.into()])?
        .run_counted()
        .await?;
    Ok(changes(&result) > 0)
}

/// Counts a new guest web-chat session for `client` today; false (nothing
/// counted) when the client already started `cap` today. One atomic upsert.
pub async fn count_guest_session(db: &D1Database, client: &str, cap: u32, now_ms: i64) -> Result<bool> {
    let result = db
        .prepare(
            "INSERT INTO web_chat_starts (day, client, sessions) VALUES (?1, ?2, 1) \
             ON CONFLICT (day, client) DO UPDATE SET sessions = sessions + 1 WHERE sessions < ?3",
        )
        .bind(&[day_of(now_ms).into(), client.into(), number(cap.into())])?
        .run_counted()
        .await?;
    Ok(changes(&result) > 0)
}
