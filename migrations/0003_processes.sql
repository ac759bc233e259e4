-- Workers rest here between their segments: `run` is the whole run as JSON
-- (task, state, conversation with the model, finished steps); `pending` holds
-- side effects decided but not yet confirmed done (a report to the channel,
-- the next segment's job), so a redelivered job finishes them instead of
-- running the segment again. `cancelled` is set only by the channel.
CREATE TABLE IF NOT EXISTS workers (
    id TEXT PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'running',
    run TEXT,
    pending TEXT,
    cancelled INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS workers_by_conversation ON workers (conversation_key, updated_at);

-- The shared task list that branches and workers keep.
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_key TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'todo',
    note TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS tasks_by_conversation ON tasks (conversation_key, status);

-- Token usage of the background processes, per conversation and process type
-- (the channel's own usage lives in its Durable Object).
CREATE TABLE IF NOT EXISTS usage (
    conversation_key TEXT NOT NULL,
    process TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_key, process)
);
