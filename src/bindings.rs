//! Every binding the Worker uses (wrangler.toml), in one list: its name, what
//! kind of thing it is, what it is for, and whether the Worker needs it to
//! answer at all. Code takes each name from here, and `GET /api/status`
//! reports each one present or not.

/// What a binding gives the Worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// A D1 database (`[[d1_databases]]`).
    D1,
    /// A Durable Object namespace (`[durable_objects] bindings`).
    DurableObject,
    /// A Queue producer (`[[queues.producers]]`).
    Queue,
    /// An R2 bucket (`[[r2_buckets]]`).
    R2,
    /// Workers AI (`[ai]`).
    Ai,
    /// A Vectorize index (`[[vectorize]]`).
    Vectorize,
    /// A Worker Loader (`[[worker_loaders]]`): isolates from code given at run time.
    WorkerLoader,
    /// A service binding (`[[services]]`): another Worker, or this one.
    Service,
    /// Browser Rendering (`[browser]`).
    Browser,
    /// Sends mail (`[[send_email]]`, named by `name`).
    SendEmail,
}

/// One binding the Worker uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// The name in wrangler.toml, and on the Worker's environment.
    pub name: &'static str,
    pub kind: BindingKind,
    /// What it is for, in a few words.
    pub purpose: &'static str,
    /// Whether the Worker needs it to answer messages (the others are
    /// optional: a feature is off, or falls back, without them).
    pub required: bool,
}

impl Binding {
    /// A binding the Worker cannot answer without.
    const fn required(name: &'static str, kind: BindingKind, purpose: &'static str) -> Binding {
        Binding { name, kind, purpose, required: true }
    }

    /// A binding a feature needs (off, or falling back, without it).
    const fn optional(name: &'static str, kind: BindingKind, purpose: &'static str) -> Binding {
        Binding { name, kind, purpose, required: false }
    }
}

/// The D1 database: history, people, jobs, tasks, memories, the status records.
pub const DATABASE: Binding =
    Binding::required("DB", BindingKind::D1, "the D1 database (history, people, scheduled jobs, tasks, memories)");
/// One Durable Object per conversation: its inbox, turns and outbox.
pub const CHANNEL: Binding = Binding::required(
    "CHANNEL",
    BindingKind::DurableObject,
    "one channel object per conversation (inbox, turns, outbox)",
);
/// The Durable Object that holds the Discord Gateway connection.
pub const GATEWAY: Binding = Binding::optional(
    "GATEWAY",
    BindingKind::DurableObject,
    "the Discord Gateway connection (DISCORD_GATEWAY = \"on\")",
);
/// The Durable Object that counts failed sign-ins for the whole deployment.
pub const SIGN_IN: Binding =
    Binding::required("SIGN_IN", BindingKind::DurableObject, "counts failed sign-ins and token checks (one instance)");
/// The queue of process jobs (branches, workers, scheduled runs).
pub const JOBS: Binding =
    Binding::required("JOBS", BindingKind::Queue, "the queue of process jobs (branches, workers, scheduled runs)");
/// The conversation index's queue: channel objects send their dashboard row
/// here and its consumer writes a whole batch in one D1 statement, so no inbound
/// causes a D1 write (docs/scale.md). Without it, each object writes its row itself.
pub const INDEX_QUEUE: Binding = Binding::optional(
    "INDEX_QUEUE",
    BindingKind::Queue,
    "the conversation index's queue (rows batched into one D1 write)",
);
/// The R2 bucket files live in.
pub const FILES: Binding =
    Binding::optional("FILES", BindingKind::R2, "the R2 bucket files sent and received are kept in");
/// Workers AI: `workers-ai/…` models and embeddings.
pub const AI: Binding =
    Binding::optional("AI", BindingKind::Ai, "Workers AI, for `workers-ai/…` models and embeddings");
/// The Vectorize index of memories (`VECTOR_BACKEND = "vectorize"`).
pub const VECTORS: Binding = Binding::optional(
    "VECTORS",
    BindingKind::Vectorize,
    "the Vectorize index of memories (VECTOR_BACKEND = \"vectorize\")",
);
/// The Worker Loader: `run_code`'s sandboxes, each a fresh isolate.
pub const LOADER: Binding = Binding::optional(
    "LOADER",
    BindingKind::WorkerLoader,
    "the Worker Loader, for `run_code`'s sandboxes (a fresh isolate per run)",
);

/// This Worker itself: `run_code`'s fetches come back through it to the fetch guard.
pub const SELF_SERVICE: Binding = Binding::optional(
    "SELF",
    BindingKind::Service,
    "this Worker itself, for `run_code`'s guarded fetches (SANDBOX_NETWORK = \"guarded\")",
);

/// Browser Rendering: the pages workers `browse` (a local Chrome under `wrangler dev`).
pub const BROWSER: Binding =
    Binding::optional("BROWSER", BindingKind::Browser, "Browser Rendering (the browse tool of workers)");

/// Email replies: Email Routing's `send_email` binding (docs/email.md).
pub const EMAIL: Binding =
    Binding::optional("EMAIL", BindingKind::SendEmail, "sends email replies (Email Routing's send_email)");

/// Every binding the Worker uses, in the order `/api/status` lists them.
pub const ALL: [Binding; 13] =
    [DATABASE, CHANNEL, GATEWAY, SIGN_IN, JOBS, INDEX_QUEUE, FILES, AI, VECTORS, LOADER, SELF_SERVICE, BROWSER, EMAIL];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The names a wrangler.toml declares: `binding = "…"` lines (D1, queue
    /// producers, R2, AI, Vectorize) and `{ name = "…", class_name = … }`
    /// entries (Durable Objects), in every environment. A queue consumer
    /// names a queue, not a binding.
    fn declared(wrangler: &str) -> BTreeSet<String> {
        let quoted = |text: &str| text.trim().strip_prefix('"')?.split('"').next().map(str::to_string);
        let mut names = BTreeSet::new();
        // A `[[send_email]]` table names its binding `name = "…"`.
        let mut in_send_email = false;
        for line in wrangler.lines().map(str::trim).filter(|line| !line.starts_with('#')) {
            if line.starts_with('[') {
                in_send_email = line.ends_with("send_email]]");
            }
            if let Some(value) = line.strip_prefix("name").and_then(|rest| rest.trim().strip_prefix('=')) {
                if in_send_email {
                    names.extend(quoted(value));
                }
            }
            if let Some(value) = line.strip_prefix("binding").and_then(|rest| rest.trim().strip_prefix('=')) {
                names.extend(quoted(value));
            }
            if line.starts_with('{') && line.contains("class_name") {
                let value = line.split_once("name").and_then(|(_, rest)| rest.trim().strip_prefix('='));
                names.extend(value.and_then(quoted));
            }
        }
        names
    }

    #[test]
    fn the_list_is_what_wrangler_toml_declares() {
        let listed: BTreeSet<String> = ALL.iter().map(|binding| binding.name.to_string()).collect();
        assert_eq!(listed.len(), ALL.len(), "each name once");
        // The D1 shards are named by `crate::shards` (the local profile binds four).
        let (shards, declared): (BTreeSet<String>, BTreeSet<String>) =
            declared(include_str!("../wrangler.toml")).into_iter().partition(|name| name.starts_with("DB_SHARD_"));
        assert_eq!(declared, listed);
        assert_eq!(shards, crate::shards::bindings(4).into_iter().collect());
        assert_eq!(DATABASE.name, crate::shards::SHARED);
    }

    #[test]
    fn the_reader_finds_each_kind_of_declaration() {
        let wrangler = r#"
[[d1_databases]]
binding = "DB"
[durable_objects]
bindings = [
  { name = "CHANNEL", class_name = "ChannelObject" },
  # { name = "OLD", class_name = "Old" },
]
[[queues.consumers]]
queue = "q"
[env.production.ai]
binding="AI"
"#;
        let names: Vec<String> = declared(wrangler).into_iter().collect();
        assert_eq!(names, ["AI", "CHANNEL", "DB"]);
    }
}
