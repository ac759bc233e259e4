//! Whether a routed mail is answered (pure): a ladder of named rungs, each a
//! reason, in the order the handler asks them (docs/email.md):
//!
//! 1. unreadable mail is refused (an SMTP rejection, so the sender hears of it);
//! 2. mail that failed the routing's authentication checks is refused and logged;
//! 3. auto-replies, bounces and list mail are taken and never answered (no loops);
//! 4. a sender off the allow-list (`EMAIL_ALLOW`, empty by default) is refused;
//! 5. everything else is a message.
//!
//! An approval is decided by replying APPROVE or DENY to the mail that asks
//! ([`approval_reply`]): a mail scanner follows links but never replies, and
//! the reply passes the same authentication and allow-list as any message.

use crate::approvals::rules::{button_data, is_id, Choice};
use crate::platforms::email::wire::{self, headers, Mail};

/// What becomes of a routed mail.
#[derive(Debug)]
pub enum Verdict {
    /// Rejected at SMTP time with this reason (the sender's server tells them);
    /// logged as the event named.
    Refuse { reason: String, event: &'static str },
    /// Taken and never answered, for this reason.
    Ignore(&'static str),
    /// A person's mail.
    Take(Box<Mail>),
}

/// The ladder (see the module's doc), over the raw mail and its envelope.
pub fn verdict(raw: &[u8], envelope_from: &str, recipient: &str, allow: &[String]) -> Verdict {
    let refuse = |reason: String, event| Verdict::Refuse { reason, event };
    let message = match wire::parse(raw) {
        Ok(message) => message,
        Err(malformed) => return refuse(malformed.to_string(), "email_malformed"),
    };
    let mail = match wire::read(&message, envelope_from, recipient) {
        Ok(mail) => mail,
        Err(malformed) => return refuse(malformed.to_string(), "email_malformed"),
    };
    let topmost =
        [headers(&message, "Authentication-Results").next(), headers(&message, "ARC-Authentication-Results").next()];
    if let Some(check) = failed_authentication(&topmost) {
        return refuse(Refusal::FailedAuthentication(check).reason(), "email_unauthenticated");
    }
    let first = |name: &'static str| headers(&message, name).next();
    let (return_path, auto_submitted, precedence) =
        (first("Return-Path"), first("Auto-Submitted"), first("Precedence"));
    let content_type = message
        .root_part()
        .headers()
        .iter()
        .find_map(|header| header.value().as_content_type())
        .map(|kind| format!("{}/{}", kind.ctype(), kind.subtype().unwrap_or_default()))
        .unwrap_or_default();
    let has = |names: &[&'static str]| names.iter().any(|name| first(name).is_some());
    let signs = LoopSigns {
        envelope_from,
        from: &mail.from,
        return_path: return_path.as_deref(),
        auto_submitted: auto_submitted.as_deref(),
        precedence: precedence.as_deref(),
        has_autoreply_header: has(&["X-Autoreply", "X-Autorespond", "X-Auto-Response-Suppress"]),
        has_list_header: has(&["List-Id", "List-Unsubscribe"]),
        content_type: &content_type,
    };
    if let Some(why) = never_answered(&signs) {
        return Verdict::Ignore(why);
    }
    if !is_allowed(allow, &mail.from) {
        return refuse(Refusal::NotAllowed.reason(), "email_not_allowed");
    }
    Verdict::Take(Box::new(mail))
}

/// Why a mail is not a message for the bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The routing's checks say the sender is forged (`spf=fail`, …).
    FailedAuthentication(String),
    /// The sender is not on `EMAIL_ALLOW`.
    NotAllowed,
}

impl Refusal {
    /// The SMTP rejection's text (names no setting's value).
    pub fn reason(&self) -> String {
        match self {
            Refusal::FailedAuthentication(check) => format!("message failed authentication ({check})"),
            Refusal::NotAllowed => "this address does not take mail from this sender".into(),
        }
    }
}

/// Whether `address` is on the allow-list: an entry is an address
/// (`ada@example.com`) or a domain (`example.com` or `@example.com`), any
/// case. A domain entry covers that domain only, not its subdomains.
pub fn is_allowed(allow: &[String], address: &str) -> bool {
    let address = address.trim().to_lowercase();
    let Some((_, domain)) = address.rsplit_once('@') else { return false };
    allow.iter().map(|entry| entry.trim().to_lowercase()).any(|entry| match entry.contains('@') {
        true if entry.starts_with('@') => entry[1..] == *domain,
        true => entry == address,
        false => !entry.is_empty() && entry == domain,
    })
}

/// The check that failed, from the topmost `Authentication-Results` and
/// `ARC-Authentication-Results` headers (the ones the receiving server,
/// Cloudflare, wrote; lower ones could be anyone's). SPF and DMARC fail on
/// `fail`; DKIM fails only when no signature passed (a list footer breaks one
/// signature of several). No header at all is no failure: the local route
/// adds none, and Email Routing itself rejects what its checks refuse.
pub fn failed_authentication(topmost: &[Option<String>]) -> Option<String> {
    for results in topmost.iter().flatten() {
        let verdicts: Vec<(String, String)> = results
            .split(';')
            .filter_map(|clause| {
                let (method, result) = clause.split_whitespace().next()?.split_once('=')?;
                Some((method.to_lowercase(), result.to_lowercase()))
            })
            .collect();
        let said = |method: &str, result: &str| verdicts.iter().any(|(m, r)| m == method && r == result);
        for method in ["spf", "dmarc"] {
            if said(method, "fail") {
                return Some(format!("{method}=fail"));
            }
        }
        if said("dkim", "fail") && !said("dkim", "pass") {
            return Some("dkim=fail".into());
        }
    }
    None
}

/// What the loop rung reads of a mail.
#[derive(Debug, Default)]
pub struct LoopSigns<'a> {
    pub envelope_from: &'a str,
    pub from: &'a str,
    pub return_path: Option<&'a str>,
    pub auto_submitted: Option<&'a str>,
    pub precedence: Option<&'a str>,
    pub has_autoreply_header: bool,
    pub has_list_header: bool,
    /// The top part's `type/subtype`.
    pub content_type: &'a str,
}

/// Why a mail must never be answered (an automatic mail answered by the bot
/// could answer back, forever), or None for a person's mail.
pub fn never_answered(signs: &LoopSigns<'_>) -> Option<&'static str> {
    let local = |address: &str| address.rsplit_once('@').map_or(address, |(local, _)| local).to_lowercase();
    let is_daemon = |address: &str| ["mailer-daemon", "postmaster"].contains(&local(address).as_str());
    if signs.envelope_from.trim().trim_matches(['<', '>']).is_empty()
        || signs.return_path.is_some_and(|path| path.trim().trim_matches(['<', '>']).trim().is_empty())
    {
        return Some("a bounce (empty return path)");
    }
    if is_daemon(signs.envelope_from) || is_daemon(signs.from) {
        return Some("a bounce (mailer daemon)");
    }
    if signs.content_type.eq_ignore_ascii_case("multipart/report") {
        return Some("a delivery or read report");
    }
    if signs.auto_submitted.is_some_and(|value| !value.trim().to_lowercase().starts_with("no")) {
        return Some("an automatic mail (Auto-Submitted)");
    }
    if signs.has_autoreply_header {
        return Some("an automatic reply");
    }
    let precedence = signs.precedence.map(|value| value.trim().to_lowercase()).unwrap_or_default();
    if ["auto_reply", "bulk", "junk", "list"].contains(&precedence.as_str()) {
        return Some("bulk or automatic mail (Precedence)");
    }
    if signs.has_list_header {
        return Some("mailing-list mail");
    }
    None
}

/// The line that asks for a decision, under the approval's mail. Its id in
/// brackets comes back in the quote of the person's reply.
pub fn approval_note(id: &str) -> String {
    format!(
        "This needs your approval. Reply with the single word APPROVE to go ahead, or DENY to stop it.\n\
         [approval {id}]"
    )
}

/// The button a reply presses: its first written line is APPROVE or DENY
/// (any case, a trailing `.` or `!` allowed) and its text (the quote) names
/// one approval. None for any other mail.
pub fn approval_reply(new_text: &str, full_text: &str) -> Option<String> {
    let first = new_text.lines().map(str::trim).find(|line| !line.is_empty())?;
    let word = first.trim_end_matches(['.', '!']).to_lowercase();
    let choice = match word.as_str() {
        "approve" | "yes" => Choice::Approve,
        "deny" | "no" => Choice::Deny,
        _ => return None,
    };
    let mut ids = full_text.match_indices("[approval ").filter_map(|(at, marker)| {
        let rest = &full_text[at + marker.len()..];
        let id = rest.split(']').next()?;
        is_id(id).then_some(id)
    });
    let id = ids.next()?;
    // A quote naming two approvals is ambiguous: decide neither.
    if ids.any(|other| other != id) {
        return None;
    }
    Some(button_data(choice, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERSON: &str = "From: Ada <ada@example.com>\r\nTo: bot@edgebot.example\r\nSubject: hi\r\n\
Message-ID: <m1@example.com>\r\n\r\nhello\r\n";

    fn verdict_of(raw: &str, envelope_from: &str) -> Verdict {
        verdict(raw.as_bytes(), envelope_from, "bot@edgebot.example", &["example.com".to_string()])
    }

    #[test]
    fn the_ladder_refuses_ignores_or_takes_in_order() {
        assert!(matches!(verdict_of(PERSON, "ada@example.com"), Verdict::Take(mail) if mail.text == "hello"));
        let with = |header: &str| PERSON.replacen("Subject", &format!("{header}\r\nSubject"), 1);
        let refused = |raw: &str| match verdict_of(raw, "ada@example.com") {
            Verdict::Refuse { event, .. } => Some(event),
            _ => None,
        };
        assert_eq!(refused("garbage"), Some("email_malformed"));
        assert_eq!(refused(&PERSON.replace("Message-ID: <m1@example.com>\r\n", "")), Some("email_malformed"));
        let forged = with("Authentication-Results: mx.cloudflare.net; spf=fail; dmarc=fail");
        assert_eq!(refused(&forged), Some("email_unauthenticated"));
        let stranger = PERSON.replace("ada@example.com", "eve@evil.example");
        assert_eq!(refused(&stranger), Some("email_not_allowed"));
        for header in
            ["Auto-Submitted: auto-replied", "Precedence: bulk", "List-Id: <l.example.com>", "X-Autoreply: yes"]
        {
            assert!(matches!(verdict_of(&with(header), "ada@example.com"), Verdict::Ignore(_)), "{header}");
        }
        assert!(matches!(verdict_of(PERSON, ""), Verdict::Ignore(_)), "a bounce");
        let report =
            with("MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=x");
        assert!(matches!(verdict_of(&report, "ada@example.com"), Verdict::Ignore(_)), "a delivery report");
        // A stranger's bounce is not answered either (and not rejected: nobody to tell).
        assert!(matches!(
            verdict_of(&stranger.replacen("Subject", "Precedence: junk\r\nSubject", 1), "x@y.z"),
            Verdict::Ignore(_)
        ));
    }

    #[test]
    fn the_allow_list_takes_addresses_and_whole_domains_and_nothing_by_default() {
        let allow: Vec<String> = ["Ada@Example.com", "@team.example", "partner.example"].map(String::from).to_vec();
        let cases = [
            ("ada@example.com", true),
            ("ADA@EXAMPLE.COM", true),
            ("bob@example.com", false),
            ("anyone@team.example", true),
            ("x@partner.example", true),
            ("x@evil.partner.example", false),
            ("x@partner.example.evil", false),
            ("partner.example", false),
            ("", false),
        ];
        for (address, expected) in cases {
            assert_eq!(is_allowed(&allow, address), expected, "{address}");
        }
        assert!(!is_allowed(&[], "ada@example.com"), "empty: nobody");
        assert!(!is_allowed(&[String::new()], "ada@example.com"));
    }

    #[test]
    fn a_failed_check_at_the_top_refuses_and_a_pass_or_nothing_does_not() {
        let top = |text: &str| vec![Some(text.to_string()), None];
        let cases = [
            ("mx.cloudflare.net; spf=fail smtp.mailfrom=x@y; dkim=pass; dmarc=pass", Some("spf=fail")),
            ("mx.cloudflare.net; dkim=fail header.d=y; dmarc=fail (p=reject)", Some("dmarc=fail")),
            ("mx.cloudflare.net; dkim=fail header.d=list; dkim=pass header.d=y; spf=pass", None),
            ("mx.cloudflare.net; dkim=fail header.d=y; spf=none", Some("dkim=fail")),
            ("mx.cloudflare.net; SPF=Fail smtp.mailfrom=x@y", Some("spf=fail")),
            ("mx.cloudflare.net; spf=softfail; dkim=none; dmarc=none", None),
            ("mx.cloudflare.net; spf=pass; dkim=pass; dmarc=pass", None),
        ];
        for (results, expected) in cases {
            assert_eq!(failed_authentication(&top(results)).as_deref(), expected, "{results}");
        }
        assert_eq!(failed_authentication(&[None, None]), None, "no results: the local route");
        let arc = vec![None, Some("i=1; mx.cloudflare.net; dmarc=fail".to_string())];
        assert_eq!(failed_authentication(&arc).as_deref(), Some("dmarc=fail"), "ARC's results count too");
    }

    #[test]
    fn automatic_mail_bounces_and_lists_are_never_answered() {
        let person = LoopSigns {
            envelope_from: "ada@example.com",
            from: "ada@example.com",
            content_type: "text/plain",
            ..LoopSigns::default()
        };
        assert_eq!(never_answered(&person), None);
        let no = LoopSigns { auto_submitted: Some("no"), precedence: Some("first-class"), ..person };
        assert_eq!(never_answered(&no), None, "Auto-Submitted: no is a person");
        let cases = [
            LoopSigns { envelope_from: "", ..person },
            LoopSigns { envelope_from: "<>", ..person },
            LoopSigns { return_path: Some("<>"), ..person },
            LoopSigns { envelope_from: "MAILER-DAEMON@mx.example", ..person },
            LoopSigns { from: "postmaster@example.com", ..person },
            LoopSigns { content_type: "multipart/report", ..person },
            LoopSigns { auto_submitted: Some("auto-replied"), ..person },
            LoopSigns { auto_submitted: Some("auto-generated"), ..person },
            LoopSigns { has_autoreply_header: true, ..person },
            LoopSigns { precedence: Some("bulk"), ..person },
            LoopSigns { precedence: Some("Junk"), ..person },
            LoopSigns { precedence: Some("list"), ..person },
            LoopSigns { precedence: Some("auto_reply"), ..person },
            LoopSigns { has_list_header: true, ..person },
        ];
        for signs in cases {
            assert!(never_answered(&signs).is_some(), "{signs:?}");
        }
    }

    #[test]
    fn an_approval_is_decided_by_a_reply_saying_approve_or_deny_under_its_quote() {
        let id = "0123456789abcdef";
        let quote = format!("On Tue, edgebot wrote:\n> Shall I?\n> {}", approval_note(id).replace('\n', "\n> "));
        let reply = |first: &str| approval_reply(first, &format!("{first}\n\n{quote}"));
        assert_eq!(reply("APPROVE"), Some(format!("approve:{id}")));
        assert_eq!(reply("  deny."), Some(format!("deny:{id}")));
        assert_eq!(reply("Yes!"), Some(format!("approve:{id}")));
        assert_eq!(reply("approve it, and also do X"), None, "only the word itself");
        assert_eq!(reply("Thanks"), None);
        assert_eq!(approval_reply("approve", "approve"), None, "no approval named");
        assert_eq!(approval_reply("approve", "approve [approval nothex]"), None);
        let other = "fedcba9876543210";
        let two = format!("approve\n> [approval {id}]\n> [approval {other}]");
        assert_eq!(approval_reply("approve", &two), None, "two approvals: neither");
        assert!(is_id(id), "the test's id has the approvals' shape");
    }
}
