//! The channel's `schedule` tool: create, list and cancel this conversation's
//! jobs. Arguments become a pure [`Plan`]; the jobs live in D1.

use serde_json::Value;
use worker::D1Database;

use crate::schedules::store as schedules;

use crate::schedules::store::Creation;

use crate::schedules::store::Job;

use crate::channel::tool_set::HostToolSet;
use crate::channel::turn::ToolHost;
use crate::config::Config;
use crate::inbound::{Author, ReplyAddress};
use crate::llm::tool::{answer, given, Run};
use crate::schedules::arguments::{PlanArguments, Schedule, ScheduleAction, ScheduleArguments};
use crate::schedules::limits::{may_cancel, may_create, Creator, Refusal};
use crate::schedules::plan::Plan;
use crate::schedules::store::Refused;
use crate::schedules::zones::IntlZones;

/// The tools the channel's edge answers during a turn.
pub struct ChannelTools<'a> {
    pub config: &'a Config,
    pub db: &'a D1Database,
    pub conversation_key: &'a str,
    pub reply_address: &'a ReplyAddress,
    pub now_ms: i64,
    /// The author of the message the turn answers: a job's creator, and the
    /// only one (besides an operator) who may cancel it.
    pub author: &'a Author,
    /// The message answered is in a direct message (one person).
    pub is_dm: bool,
    /// The turn answers a scheduled run: it may not create jobs.
    pub is_scheduled_run: bool,
    /// Jobs this turn created so far (capped per turn).
    pub created: std::cell::Cell<u32>,
    /// Set when a job was created or cancelled (the channel re-arms).
    pub changed: &'a std::cell::Cell<bool>,
    /// The author's own time zone (their profile's): a job they create
    /// without one runs in it rather than in `TIMEZONE`.
    pub default_zone: Option<String>,
}

impl ToolHost for ChannelTools<'_> {
    async fn call(&self, name: &str, arguments: &Value) -> Option<String> {
        HostToolSet::call(self, name, arguments).await.map(answer)
    }
}

impl Run<Schedule> for ChannelTools<'_> {
    async fn run(&self, arguments: ScheduleArguments) -> String {
        answer(self.schedule(arguments).await)
    }
}

impl ChannelTools<'_> {
    async fn schedule(&self, mut arguments: ScheduleArguments) -> Result<String, String> {
        let failed = |error: worker::Error| error.to_string();
        match arguments.action {
            ScheduleAction::Create => {
                let refused = |refusal: Refusal| refusal.to_string();
                may_create(self.is_scheduled_run, self.created.get(), self.config.schedule_max_creations_per_turn)
                    .map_err(refused)?;
                let prompt = given(&arguments.prompt).ok_or("`prompt` must say what to do when it runs")?;
                if given(&arguments.when.timezone).is_none() {
                    arguments.when.timezone = self.default_zone.clone().or(arguments.when.timezone);
                }
                let plan = plan_from_arguments(self.config, &arguments.when, self.now_ms)?;
                let creation =
                    Creation { creator: self.author, max_jobs: Some(self.config.schedule_max_jobs_per_conversation) };
                let job = schedules::create(
                    self.db,
                    self.conversation_key,
                    self.reply_address,
                    prompt,
                    &plan,
                    creation,
                    self.now_ms,
                )
                .await
                .map_err(|refusal| match refusal {
                    Refused::ConversationCap(cap) => refused(Refusal::ConversationCap { cap }),
                    Refused::Failed(error) => failed(error),
                })?;
                self.created.set(self.created.get() + 1);
                self.changed.set(true);
                Ok(format!("created {}", describe(&job)))
            }
            ScheduleAction::List => {
                let jobs = schedules::list(self.db, Some(self.conversation_key)).await.map_err(failed)?;
                if jobs.is_empty() {
                    return Ok("no scheduled jobs in this conversation".into());
                }
                Ok(jobs.iter().map(describe).collect::<Vec<_>>().join("\n"))
            }
            ScheduleAction::Cancel => {
                let id = given(&arguments.id).ok_or("`id` names the job to cancel")?;
                let job = schedules::one(self.db, id).await.map_err(failed)?;
                let job = job
                    .filter(|job| job.conversation_key == self.conversation_key)
                    .ok_or_else(|| format!("no job {id} in this conversation"))?;
                let creator = Creator { id: job.created_by_id.as_deref(), name: job.created_by_name.as_deref() };
                may_cancel(id, creator, &self.author.id, self.is_dm).map_err(|refusal| refusal.to_string())?;
                match schedules::cancel(self.db, Some(self.conversation_key), id).await.map_err(failed)? {
                    true => {
                        self.changed.set(true);
                        Ok(format!("cancelled {id}: it will not run again"))
                    }
                    false => Err(format!("no job {id} in this conversation")),
                }
            }
        }
    }
}

/// Reads a plan from the tool's (or the admin API's) arguments, in the job's
/// zone, with the runtime's time zones ([`PlanArguments::plan`]).
pub fn plan_from_arguments(config: &Config, arguments: &PlanArguments, now_ms: i64) -> Result<Plan, String> {
    arguments.plan(&config.timezone, config.schedule_min_interval_ms, &IntlZones, now_ms)
}

/// One job for the model: its id, what it does, its next run in its zone.
fn describe(job: &Job) -> String {
    let view = job.view();
    let next = view["next_run"].as_str().unwrap_or("no further run");
    let creator = job.created_by_name.as_deref().unwrap_or("unknown");
    format!("{} ({}): \"{}\", next run {next}, created by {creator}", job.id, job.status, job.prompt)
}
