//! Spending limits, as pure functions of plain data: what a model call cost,
//! which UTC day it counts against, and whether a turn may run given what
//! was spent today per person, per conversation and in the whole deployment.
//! The edge (src/budget/usage.rs) reads and writes the daily rollups in D1.

use serde::{Deserialize, Serialize};

use crate::inbound::ConversationKey;
use crate::llm::Usage;

/// A day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// Default daily limits (used when a setting is unset, empty or 0).
pub const DEFAULT_PERSON_TOKENS_PER_DAY: u64 = 200_000;
pub const DEFAULT_PERSON_USD_PER_DAY: f64 = 0.50;
pub const DEFAULT_CONVERSATION_TOKENS_PER_DAY: u64 = 500_000;
pub const DEFAULT_CONVERSATION_USD_PER_DAY: f64 = 1.00;
pub const DEFAULT_DEPLOYMENT_TOKENS_PER_DAY: u64 = 5_000_000;
pub const DEFAULT_DEPLOYMENT_USD_PER_DAY: f64 = 10.00;
/// The deployment's subject in the rollups.
pub const DEPLOYMENT: &str = "*";

/// Tokens and their price (in millionths of a US dollar, so sums stay exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Spend {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub micro_usd: u64,
}

impl Spend {
    /// What one call of `model` (a `provider/model` key) with this usage cost.
    pub fn of_call(model: &str, usage: Usage) -> Spend {
        Spend {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            micro_usd: super::prices::price_of(model).micro_usd(usage),
        }
    }

    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub fn add(&mut self, other: Spend) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.micro_usd = self.micro_usd.saturating_add(other.micro_usd);
    }

    pub fn usage(&self) -> Usage {
        Usage { input_tokens: self.input_tokens, output_tokens: self.output_tokens }
    }
}

/// A daily limit; `None` in a field means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Limit {
    pub tokens: Option<u64>,
    pub micro_usd: Option<u64>,
}

impl Limit {
    /// Whether `spent` has reached this limit (reaching it counts: the next
    /// call would pass it).
    pub fn is_reached_by(&self, spent: &Spend) -> bool {
        self.tokens.is_some_and(|tokens| spent.tokens() >= tokens)
            || self.micro_usd.is_some_and(|micro_usd| spent.micro_usd >= micro_usd)
    }
}

/// The budgets a turn is checked against (a workspace's only where the
/// conversation is in one: a Slack workspace, see [`workspace_of`]; an
/// agent's is its settings' `daily_micro_usd`, see [`agent_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Person,
    Conversation,
    Workspace,
    Agent,
    Deployment,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Person => "person",
            Scope::Conversation => "conversation",
            Scope::Workspace => "workspace",
            Scope::Agent => "agent",
            Scope::Deployment => "deployment",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        [Scope::Person, Scope::Conversation, Scope::Workspace, Scope::Agent, Scope::Deployment]
            .into_iter()
            .find(|scope| scope.name() == name)
    }
}

/// The subject whose rows `scope` reads for a turn in `conversation_key` by
/// `person` (the person's platform key): None when the turn has none (no
/// person, or no workspace). The standing query's `SUBJECTS`, for rows an
/// isolate keeps (`crate::agents::snapshot`).
pub fn subject_of(scope: Scope, conversation_key: &str, person: Option<&str>) -> Option<String> {
    match scope {
        Scope::Person => person.map(str::to_string),
        Scope::Conversation => Some(conversation_key.to_string()),
        Scope::Workspace => workspace_of(conversation_key),
        Scope::Agent => Some(agent_of(conversation_key).to_string()),
        Scope::Deployment => Some(DEPLOYMENT.to_string()),
    }
}

/// The workspace a conversation spends in, as the rollups name it: a Slack
/// workspace (`slack:{team}`); None elsewhere (and for a Slack key without
/// its team).
pub fn workspace_of(conversation_key: &str) -> Option<String> {
    match ConversationKey::parse(conversation_key).ok()? {
        ConversationKey::Slack { team, .. } if !team.is_empty() => Some(format!("slack:{team}")),
        _ => None,
    }
}

/// The agent a conversation spends as, as the rollups name it: its id
/// (`default` for keys without an agent's prefix). All of an agent's
/// conversations (channel turns, branches, workers, link conversations) sum here.
pub fn agent_of(conversation_key: &str) -> &str {
    crate::agents::agent_of(conversation_key)
}

/// An agent's own daily limit, from its settings' `daily_micro_usd` (None:
/// no limit of its own). Agents have no token limit.
pub fn agent_limit(daily_micro_usd: Option<u64>) -> Limit {
    Limit { tokens: None, micro_usd: daily_micro_usd }
}

/// The configured daily limits, before any operator override.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    pub person: Limit,
    pub conversation: Limit,
    /// Each Slack workspace's (many workspaces): the deployment's by default.
    pub workspace: Limit,
    pub deployment: Limit,
}

impl Default for Budgets {
    fn default() -> Self {
        let limit = |tokens, usd| Limit { tokens: Some(tokens), micro_usd: Some(usd_to_micro(usd)) };
        Budgets {
            person: limit(DEFAULT_PERSON_TOKENS_PER_DAY, DEFAULT_PERSON_USD_PER_DAY),
            conversation: limit(DEFAULT_CONVERSATION_TOKENS_PER_DAY, DEFAULT_CONVERSATION_USD_PER_DAY),
            workspace: limit(DEFAULT_DEPLOYMENT_TOKENS_PER_DAY, DEFAULT_DEPLOYMENT_USD_PER_DAY),
            deployment: limit(DEFAULT_DEPLOYMENT_TOKENS_PER_DAY, DEFAULT_DEPLOYMENT_USD_PER_DAY),
        }
    }
}

impl Budgets {
    pub fn of(&self, scope: Scope) -> Limit {
        match scope {
            Scope::Person => self.person,
            Scope::Conversation => self.conversation,
            Scope::Workspace => self.workspace,
            // Each agent's is in its settings ([`agent_limit`]): none configured here.
            Scope::Agent => Limit::default(),
            Scope::Deployment => self.deployment,
        }
    }
}

/// One scope as a turn's check reads it: today's spend and the limit in
/// force (the operator's override, else the setting). `None` spend: nothing
/// spent today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub scope: Scope,
    pub spent: Spend,
    pub limit: Limit,
}

/// Whether a turn may call the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// This scope's limit is reached (the first one, in the order person,
    /// conversation, deployment).
    Over(Scope),
}

/// The rung: any scope at or past its limit stops the turn.
pub fn decide(standings: &[Standing]) -> Verdict {
    let mut ordered: Vec<&Standing> = standings.iter().collect();
    ordered.sort_by_key(|standing| standing.scope as u8);
    match ordered.into_iter().find(|standing| standing.limit.is_reached_by(&standing.spent)) {
        Some(standing) => Verdict::Over(standing.scope),
        None => Verdict::Run,
    }
}

/// The UTC day an instant counts against, as `YYYY-MM-DD`.
pub fn day_of(epoch_ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(epoch_ms) {
        Some(instant) => instant.format("%Y-%m-%d").to_string(),
        None => epoch_ms.div_euclid(DAY_MS).to_string(),
    }
}

/// Milliseconds from `epoch_ms` until the next UTC midnight (when the day's
/// budgets start again); never 0.
pub fn until_next_day_ms(epoch_ms: i64) -> i64 {
    DAY_MS - epoch_ms.rem_euclid(DAY_MS)
}

/// [`until_next_day_ms`] in whole seconds, rounded up (a `Retry-After`).
pub fn seconds_until_next_day(epoch_ms: i64) -> u64 {
    (until_next_day_ms(epoch_ms) as u64).div_ceil(1000)
}

pub fn usd_to_micro(usd: f64) -> u64 {
    (usd.max(0.0) * 1_000_000.0).round() as u64
}

/// A token limit setting: unset, empty or 0 take the default; `unlimited`
/// (or `off`) lifts it; anything unreadable takes the default too (a typo
/// must not open the bill).
pub fn parse_tokens(setting: Option<&str>, default: u64) -> Option<u64> {
    match setting.map(str::trim).unwrap_or_default() {
        value if is_unlimited(value) => None,
        value => Some(value.replace('_', "").parse::<u64>().ok().filter(|&tokens| tokens > 0).unwrap_or(default)),
    }
}

/// A price limit setting in US dollars (`0.50`), read like [`parse_tokens`].
pub fn parse_usd(setting: Option<&str>, default: f64) -> Option<u64> {
    match setting.map(str::trim).unwrap_or_default() {
        value if is_unlimited(value) => None,
        value => {
            let usd = value.trim_start_matches('$').parse::<f64>().ok().filter(|usd| usd.is_finite() && *usd > 0.0);
            Some(usd_to_micro(usd.unwrap_or(default)))
        }
    }
}

fn is_unlimited(value: &str) -> bool {
    value.eq_ignore_ascii_case("unlimited") || value.eq_ignore_ascii_case("off")
}

/// A person as the budgets know them: `{platform}:{user id}` and a display name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub key: String,
    pub name: String,
}

impl Person {
    /// The author of a message in `conversation_key`; None for synthetic authors.
    pub fn of(conversation_key: &str, author: &crate::inbound::Author) -> Option<Person> {
        person_key(conversation_key, &author.id).map(|key| Person { key, name: author.name.clone() })
    }
}

/// Who a turn's spend is charged to besides its conversation: the author of
/// the message it answers, as `{platform}:{author id}`. Synthetic authors (a
/// scheduled run, the task board) are nobody's: their spend counts against
/// the conversation and the deployment only.
pub fn person_key(conversation_key: &str, author_id: &str) -> Option<String> {
    if matches!(author_id, "schedule" | "cortex") || author_id.is_empty() {
        return None;
    }
    let platform = ConversationKey::parse(conversation_key).ok()?.platform();
    match author_id.starts_with(&format!("{platform}:")) {
        true => Some(author_id.to_string()),
        false => Some(format!("{platform}:{author_id}")),
    }
}

/// How many rows a wide scope's daily spend is split in (see [`bucket_of`]).
pub const SPEND_BUCKETS: u32 = 16;

impl Scope {
    /// Whether many conversations spend into one subject of this scope (the
    /// deployment, an agent, a Slack workspace): its rows are bucketed.
    pub fn is_wide(self) -> bool {
        matches!(self, Scope::Deployment | Scope::Agent | Scope::Workspace)
    }
}

/// The bucket of a wide scope's daily row that `conversation_key`'s spend
/// goes to: a stable hash of the key (the first four bytes of its SHA-256),
/// modulo [`SPEND_BUCKETS`], so each conversation always writes the same
/// row and many conversations spread over all of them. A person's and a
/// conversation's rows are written by few writers: bucket 0. Readers sum
/// the buckets (src/budget/store.rs).
pub fn bucket_of(scope: Scope, conversation_key: &str) -> u32 {
    use sha2::{Digest, Sha256};
    if !scope.is_wide() {
        return 0;
    }
    let digest = Sha256::digest(conversation_key.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) % SPEND_BUCKETS
}

/// One daily rollup row a step's spend is added to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollup {
    pub scope: Scope,
    pub subject: String,
    /// A person's display name; empty for other scopes.
    pub name: String,
    pub bucket: u32,
}

/// The rollup rows a step of `conversation_key` (answering `person`, if
/// anyone) adds to: its conversation, the deployment, the person, the Slack
/// workspace if any, and its agent, each wide one in the conversation's bucket.
pub fn rollups(conversation_key: &str, person: Option<&Person>) -> Vec<Rollup> {
    let row = |scope: Scope, subject: &str, name: &str| Rollup {
        scope,
        subject: subject.to_string(),
        name: name.to_string(),
        bucket: bucket_of(scope, conversation_key),
    };
    let mut rows = vec![row(Scope::Conversation, conversation_key, ""), row(Scope::Deployment, DEPLOYMENT, "")];
    if let Some(person) = person {
        rows.push(row(Scope::Person, &person.key, &person.name));
    }
    if let Some(workspace) = workspace_of(conversation_key) {
        rows.push(row(Scope::Workspace, &workspace, ""));
    }
    rows.push(row(Scope::Agent, agent_of(conversation_key), ""));
    rows
}

/// One step's spend that a channel object held, as the rows of its commit
/// (src/budget/usage.rs `unsent_statement`): for each of its [`rollups`],
/// `[day, scope, subject, bucket, name, input_tokens, output_tokens,
/// micro_usd, seq]`. `seq` is the step's number in its object (only ever
/// growing), which the commit compares with the conversation's `flush_seq`.
pub fn unsent_rows(
    seq: i64,
    day: &str,
    conversation_key: &str,
    person: Option<&Person>,
    spend: Spend,
) -> Vec<serde_json::Value> {
    rollups(conversation_key, person)
        .into_iter()
        .map(|rollup| {
            serde_json::json!([
                day,
                rollup.scope.name(),
                rollup.subject,
                rollup.bucket,
                rollup.name,
                spend.input_tokens,
                spend.output_tokens,
                spend.micro_usd,
                seq
            ])
        })
        .collect()
}

/// Spend a channel object holds that D1 does not have yet (its commit is
/// after the replies): the turn's check adds it to what D1 says, so a second
/// turn in the same alarm, or one after a failed commit, still sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unsent {
    /// Everything the conversation holds unsent (today's).
    pub all: Spend,
    /// What of it the turn's person spent.
    pub person: Spend,
}

/// Adds `unsent` to each scope's standing: the person's own to the person's,
/// the whole to every other scope (they all contain this conversation).
pub fn with_unsent(standings: &mut [Standing], unsent: Unsent) {
    for standing in standings {
        standing.spent.add(match standing.scope {
            Scope::Person => unsent.person,
            _ => unsent.all,
        });
    }
}

/// The limit in force: an operator's override's fields replace the configured
/// limit's; a field the override leaves empty keeps the configured one.
pub fn limit_in_force(configured: Limit, overridden: Option<Limit>) -> Limit {
    match overridden {
        Some(limit) => {
            Limit { tokens: limit.tokens.or(configured.tokens), micro_usd: limit.micro_usd.or(configured.micro_usd) }
        }
        None => configured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scope_names_the_subject_the_standing_query_binds() {
        let slack = "slack:T1:C1";
        assert_eq!(subject_of(Scope::Person, slack, Some("slack:T1:U1")).as_deref(), Some("slack:T1:U1"));
        assert_eq!(subject_of(Scope::Person, slack, None), None, "no person, no person row");
        assert_eq!(subject_of(Scope::Conversation, slack, None).as_deref(), Some(slack));
        assert_eq!(subject_of(Scope::Workspace, slack, None).as_deref(), Some("slack:T1"));
        assert_eq!(subject_of(Scope::Workspace, "telegram:1", None), None, "only Slack has workspaces");
        assert_eq!(subject_of(Scope::Agent, "telegram:1", None).as_deref(), Some(agent_of("telegram:1")));
        assert_eq!(subject_of(Scope::Deployment, "telegram:1", None).as_deref(), Some(DEPLOYMENT));
    }

    fn spend(tokens: u64, micro_usd: u64) -> Spend {
        Spend { input_tokens: tokens, output_tokens: 0, micro_usd }
    }

    fn limit(tokens: u64, micro_usd: u64) -> Limit {
        Limit { tokens: Some(tokens), micro_usd: Some(micro_usd) }
    }

    #[test]
    fn a_turn_runs_until_any_scope_reaches_its_limit() {
        let standing = |scope, spent, limit| Standing { scope, spent, limit };
        let within = standing(Scope::Person, spend(99, 5), limit(100, 10));
        let cases = [
            ("nothing spent", vec![], Verdict::Run),
            ("all within", vec![within], Verdict::Run),
            (
                "tokens reached exactly",
                vec![standing(Scope::Person, spend(100, 0), limit(100, 10))],
                Verdict::Over(Scope::Person),
            ),
            (
                "price reached",
                vec![standing(Scope::Conversation, spend(1, 10), limit(100, 10))],
                Verdict::Over(Scope::Conversation),
            ),
            (
                "no limit of that kind",
                vec![standing(Scope::Deployment, spend(1_000_000, 1_000_000), Limit { tokens: None, micro_usd: None })],
                Verdict::Run,
            ),
            (
                "the person is named first",
                vec![
                    standing(Scope::Deployment, spend(500, 0), limit(100, 10)),
                    standing(Scope::Person, spend(500, 0), limit(100, 10)),
                ],
                Verdict::Over(Scope::Person),
            ),
            (
                "a raised limit lets the person on",
                vec![within, standing(Scope::Conversation, spend(150, 0), limit(1_000, 1_000))],
                Verdict::Run,
            ),
        ];
        for (name, standings, expected) in cases {
            assert_eq!(decide(&standings), expected, "{name}");
        }
    }

    #[test]
    fn sums_saturate_and_count_both_directions() {
        let mut total = Spend { input_tokens: 10, output_tokens: 5, micro_usd: 7 };
        total.add(Spend { input_tokens: u64::MAX, output_tokens: 1, micro_usd: 3 });
        assert_eq!((total.input_tokens, total.output_tokens, total.micro_usd), (u64::MAX, 6, 10));
        assert_eq!(total.tokens(), u64::MAX);
    }

    #[test]
    fn days_are_utc_days() {
        let midnight = 1_795_305_600_000; // 2026-11-22 00:00:00 UTC
        let cases = [
            (midnight - 1, "2026-11-21", 1),
            (midnight, "2026-11-22", DAY_MS),
            (midnight + 1, "2026-11-22", DAY_MS - 1),
            (midnight + DAY_MS - 1, "2026-11-22", 1),
            (0, "1970-01-01", DAY_MS),
            (-1, "1969-12-31", 1),
            (951_868_799_999, "2000-02-29", 1),
        ];
        assert_eq!(seconds_until_next_day(midnight - 1), 1, "a last millisecond still waits a second");
        assert_eq!(seconds_until_next_day(midnight - 86_399_000), 86_399);
        for (instant, day, until_next) in cases {
            assert_eq!(day_of(instant), day, "{instant}");
            assert_eq!(until_next_day_ms(instant), until_next, "{instant}");
            assert_eq!(seconds_until_next_day(instant), (until_next as u64).div_ceil(1000), "{instant}");
        }
    }

    #[test]
    fn settings_take_defaults_for_unset_zero_and_garbage_and_lift_only_on_unlimited() {
        let cases = [
            (None, Some(50)),
            (Some(""), Some(50)),
            (Some("0"), Some(50)),
            (Some("lots"), Some(50)),
            (Some("-3"), Some(50)),
            (Some("1_000"), Some(1_000)),
            (Some(" 20 "), Some(20)),
            (Some("unlimited"), None),
            (Some("OFF"), None),
        ];
        for (setting, expected) in cases {
            assert_eq!(parse_tokens(setting, 50), expected, "{setting:?}");
        }
        assert_eq!(parse_usd(Some("0.25"), 1.0), Some(250_000));
        assert_eq!(parse_usd(Some("$2"), 1.0), Some(2_000_000));
        assert_eq!(parse_usd(Some("0"), 1.0), Some(1_000_000));
        assert_eq!(parse_usd(Some("NaN"), 1.0), Some(1_000_000));
        assert_eq!(parse_usd(Some("unlimited"), 1.0), None);
    }

    #[test]
    fn people_are_keyed_by_platform_and_synthetic_authors_are_nobody() {
        assert_eq!(person_key("telegram:-100", "7").as_deref(), Some("telegram:7"));
        assert_eq!(person_key("slack:T1:C1:123.4", "U9").as_deref(), Some("slack:U9"));
        assert_eq!(person_key("web:abc", "web:abc:guest").as_deref(), Some("web:abc:guest"));
        assert_eq!(person_key("telegram:5", "schedule"), None);
        assert_eq!(person_key("telegram:5", "cortex"), None);
    }

    #[test]
    fn an_override_replaces_the_configured_limit_field_by_field() {
        let configured = limit(100, 10);
        let only_tokens = Limit { tokens: Some(5), micro_usd: None };
        let only_price = Limit { tokens: None, micro_usd: Some(7) };
        let table = [
            ("no override", configured, None, configured),
            ("both fields", configured, Some(limit(1, 2)), limit(1, 2)),
            ("tokens only: the price stays", configured, Some(only_tokens), limit(5, 10)),
            ("price only: the tokens stay", configured, Some(only_price), limit(100, 7)),
            ("an empty override changes nothing", configured, Some(Limit::default()), configured),
            ("an override where none is configured", Limit::default(), Some(only_tokens), only_tokens),
        ];
        for (case, configured, overridden, expected) in table {
            assert_eq!(limit_in_force(configured, overridden), expected, "{case}");
        }
    }

    #[test]
    fn an_agent_spends_across_its_conversations_within_its_own_daily_limit() {
        assert_eq!(agent_of("telegram:42"), "default");
        assert_eq!(agent_of("agent:beta:telegram:42"), "beta");
        assert_eq!(agent_of("agent:beta:slack:T1:C1"), "beta");
        assert_eq!(agent_of("link:beta:gamma"), "beta", "a link conversation is its own agent's");
        assert_eq!(Scope::parse("agent"), Some(Scope::Agent));
        assert_eq!(Budgets::default().of(Scope::Agent), Limit::default(), "no limit unless the agent sets one");
        let standing = |micro_usd, spent| Standing {
            scope: Scope::Agent,
            spent: Spend { micro_usd: spent, input_tokens: 1_000_000_000, ..Spend::default() },
            limit: agent_limit(micro_usd),
        };
        assert_eq!(decide(&[standing(None, u64::MAX)]), Verdict::Run, "no daily_micro_usd: no limit");
        assert_eq!(decide(&[standing(Some(500), 499)]), Verdict::Run, "tokens are not an agent's limit");
        assert_eq!(decide(&[standing(Some(500), 500)]), Verdict::Over(Scope::Agent));
        let deployment = Standing { scope: Scope::Deployment, ..standing(Some(1), 5) };
        assert_eq!(
            decide(&[deployment, standing(Some(500), 500)]),
            Verdict::Over(Scope::Agent),
            "the agent is named first"
        );
        let workspace = Standing { scope: Scope::Workspace, ..standing(Some(1), 5) };
        assert_eq!(decide(&[standing(Some(500), 500), workspace]), Verdict::Over(Scope::Workspace));
    }

    #[test]
    fn a_slack_workspace_has_a_budget_of_its_own_checked_after_the_conversations() {
        assert_eq!(workspace_of("slack:T1:C1:1.2").as_deref(), Some("slack:T1"));
        assert_eq!(workspace_of("slack:T1:D1").as_deref(), Some("slack:T1"));
        assert_eq!(workspace_of("slack::C1"), None, "no team: no workspace");
        assert_eq!(workspace_of("telegram:42"), None);
        assert_eq!(Scope::parse("workspace"), Some(Scope::Workspace));
        assert_eq!(Budgets::default().of(Scope::Workspace), Budgets::default().of(Scope::Deployment));
        let over = |scope| Standing {
            scope,
            spent: Spend { input_tokens: 10, ..Spend::default() },
            limit: Limit { tokens: Some(10), micro_usd: None },
        };
        assert_eq!(decide(&[over(Scope::Deployment), over(Scope::Workspace)]), Verdict::Over(Scope::Workspace));
        assert_eq!(decide(&[over(Scope::Workspace), over(Scope::Conversation)]), Verdict::Over(Scope::Conversation));
        let within = Standing { limit: Limit { tokens: Some(11), micro_usd: None }, ..over(Scope::Workspace) };
        assert_eq!(decide(&[within]), Verdict::Run);
    }

    #[test]
    fn wide_scopes_spread_over_buckets_and_each_conversation_keeps_its_own() {
        let keys: Vec<String> = (0..400).map(|chat| format!("telegram:{chat}")).collect();
        let mut used = std::collections::BTreeSet::new();
        for key in &keys {
            let bucket = bucket_of(Scope::Deployment, key);
            assert!(bucket < SPEND_BUCKETS, "{key}: {bucket}");
            assert_eq!(bucket, bucket_of(Scope::Deployment, key), "stable for {key}");
            assert_eq!(bucket, bucket_of(Scope::Agent, key), "one bucket per conversation, whatever the wide scope");
            assert_eq!(bucket_of(Scope::Person, key), 0, "a person's row is not split");
            assert_eq!(bucket_of(Scope::Conversation, key), 0, "a conversation's row is not split");
            used.insert(bucket);
        }
        assert_eq!(used.len(), SPEND_BUCKETS as usize, "400 conversations reach every bucket: {used:?}");
    }

    #[test]
    fn a_step_adds_to_its_conversation_person_workspace_agent_and_the_deployment() {
        let ada = Person { key: "slack:U1".into(), name: "Ada".into() };
        let rows = rollups("slack:T1:C1", Some(&ada));
        let scopes: Vec<Scope> = rows.iter().map(|row| row.scope).collect();
        assert_eq!(scopes, [Scope::Conversation, Scope::Deployment, Scope::Person, Scope::Workspace, Scope::Agent]);
        let bucket = bucket_of(Scope::Deployment, "slack:T1:C1");
        for row in &rows {
            let expected = if row.scope.is_wide() { bucket } else { 0 };
            assert_eq!(row.bucket, expected, "{row:?}");
        }
        assert_eq!(rows[2].name, "Ada");
        assert_eq!((rows[3].subject.as_str(), rows[4].subject.as_str()), ("slack:T1", "default"));
        let nobody = rollups("telegram:5", None);
        assert_eq!(
            nobody.iter().map(|row| row.scope).collect::<Vec<_>>(),
            [Scope::Conversation, Scope::Deployment, Scope::Agent]
        );
    }

    #[test]
    fn unsent_spend_counts_against_every_scope_and_the_persons_own_against_theirs() {
        let limit = Limit { tokens: Some(20), micro_usd: None };
        let mut standings = [
            Standing { scope: Scope::Person, spent: spend(10, 0), limit },
            Standing { scope: Scope::Deployment, spent: spend(5, 0), limit },
        ];
        assert_eq!(decide(&standings), Verdict::Run);
        with_unsent(&mut standings, Unsent { all: spend(15, 3), person: spend(4, 1) });
        assert_eq!(standings[0].spent, spend(14, 1), "the person's own only");
        assert_eq!(standings[1].spent, spend(20, 3), "everything held");
        assert_eq!(decide(&standings), Verdict::Over(Scope::Deployment), "unsent spend stops the next turn");
    }

    #[test]
    fn held_spend_becomes_one_row_per_rollup_carrying_its_sequence_number() {
        let ada = Person { key: "telegram:7".into(), name: "Ada".into() };
        let spent = Spend { input_tokens: 10, output_tokens: 5, micro_usd: 42 };
        let rows = unsent_rows(9, "2026-11-28", "telegram:7", Some(&ada), spent);
        assert_eq!(rows.len(), 4, "conversation, deployment, person, agent: {rows:?}");
        let bucket = bucket_of(Scope::Deployment, "telegram:7");
        assert_eq!(rows[1], serde_json::json!(["2026-11-28", "deployment", "*", bucket, "", 10, 5, 42, 9]));
        assert_eq!(rows[2], serde_json::json!(["2026-11-28", "person", "telegram:7", 0, "Ada", 10, 5, 42, 9]));
        assert!(rows.iter().all(|row| row[8] == 9));
    }
}
