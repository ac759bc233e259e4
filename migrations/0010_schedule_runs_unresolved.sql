-- A job's unresolved run (claimed, no outcome yet) holds back its next run, so
-- every claim asks for it; this index answers without reading the job's whole
-- run history (a job every minute has 1,440 runs a day).
CREATE INDEX IF NOT EXISTS schedule_runs_unresolved ON schedule_runs (schedule_id, due_at) WHERE status = 'claimed';
