-- The task list becomes the task board: approval, priorities, subtasks, the
-- worker bound to a task, attempts, and when it was approved and completed.
ALTER TABLE tasks ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN priority TEXT NOT NULL DEFAULT 'medium';
ALTER TABLE tasks ADD COLUMN subtasks TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tasks ADD COLUMN worker_id TEXT;
ALTER TABLE tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN approved_at INTEGER;
ALTER TABLE tasks ADD COLUMN completed_at INTEGER;

-- The old list's statuses: to-dos wait in the backlog; unbound work there too.
UPDATE tasks SET status = 'backlog' WHERE status IN ('todo', 'in_progress');

CREATE INDEX IF NOT EXISTS tasks_ready ON tasks (status, created_at);
CREATE INDEX IF NOT EXISTS tasks_by_worker ON tasks (worker_id);
