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
    /// Browser Rendering (`[browser]`).
    Browser,
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

/// The D1 database: history, people, jobs, tasks, memories, the status records.
pub const DATABASE: Binding = Binding {
    name: "DB",
    kind: BindingKind::D1,
    purpose: "the D1 database (history, people, scheduled jobs, tasks, memories)",
    required: true,
};
/// One Durable Object per conversation: its inbox, turns and outbox.
pub const CHANNEL: Binding = Binding {
    name: "CHANNEL",
    kind: BindingKind::DurableObject,
    purpose: "one channel object per conversation (inbox, turns, outbox)",
    required: true,
};
/// The Durable Object that holds the Discord Gateway connection.
pub const GATEWAY: Binding = Binding {
    name: "GATEWAY",
    kind: BindingKind::DurableObject,
    purpose: "the Discord Gateway connection (DISCORD_GATEWAY = \"on\")",
    required: false,
};
/// The Durable Object that counts failed sign-ins for the whole deployment.
pub const SIGN_IN: Binding = Binding {
    name: "SIGN_IN",
    kind: BindingKind::DurableObject,
    purpose: "counts failed sign-ins and token checks (one instance)",
    required: true,
};
/// The queue of process jobs (branches, workers, scheduled runs).
pub const JOBS: Binding = Binding {
    name: "JOBS",
    kind: BindingKind::Queue,
    purpose: "the queue of process jobs (branches, workers, scheduled runs)",
    required: true,
};
/// The R2 bucket files live in.
pub const FILES: Binding = Binding {
    name: "FILES",
    kind: BindingKind::R2,
    purpose: "the R2 bucket files sent and received are kept in",
    required: false,
};
/// Workers AI: `workers-ai/…` models and embeddings.
pub const AI: Binding = Binding {
    name: "AI",
    kind: BindingKind::Ai,
    purpose: "Workers AI, for `workers-ai/…` models and embeddings",
    required: false,
};
/// The Vectorize index of memories (`VECTOR_BACKEND = "vectorize"`).
pub const VECTORS: Binding = Binding {
    name: "VECTORS",
    kind: BindingKind::Vectorize,
    purpose: "the Vectorize index of memories (VECTOR_BACKEND = \"vectorize\")",
    required: false,
};

/// Every binding the Worker uses, in the order `/api/status` lists them.
/// Browser Rendering: the pages workers `browse` (a local Chrome under `wrangler dev`).
pub const BROWSER: Binding = Binding {
    name: "BROWSER",
    kind: BindingKind::Browser,
    purpose: "Browser Rendering (the browse tool of workers)",
    required: false,
};

pub const ALL: [Binding; 9] = [DATABASE, CHANNEL, GATEWAY, SIGN_IN, JOBS, FILES, AI, VECTORS, BROWSER];

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
        for line in wrangler.lines().map(str::trim).filter(|line| !line.starts_with('#')) {
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
        assert_eq!(declared(include_str!("../wrangler.toml")), listed);
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
