//! Approvals: a person's yes before a risky step runs. A worker's call of a
//! tool that needs approval (and a task the agent proposes) waits, durably,
//! until someone allowed to decide presses a button in the conversation, or
//! the wait times out. This is the pure core: ids, what a button carries,
//! who may decide, the verdicts and what they tell the worker. The D1 row,
//! the buttons on each platform and the timeout alarm live at the edge.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::inbound::PersonKey;

/// How long a call waits for a decision unless `APPROVAL_TIMEOUT_SECS` says otherwise.
pub const DEFAULT_TIMEOUT_MS: i64 = 30 * 60_000;
/// The shown arguments are cut here (the model may write long ones).
pub const SHOWN_ARGUMENTS_CHARS: usize = 600;
/// An id's length: 16 hex digits, so a button's data stays within Telegram's 64 bytes.
const ID_LEN: usize = 16;

/// What was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A worker's tool call.
    Tool,
    /// A task the agent proposed for the board.
    Task,
    /// An MCP server's question (elicitation) to the person who started the
    /// work: **Approve** accepts (the defaults, or what the person wrote),
    /// **Deny** declines; the waiting call reads the verdict.
    Question,
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approved,
    Denied,
    TimedOut,
    /// The work that asked was stopped before anyone decided.
    Withdrawn,
}

impl Verdict {
    /// The stored status (`waiting` is the status before any verdict).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approved => "approved",
            Verdict::Denied => "denied",
            Verdict::TimedOut => "timed_out",
            Verdict::Withdrawn => "withdrawn",
        }
    }

    /// What the worker reads instead of a result when its call did not run.
    pub fn refusal(self, by: &str) -> Option<String> {
        match self {
            Verdict::Approved => None,
            Verdict::Denied => Some(format!(
                "not run: {by} denied this call. Do not try it again; say in your outcome that it was denied."
            )),
            Verdict::TimedOut => Some(
                "not run: nobody approved this call in the time allowed. Do not try it again; say in your \
                 outcome that it was not approved in time."
                    .into(),
            ),
            Verdict::Withdrawn => Some("not run: the work was stopped before anyone decided.".into()),
        }
    }
}

/// A button's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    Approve,
    Deny,
}

impl Choice {
    pub fn verdict(self) -> Verdict {
        match self {
            Choice::Approve => Verdict::Approved,
            Choice::Deny => Verdict::Denied,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Choice::Approve => "approve",
            Choice::Deny => "deny",
        }
    }
}

/// An approval's id: stable for what it asks (a retried step asks once).
pub fn approval_id(subject: &str, detail: &str) -> String {
    let digest = Sha256::digest(format!("{subject}\n{detail}").as_bytes());
    hex::encode(digest)[..ID_LEN].to_string()
}

/// Whether `id` is shaped like an approval's id.
pub fn is_id(id: &str) -> bool {
    id.len() == ID_LEN && id.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// What a button carries back (Slack's value, Discord's custom id, Telegram's callback data).
pub fn button_data(choice: Choice, id: &str) -> String {
    format!("{}:{id}", choice.word())
}

/// Reads a button's data; None for anything edgebot did not send.
pub fn parse_button(data: &str) -> Option<(Choice, &str)> {
    let (word, id) = data.split_once(':')?;
    let choice = [Choice::Approve, Choice::Deny].into_iter().find(|choice| choice.word() == word)?;
    is_id(id).then_some((choice, id))
}

/// Who pressed a button: the platform's own id for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clicker {
    /// `telegram`, `slack`, `discord` or `web`.
    pub platform: String,
    pub user_id: String,
    pub name: String,
}

impl Clicker {
    /// How a decision names who made it.
    pub fn label(&self) -> String {
        format!("{} ({}:{})", self.name, self.platform, self.user_id)
    }
}

/// A button pressed on a platform, as its payload says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Click {
    pub clicker: Clicker,
    /// What the button carries ([`button_data`]).
    pub data: String,
    /// The conversation it was pressed in (a key, or the start of one: a
    /// thread's key goes on with the thread).
    pub conversation: String,
    /// The platform's handle for answering the press (Telegram's callback query id).
    pub answer_to: Option<String>,
}

impl Click {
    /// Whether it was pressed in `conversation_key` (or a thread of it).
    pub fn is_in(&self, conversation_key: &str) -> bool {
        conversation_key == self.conversation
            || conversation_key.strip_prefix(&self.conversation).is_some_and(|rest| rest.starts_with(':'))
    }
}

/// Whether `clicker` may decide: the person who asked (on the same platform),
/// or an operator listed for their platform (`APPROVERS`: `platform:id`, …).
/// Nobody else, and nobody at all for an approval no one asked for and no
/// operator listed.
pub fn may_decide(asker: Option<(&str, &str)>, operators: &[String], clicker: &Clicker) -> bool {
    let is_asker = asker.is_some_and(|(platform, id)| platform == clicker.platform && id == clicker.user_id);
    let is_operator = operators.iter().any(|operator| {
        PersonKey::parse(operator)
            .is_ok_and(|operator| operator.platform() == clicker.platform && operator.user_id() == clicker.user_id)
    });
    !clicker.user_id.is_empty() && (is_asker || is_operator)
}

/// Arguments as a person is shown them: compact JSON, cut at [`SHOWN_ARGUMENTS_CHARS`].
/// (Secrets are cut by the redactor where the text leaves.)
pub fn shown_arguments(arguments: &serde_json::Value) -> String {
    let text = arguments.to_string();
    match text.chars().count() > SHOWN_ARGUMENTS_CHARS {
        true => format!("{}…", text.chars().take(SHOWN_ARGUMENTS_CHARS).collect::<String>()),
        false => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clicker(platform: &str, id: &str) -> Clicker {
        Clicker { platform: platform.into(), user_id: id.into(), name: "n".into() }
    }

    #[test]
    fn ids_are_stable_short_and_ride_in_buttons() {
        let id = approval_id("worker-1", "call-1");
        assert_eq!(id, approval_id("worker-1", "call-1"));
        assert_ne!(id, approval_id("worker-1", "call-2"));
        assert!(is_id(&id));
        let data = button_data(Choice::Approve, &id);
        assert!(data.len() <= 64, "Telegram's callback data limit");
        assert_eq!(parse_button(&data), Some((Choice::Approve, id.as_str())));
        assert_eq!(parse_button(&button_data(Choice::Deny, &id)), Some((Choice::Deny, id.as_str())));
        for forged in ["approve:", "approve:xyz", "yes:0123456789abcdef", "approve:0123456789ABCDEF", "deny"] {
            assert_eq!(parse_button(forged), None, "{forged}");
        }
    }

    #[test]
    fn the_asker_and_the_platforms_operators_decide_and_nobody_else() {
        let operators = vec!["slack:UOPS".to_string(), "telegram:7".to_string()];
        let asker = Some(("telegram", "42"));
        assert!(may_decide(asker, &operators, &clicker("telegram", "42")));
        assert!(may_decide(asker, &operators, &clicker("telegram", "7")));
        assert!(may_decide(asker, &operators, &clicker("slack", "UOPS")));
        assert!(!may_decide(asker, &operators, &clicker("telegram", "43")), "another person");
        assert!(!may_decide(asker, &operators, &clicker("discord", "42")), "the same id on another platform");
        assert!(!may_decide(asker, &operators, &clicker("discord", "UOPS")), "operators are per platform");
        assert!(!may_decide(None, &[], &clicker("telegram", "42")), "no asker, no operator: nobody");
        assert!(!may_decide(Some(("web", "")), &[], &clicker("web", "")), "an empty id is nobody");
    }

    #[test]
    fn a_click_belongs_to_its_conversation_and_its_threads_only() {
        let click = Click {
            clicker: clicker("slack", "U1"),
            data: String::new(),
            conversation: "slack:T1:C1".into(),
            answer_to: None,
        };
        assert!(click.is_in("slack:T1:C1"));
        assert!(click.is_in("slack:T1:C1:1700000000.1"));
        assert!(!click.is_in("slack:T1:C12"), "a longer channel id is another channel");
        assert!(!click.is_in("slack:T1:C2"));
    }

    #[test]
    fn verdicts_tell_the_worker_why_nothing_ran() {
        assert_eq!(Verdict::Approved.refusal("Ada"), None);
        assert!(Verdict::Denied.refusal("Ada (slack:U1)").unwrap().contains("Ada (slack:U1) denied"));
        assert!(Verdict::TimedOut.refusal("").unwrap().contains("in the time allowed"));
        assert!(Verdict::Withdrawn.refusal("").unwrap().starts_with("not run"));
        assert_eq!(Choice::Deny.verdict().as_str(), "denied");
        let long = serde_json::json!({ "body": "x".repeat(5_000) });
        assert!(shown_arguments(&long).chars().count() <= SHOWN_ARGUMENTS_CHARS + 1);
    }
}
